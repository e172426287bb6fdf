// FlopCounter: closed forms for an MLP, counts under grad and vmap(grad), the table.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <map>
#include <string>

#include "tests/test_support.h"

namespace strata {
namespace {

using Params = std::map<std::string, Tensor>;

struct Mlp {
  Generator gen{5};
  Params p{{"w1", randn({128, 784}, gen) * 0.05},
           {"b1", randn({128}, gen) * 0.1},
           {"w2", randn({10, 128}, gen) * 0.1},
           {"b2", randn({10}, gen) * 0.1}};
  static Tensor forward(const Params& p, const Tensor& x) {
    return nn::linear(nn::linear(x, p.at("w1"), p.at("b1")).relu(), p.at("w2"), p.at("b2"));
  }
  static Tensor loss(const Params& p, const Tensor& x, const Tensor& y) {
    return nn::cross_entropy(forward(p, x), y);
  }
};

constexpr int64_t kIn = 784, kHidden = 128, kOut = 10;
// The two layers' products per input row (a multiply-add counts 2).
constexpr int64_t kProductsPerRow = 2 * (kIn * kHidden + kHidden * kOut);

template <class F>
std::shared_ptr<FlopCounter> count(F&& f) {
  auto flops = std::make_shared<FlopCounter>();
  const DispatchModeGuard guard(flops);
  f();
  return flops;
}

int64_t at(const std::map<std::string, int64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

TEST(FlopCounter, MlpForwardMatchesTheClosedForm) {
  Mlp mlp;
  const int64_t n = 32;
  const Tensor x = randn({n, kIn}, mlp.gen);
  auto flops = count([&] { Mlp::forward(mlp.p, x); });
  // Per row: the products, the bias adds of both layers, the relu.
  EXPECT_EQ(flops->total(), n * (kProductsPerRow + kHidden + kOut + kHidden));
  EXPECT_EQ(at(flops->by_op(), "strata::linear"), n * (kProductsPerRow + kHidden + kOut));
  EXPECT_EQ(at(flops->by_op(), "strata::relu"), n * kHidden);
  EXPECT_EQ(at(flops->calls(), "strata::linear"), 2);
}

TEST(FlopCounter, ForwardAndBackwardIsThreeTimesTheForwardProducts) {
  Mlp mlp;
  const int64_t n = 16;
  const Tensor x = randn({n, kIn}, mlp.gen);
  const Tensor y = randint(0, kOut, {n}, mlp.gen);
  auto flops = count([&] { grad<0, 1>(Mlp::loss)(mlp.p, x, y); });
  const auto by_op = flops->by_op();
  // Forward: the products inside linear; backward: the input and weight gradients
  // of both layers, two products per forward product.
  EXPECT_EQ(at(by_op, "strata::linear"), n * (kProductsPerRow + kHidden + kOut));
  EXPECT_EQ(at(by_op, "strata::mm") + at(by_op, "strata::bmm"), 2 * n * kProductsPerRow);
  const double products = static_cast<double>(at(by_op, "strata::linear") + at(by_op, "strata::mm"));
  EXPECT_NEAR(products / static_cast<double>(n * kProductsPerRow), 3.0, 0.01);
}

TEST(FlopCounter, VmapOfGradCountsBTimesOneSample) {
  Mlp mlp;
  const int64_t b = 8;
  const Tensor xs = randn({b, 4, kIn}, mlp.gen);
  const Tensor ys = randint(0, kOut, {b, 4}, mlp.gen);
  auto batched = count([&] { vmap(grad(Mlp::loss), {.in_dims = {none, 0, 0}})(mlp.p, xs, ys); });
  auto single = count([&] { grad(Mlp::loss)(mlp.p, xs.select(0, 0), ys.select(0, 0)); });
  const auto per_op = batched->by_op();
  const auto one = single->by_op();
  // The batching rules run the per-sample products as bmm and mm: the same FLOPs.
  auto products = [](const std::map<std::string, int64_t>& m) {
    return at(m, "strata::linear") + at(m, "strata::mm") + at(m, "strata::bmm");
  };
  EXPECT_EQ(products(per_op), b * products(one));
  EXPECT_EQ(at(per_op, "strata::relu_backward"), b * at(one, "strata::relu_backward"));
  EXPECT_EQ(at(per_op, "strata::log_softmax"), b * at(one, "strata::log_softmax"));
  // A few rules add bookkeeping arithmetic of their own (the loss's batched
  // mean); nothing is counted twice or left out.
  EXPECT_NEAR(static_cast<double>(batched->total()) / static_cast<double>(b * single->total()), 1.0,
              1e-4);
}

TEST(FlopCounter, ModePushedInsideATransformCountsWhatItSees) {
  const Tensor x = tensor({0.1, 0.2, 0.3, 0.4});
  std::shared_ptr<FlopCounter> flops;
  grad([&](const Tensor& v) {
    flops = count([&] { v.sin(); });
    return v.sum();
  })(x);
  EXPECT_EQ(at(flops->by_op(), "strata::sin"), 4);
  EXPECT_EQ(at(flops->calls(), "strata::sin"), 1);
}

TEST(FlopCounter, TableListsOpsCallsFlopsAndShare) {
  const Tensor a = ones({4, 5}, kFloat64);
  const Tensor m = ones({5, 3}, kFloat64);
  auto flops = count([&] { (a.mm(m) + 1.0).sum(); });
  EXPECT_EQ(at(flops->by_op(), "strata::mm"), 2 * 4 * 5 * 3);
  const std::string table = flops->to_string();
  for (const char* part : {"op", "calls", "FLOPs", "share", "strata::mm", "total", "100.0%"}) {
    EXPECT_NE(table.find(part), std::string::npos) << table;
  }
  // The largest row comes first.
  EXPECT_LT(table.find("strata::mm"), table.find("total"));
  flops->reset();
  EXPECT_EQ(flops->total(), 0);
}

}  // namespace
}  // namespace strata
