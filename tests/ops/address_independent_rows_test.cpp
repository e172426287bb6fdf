// The fused CPU kernels that sum along rows (softmax, log_softmax, layer_norm,
// group_norm, the losses, dot), their gradients and the matrix products give the same bits for the same
// values wherever those lie: at any element offset inside a larger buffer, and in
// any row of a batch (Note [Sums do not depend on the address],
// kernels/cpu/fixed_order_fold.h). A sum that started its packets at an aligned
// address would fold a shifted row in another order and change the last bit.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ops/nn_backward.h"
#include "strata/strata.h"

namespace strata {
namespace {

using nn::Reduction;

const int64_t kLengths[] = {1, 7, 17, 63, 1000};
constexpr int64_t kOffsets = 16;  // every shift from a 64-byte boundary for Float32

// values copied into a larger buffer at `offset` elements: a contiguous view of
// values' shape whose data starts there. The buffer's other elements differ from
// every value, so that a kernel reading outside its row would show.
Tensor placed_at(const Tensor& values, int64_t offset) {
  const int64_t n = values.numel();
  const Tensor buffer = full({offset + n + kOffsets}, 1e6, values.dtype());
  const Tensor view = buffer.narrow(0, offset, n).view(values.sizes());
  view.copy_(values);
  return view;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(),
                     static_cast<size_t>(ca.numel()) * element_size(ca.dtype())) == 0;
}

Tensor values_like(IntArrayRef sizes, ScalarType dtype, uint64_t seed, double scale = 1.0) {
  Generator gen(seed);
  return (randn(sizes, gen, kFloat64) * scale).to(dtype);
}

// An op of several inputs, each result checked.
using Op = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// op's results for its inputs placed at offsets 0 .. kOffsets - 1 (each input at
// its own offset) must be the bits of the results at offset 0.
void expect_offsets_do_not_matter(const std::string& name, const std::vector<Tensor>& inputs,
                                  const Op& op) {
  std::vector<Tensor> at_zero;
  for (const Tensor& t : inputs) at_zero.push_back(placed_at(t, 0));
  const std::vector<Tensor> expected = op(at_zero);
  for (int64_t offset = 1; offset < kOffsets; ++offset) {
    std::vector<Tensor> shifted;
    for (size_t i = 0; i < inputs.size(); ++i) {
      shifted.push_back(
          placed_at(inputs[i], (offset * static_cast<int64_t>(2 * i + 1)) % kOffsets));
    }
    const std::vector<Tensor> got = op(shifted);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_TRUE(same_bits(got[k], expected[k]))
          << name << " result " << k << ", " << inputs[0].dtype() << " shape "
          << shape_string(inputs[0].sizes()) << ", input 0 at offset " << offset;
    }
  }
}

// Every row (index along dim 0) of each result must have the bits of row 0: for
// inputs whose rows along dim 0 are all equal.
void expect_rows_equal(const std::string& name, const std::vector<Tensor>& results,
                       IntArrayRef shape) {
  for (size_t k = 0; k < results.size(); ++k) {
    for (int64_t r = 1; r < results[k].sizes()[0]; ++r) {
      EXPECT_TRUE(same_bits(results[k].select(0, r), results[k].select(0, 0)))
          << name << " result " << k << ", " << results[k].dtype() << " shape "
          << shape_string(shape) << ", row " << r;
    }
  }
}

// rows copies of `row` stacked along a new dim 0.
Tensor repeated(const Tensor& row, int64_t rows) {
  DimVector sizes{rows};
  for (int64_t s : row.sizes()) sizes.push_back(s);
  return row.unsqueeze(0).expand(sizes).contiguous();
}

class AddressIndependentRows : public ::testing::TestWithParam<ScalarType> {};

TEST_P(AddressIndependentRows, SoftmaxAndItsGradient) {
  const ScalarType dtype = GetParam();
  for (int64_t n : kLengths) {
    for (bool log : {false, true}) {
      const std::string name = log ? "log_softmax" : "softmax";
      auto forward = [log](const Tensor& x, int64_t dim) {
        return log ? nn::log_softmax(x, dim) : nn::softmax(x, dim);
      };
      auto backward = [log](const Tensor& g, const Tensor& y, int64_t dim) {
        return log ? nn::log_softmax_backward(g, y, dim) : nn::softmax_backward(g, y, dim);
      };
      const Tensor x = values_like({n}, dtype, 1, 3.0), g = values_like({n}, dtype, 2);
      const Tensor y = forward(x, 0);
      expect_offsets_do_not_matter(
          name, {x}, [&](const auto& in) { return std::vector<Tensor>{forward(in[0], 0)}; });
      expect_offsets_do_not_matter(name + "_backward", {g, y}, [&](const auto& in) {
        return std::vector<Tensor>{backward(in[0], in[1], 0)};
      });
      // Rows of a batch start at every offset; the reduced dim innermost, then
      // outermost (a block of columns at a time).
      const Tensor xs = repeated(x, kOffsets), gs = repeated(g, kOffsets);
      const Tensor ys = forward(xs, 1);
      expect_rows_equal(name, {ys, backward(gs, ys, 1)}, xs.sizes());
      const Tensor xc = repeated(values_like({n, 5}, dtype, 3, 3.0), 3);
      const Tensor gc = repeated(values_like({n, 5}, dtype, 4), 3);
      const Tensor yc = forward(xc, 1);
      expect_rows_equal(name + " over columns", {yc, backward(gc, yc, 1)}, xc.sizes());
    }
  }
}

TEST_P(AddressIndependentRows, LayerNormAndItsGradient) {
  const ScalarType dtype = GetParam();
  for (int64_t n : kLengths) {
    const Tensor x = values_like({n}, dtype, 5, 2.0) + 3, g = values_like({n}, dtype, 6);
    const Tensor w = values_like({n}, dtype, 7), b = values_like({n}, dtype, 8);
    expect_offsets_do_not_matter("layer_norm", {x, w, b}, [&](const auto& in) {
      return std::vector<Tensor>{nn::layer_norm(in[0], {n}, in[1], in[2]),
                                 nn::layer_norm(in[0], {n})};
    });
    expect_offsets_do_not_matter("layer_norm_backward", {g, x, w}, [&](const auto& in) {
      return std::vector<Tensor>{nn::layer_norm_backward(in[0], in[1], {n}, in[2], 1e-5),
                                 nn::layer_norm_backward(in[0], in[1], {n}, std::nullopt, 1e-5)};
    });
    const Tensor xs = repeated(x, kOffsets), gs = repeated(g, kOffsets);
    expect_rows_equal(
        "layer_norm",
        {nn::layer_norm(xs, {n}, w, b), nn::layer_norm_backward(gs, xs, {n}, w, 1e-5)}, xs.sizes());
  }
}

TEST_P(AddressIndependentRows, GroupNormAndItsGradient) {
  const ScalarType dtype = GetParam();
  for (int64_t n : kLengths) {
    // [N, C, positions] = [2, 4, n] in 2 groups: rows of 2n values, channels of n.
    const Tensor x = values_like({2, 4, n}, dtype, 9, 2.0) - 1;
    const Tensor g = values_like({2, 4, n}, dtype, 10);
    const Tensor w = values_like({4}, dtype, 11), b = values_like({4}, dtype, 12);
    auto backward = [](const Tensor& grad, const Tensor& input, const std::optional<Tensor>& wt) {
      auto [dx, dw, db] = nn::group_norm_backward(grad, input, 2, wt, 1e-5);
      return std::vector<Tensor>{dx, dw, db};
    };
    expect_offsets_do_not_matter("group_norm", {x, w, b}, [&](const auto& in) {
      return std::vector<Tensor>{nn::group_norm(in[0], 2, in[1], in[2])};
    });
    expect_offsets_do_not_matter("group_norm_backward", {g, x, w},
                                 [&](const auto& in) { return backward(in[0], in[1], in[2]); });
    // [16, 4, n]: every sample the same.
    const Tensor xs = repeated(x.select(0, 0), kOffsets), gs = repeated(g.select(0, 0), kOffsets);
    std::vector<Tensor> results = backward(gs, xs, w);
    results.push_back(nn::group_norm(xs, 2, w, b));
    expect_rows_equal("group_norm", results, xs.sizes());
  }
}

TEST_P(AddressIndependentRows, Losses) {
  const ScalarType dtype = GetParam();
  for (int64_t n : kLengths) {
    const Tensor input = values_like({n}, dtype, 13), target = values_like({n}, dtype, 14);
    for (Reduction reduction : {Reduction::Mean, Reduction::Sum}) {
      expect_offsets_do_not_matter("mse_loss", {input, target}, [&](const auto& in) {
        return std::vector<Tensor>{nn::mse_loss(in[0], in[1], reduction)};
      });
      // A broadcast target takes the loss's other route (the squares formed first).
      const Tensor scalar_target = values_like({1}, dtype, 15);
      expect_offsets_do_not_matter(
          "mse_loss broadcast", {input, scalar_target}, [&](const auto& in) {
            return std::vector<Tensor>{nn::mse_loss(in[0], in[1].view({}), reduction)};
          });
      const Tensor logits = values_like({3, n}, dtype, 16, 3.0);
      const Tensor labels = tensor(std::vector<int64_t>{0, n - 1, n / 2}, {3});
      expect_offsets_do_not_matter("cross_entropy", {logits}, [&](const auto& in) {
        return std::vector<Tensor>{nn::cross_entropy(in[0], labels, reduction),
                                   nn::nll_loss(in[0], labels, std::nullopt, reduction)};
      });
    }
    // A batch of equal samples, whose log_softmax rows start at every offset: every
    // sample's loss the same.
    const Tensor logits = repeated(values_like({n}, dtype, 19, 3.0), kOffsets);
    const Tensor labels = full({kOffsets}, n / 2, kInt64);
    expect_rows_equal("cross_entropy per sample",
                      {nn::cross_entropy(logits, labels, Reduction::None)}, logits.sizes());
  }
}

TEST_P(AddressIndependentRows, Dot) {
  const ScalarType dtype = GetParam();
  for (int64_t n : kLengths) {
    expect_offsets_do_not_matter(
        "dot", {values_like({n}, dtype, 17), values_like({n}, dtype, 18)},
        [](const auto& in) { return std::vector<Tensor>{in[0].dot(in[1])}; });
  }
}

// The matrix products (the thin kernels, Eigen's and OpenBLAS's GEMM): a
// product's bits must not depend on where its operands lie either.
TEST_P(AddressIndependentRows, MatrixProducts) {
  const ScalarType dtype = GetParam();
  struct Shape {
    int64_t m, k, n;
  };
  // Small products (a register-tiled loop), thin ones (a short inner dim, few
  // rows, a long inner dim with few columns: Note [Thin products]), a layer's
  // x W^T, and a blocked GEMM (OpenBLAS or Eigen).
  for (const Shape& s : {Shape{1, 7, 5}, Shape{3, 17, 4}, Shape{5, 63, 9}, Shape{16, 1000, 3},
                         Shape{33, 64, 65}, Shape{2, 300, 130}, Shape{16, 676, 9},
                         Shape{32, 784, 128}, Shape{300, 100, 50}}) {
    const Tensor a = values_like({s.m, s.k}, dtype, 20), b = values_like({s.k, s.n}, dtype, 21);
    const Tensor bt = values_like({s.n, s.k}, dtype, 22), bias = values_like({s.n}, dtype, 23);
    const Tensor v = values_like({s.k}, dtype, 24);
    expect_offsets_do_not_matter("matmul", {a, b, bt, bias, v}, [](const auto& in) {
      return std::vector<Tensor>{in[0].matmul(in[1]),          in[0].matmul(in[2].t()),
                                 nn::linear(in[0], in[2], in[3]), in[4].matmul(in[1]),
                                 in[0].matmul(in[4]),          in[0].t().matmul(in[0])};
    });
    const Tensor batch_a = values_like({3, s.m, s.k}, dtype, 25);
    const Tensor batch_b = values_like({3, s.k, s.n}, dtype, 26);
    expect_offsets_do_not_matter("bmm", {batch_a, batch_b}, [](const auto& in) {
      return std::vector<Tensor>{in[0].matmul(in[1]), in[0].matmul(in[1].select(0, 1))};
    });
  }
}

INSTANTIATE_TEST_SUITE_P(FloatingTypes, AddressIndependentRows,
                         ::testing::Values(kFloat32, kFloat64),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace strata
