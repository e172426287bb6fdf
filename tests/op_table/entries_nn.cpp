// Op-table entries: softmax / log_softmax and their backward ops, losses, linear,
// embedding and layer_norm, against naive loops (convolution and pooling are in
// entries_nn_conv.cpp; dropout, which has no deterministic reference, is checked for
// its semantics in tests/ops/nn_errors_test.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ops/nn_backward.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using Sizes = std::vector<int64_t>;

// ---- softmax -------------------------------------------------------------------------

// Calls f(positions) for each lane of `sizes` along `dim`: the flat positions of its
// elements in order. A 0-dim tensor is one lane of one element.
template <class F>
void for_each_lane(const Sizes& sizes, int64_t dim, F&& f) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  if (rank == 0) return f(std::vector<int64_t>{0});
  const int64_t d = dim < 0 ? dim + rank : dim;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= sizes[i];
  for (int64_t i = d + 1; i < rank; ++i) inner *= sizes[i];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> lane;
      for (int64_t k = 0; k < sizes[d]; ++k) lane.push_back((o * sizes[d] + k) * inner + i);
      f(lane);
    }
  }
}

Tensor softmax_reference(const Tensor& x, int64_t dim, bool log) {
  const HostArray a = HostArray::of(x);
  std::vector<double> out(a.values.size());
  for_each_lane(a.sizes, dim, [&](const std::vector<int64_t>& lane) {
    double max = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t p : lane) max = std::max(max, a.values[p]);
    for (int64_t p : lane) sum += std::exp(a.values[p] - max);
    for (int64_t p : lane) {
      out[p] = log ? a.values[p] - max - std::log(sum) : std::exp(a.values[p] - max) / sum;
    }
  });
  return from_values(out, a.sizes, x.dtype());
}

Tensor softmax_backward_reference(const Tensor& grad, const Tensor& y, int64_t dim, bool log) {
  const HostArray g = HostArray::of(grad), out = HostArray::of(y);
  std::vector<double> result(g.values.size());
  for_each_lane(g.sizes, dim, [&](const std::vector<int64_t>& lane) {
    double sum = 0;
    for (int64_t p : lane) sum += log ? g.values[p] : g.values[p] * out.values[p];
    for (int64_t p : lane) {
      result[p] =
          log ? g.values[p] - std::exp(out.values[p]) * sum : out.values[p] * (g.values[p] - sum);
    }
  });
  return from_values(result, g.sizes, grad.dtype());
}

struct SoftmaxCase {
  Sizes sizes;
  Layout layout;
  int64_t dim;
  double low = -2, high = 2;
};

std::vector<Sample> softmax_samples(ScalarType dtype, bool backward, bool log) {
  using L = Layout;
  static const std::vector<SoftmaxCase> cases{
      {{3, 4}, L::Contiguous, 1},
      {{3, 4}, L::Contiguous, 0},
      {{3, 4}, L::Contiguous, -1},
      {{2, 3, 4}, L::Contiguous, 1},
      {{2, 3, 4}, L::Transposed, 0},
      {{3, 4}, L::Sliced, 1},
      {{3, 4}, L::Expanded, 0},
      {{}, L::Contiguous, 0},
      {{1}, L::Contiguous, 0},
      {{5}, L::Contiguous, -1},
      {{0, 3}, L::Contiguous, 1},
      {{3, 0}, L::Contiguous, 1},
      {{3, 700}, L::Contiguous, 0},
      {{4, 6}, L::Contiguous, 1, -1000, 1000},
      {{4, 6}, L::Contiguous, 0, -1000, 1000},
      // Enough work for the parallel loops.
      {{64, 600}, L::Contiguous, 1},
      {{64, 600}, L::Contiguous, 0},
  };
  std::vector<Sample> samples;
  for (const SoftmaxCase& c : cases) {
    std::string description =
        ShapeCase{c.sizes, c.layout}.description() + " dim " + std::to_string(c.dim);
    if (c.high > 100) description += " large values";
    Tensor x = make_tensor(c.sizes, dtype, c.layout, c.low, c.high, 1);
    std::vector<Tensor> inputs{x};
    if (backward) {
      inputs = {make_tensor(c.sizes, dtype, c.layout, -1, 1, 2), softmax_reference(x, c.dim, log)};
    }
    samples.push_back({description, inputs, {IValue(c.dim)}});
  }
  return samples;
}

std::vector<OpInfo> softmax_entries() {
  std::vector<OpInfo> infos;
  for (bool log : {false, true}) {
    const std::string name = log ? "nn::log_softmax" : "nn::softmax";
    infos.push_back(floating_op_info(
        name, [log](ScalarType t) { return softmax_samples(t, false, log); },
        [log](const std::vector<Tensor>& in, const Stack& a) {
          const int64_t dim = a[0].to_int();
          return std::vector<Tensor>{log ? in[0].log_softmax(dim) : in[0].softmax(dim)};
        },
        [log](const std::vector<Tensor>& in, const Stack& a) {
          return std::vector<Tensor>{softmax_reference(in[0], a[0].to_int(), log)};
        }));
    infos.push_back(floating_op_info(
        name + "_backward", [log](ScalarType t) { return softmax_samples(t, true, log); },
        [log](const std::vector<Tensor>& in, const Stack& a) {
          const int64_t dim = a[0].to_int();
          return std::vector<Tensor>{log ? nn::log_softmax_backward(in[0], in[1], dim)
                                         : nn::softmax_backward(in[0], in[1], dim)};
        },
        [log](const std::vector<Tensor>& in, const Stack& a) {
          return std::vector<Tensor>{softmax_backward_reference(in[0], in[1], a[0].to_int(), log)};
        }));
  }
  return infos;
}

// ---- losses --------------------------------------------------------------------------

constexpr int64_t kReductions[] = {0, 1, 2};
const char* reduction_name(int64_t r) { return r == 0 ? "none" : r == 1 ? "mean" : "sum"; }

// The loss of each sample reduced: none keeps them, mean divides the sum by `count`.
Tensor reduce_loss(const std::vector<double>& losses, double count, const Sizes& sizes,
                   int64_t reduction, ScalarType dtype) {
  if (reduction == 0) return from_values(losses, sizes, dtype);
  double sum = 0;
  for (double l : losses) sum += l;
  return from_values({reduction == 1 ? sum / count : sum}, {}, dtype);
}

// input [N, C] or [C], target [N] or [], weight [C] or none.
Tensor nll_loss_reference(const Tensor& input, const Tensor& target,
                          const std::optional<Tensor>& weight, int64_t reduction,
                          int64_t ignore_index) {
  const HostArray x = HostArray::of(input), t = HostArray::of(target);
  const int64_t classes = x.sizes.back();
  std::vector<double> losses;
  double weight_sum = 0;
  for (int64_t n = 0; n < t.numel(); ++n) {
    const int64_t label = static_cast<int64_t>(t.values[n]);
    const double w = label == ignore_index ? 0.0
                     : weight              ? HostArray::of(*weight).values[label]
                                           : 1.0;
    losses.push_back(label == ignore_index ? 0.0 : -w * x.values[n * classes + label]);
    weight_sum += w;
  }
  return reduce_loss(losses, weight_sum, t.sizes, reduction, input.dtype());
}

struct NllCase {
  std::string description;
  Sizes input;
  std::vector<double> target;
  bool weight;
  int64_t ignore_index;
};

std::vector<Sample> nll_loss_samples(ScalarType dtype, bool logits) {
  static const std::vector<NllCase> cases{
      {"[4, 3]", {4, 3}, {0, 2, 1, 2}, false, -100},
      {"[4, 3] weighted", {4, 3}, {0, 2, 1, 2}, true, -100},
      {"[5, 4] weighted, ignore_index 1", {5, 4}, {1, 3, 1, 0, 2}, true, 1},
      {"[3, 2] every target ignored", {3, 2}, {-1, -1, -1}, false, -1},
      {"[C] input, 0-dim target", {5}, {3}, true, -100},
      // One row, unweighted: the per-sample loss under vmap (a shortcut there).
      {"[C] input, 0-dim target, unweighted", {4}, {1}, false, -100},
      {"[1, 3]", {1, 3}, {2}, false, -100},
      {"[1, 3] target ignored", {1, 3}, {0}, false, 0},
      {"empty batch", {0, 3}, {}, false, -100},
  };
  std::vector<Sample> samples;
  for (const NllCase& c : cases) {
    if (logits && (c.weight || c.ignore_index != -100)) continue;
    for (int64_t reduction : kReductions) {
      const Sizes target_sizes = c.input.size() == 1 ? Sizes{} : Sizes{c.input[0]};
      std::vector<Tensor> inputs{make_tensor(c.input, dtype, logits ? -3 : -4, logits ? 3 : 0, 1),
                                 from_values(c.target, target_sizes, kInt64)};
      if (c.weight) inputs.push_back(make_tensor({c.input.back()}, dtype, 0.5, 2, 2));
      Stack args{IValue(reduction)};
      if (!logits) args.push_back(IValue(c.ignore_index));
      samples.push_back({c.description + " " + reduction_name(reduction), inputs, args});
    }
  }
  // A transposed (non-contiguous) input.
  Tensor transposed = make_tensor({3, 4}, dtype, Layout::Transposed, -4, 0, 3);
  Stack args{IValue(int64_t{1})};
  if (!logits) args.push_back(IValue(int64_t{-100}));
  samples.push_back(
      {"[3, 4] transposed mean", {transposed, from_values({3, 0, 2}, {3}, kInt64)}, args});
  return samples;
}

// input and target of any broadcastable shapes and layouts.
std::vector<Sample> mse_loss_samples(ScalarType dtype) {
  std::vector<Sample> samples;
  for (const ShapePairCase& c : binary_cases()) {
    for (int64_t reduction : kReductions) {
      samples.push_back({c.description() + " " + reduction_name(reduction),
                         {make_tensor(c.a.sizes, dtype, c.a.layout, -2, 2, 1),
                          make_tensor(c.b.sizes, dtype, c.b.layout, -2, 2, 2)},
                         {IValue(reduction)}});
    }
  }
  // Enough elements for several summation blocks, summed in parallel.
  samples.push_back(
      {"[300, 300] mean",
       {make_tensor({300, 300}, dtype, -2, 2, 1), make_tensor({300, 300}, dtype, -2, 2, 2)},
       {IValue(int64_t{1})}});
  return samples;
}

std::vector<OpInfo> loss_entries() {
  std::vector<OpInfo> infos;
  infos.push_back(floating_op_info(
      "nn::nll_loss", [](ScalarType t) { return nll_loss_samples(t, false); },
      [](const std::vector<Tensor>& in, const Stack& a) {
        const std::optional<Tensor> weight = in.size() > 2 ? std::optional(in[2]) : std::nullopt;
        return std::vector<Tensor>{nn::nll_loss(
            in[0], in[1], weight, static_cast<nn::Reduction>(a[0].to_int()), a[1].to_int())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        const std::optional<Tensor> weight = in.size() > 2 ? std::optional(in[2]) : std::nullopt;
        return std::vector<Tensor>{
            nll_loss_reference(in[0], in[1], weight, a[0].to_int(), a[1].to_int())};
      }));
  infos.push_back(floating_op_info(
      "nn::cross_entropy", [](ScalarType t) { return nll_loss_samples(t, true); },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{
            nn::cross_entropy(in[0], in[1], static_cast<nn::Reduction>(a[0].to_int()))};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        const Tensor log_probs = softmax_reference(in[0], -1, true);
        return std::vector<Tensor>{
            nll_loss_reference(log_probs, in[1], std::nullopt, a[0].to_int(), -100)};
      }));
  infos.push_back(floating_op_info(
      "nn::mse_loss", mse_loss_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{
            nn::mse_loss(in[0], in[1], static_cast<nn::Reduction>(a[0].to_int()))};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        const Tensor squares = map_binary(in[0], in[1], kFloat64,
                                          [](double x, double y) { return (x - y) * (x - y); });
        const HostArray s = HostArray::of(squares);
        return std::vector<Tensor>{reduce_loss(s.values, static_cast<double>(s.numel()), s.sizes,
                                               a[0].to_int(), in[0].dtype())};
      }));
  return infos;
}

// ---- linear, embedding, layer_norm ---------------------------------------------------

std::vector<Sample> linear_samples(ScalarType dtype) {
  struct Case {
    Sizes input, weight;
    Layout input_layout, weight_layout;
    bool bias;
  };
  using L = Layout;
  static const std::vector<Case> cases{
      {{4, 3}, {5, 3}, L::Contiguous, L::Contiguous, true},
      {{4, 3}, {5, 3}, L::Contiguous, L::Contiguous, false},
      {{3}, {2, 3}, L::Contiguous, L::Contiguous, true},
      {{2, 3, 4}, {5, 4}, L::Contiguous, L::Contiguous, true},
      {{4, 3}, {5, 3}, L::Transposed, L::Transposed, true},
      {{2, 3, 4}, {3, 4}, L::Sliced, L::Contiguous, false},
      {{0, 3}, {5, 3}, L::Contiguous, L::Contiguous, true},
      {{2, 0}, {3, 0}, L::Contiguous, L::Contiguous, true},
      {{300, 64}, {64, 64}, L::Contiguous, L::Contiguous, true},  // parallel row blocks
  };
  std::vector<Sample> samples;
  for (const Case& c : cases) {
    std::vector<Tensor> inputs{make_tensor(c.input, dtype, c.input_layout, -2, 2, 1),
                               make_tensor(c.weight, dtype, c.weight_layout, -1, 1, 2)};
    if (c.bias) inputs.push_back(make_tensor({c.weight[0]}, dtype, -1, 1, 3));
    std::string description = ShapeCase{c.input, c.input_layout}.description() + " x " +
                              ShapeCase{c.weight, c.weight_layout}.description() +
                              (c.bias ? " + bias" : "");
    samples.push_back({description, inputs, {}});
  }
  return samples;
}

Tensor linear_reference(const std::vector<Tensor>& in) {
  const HostArray x = HostArray::of(in[0]), w = HostArray::of(in[1]);
  const int64_t in_features = w.sizes[1], out_features = w.sizes[0];
  const std::vector<double> bias =
      in.size() > 2 ? HostArray::of(in[2]).values : std::vector<double>{};
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < x.sizes.size(); ++d) rows *= x.sizes[d];
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out_features; ++o) {
      double sum = bias.empty() ? 0.0 : bias[o];
      for (int64_t i = 0; i < in_features; ++i) {
        sum += x.values[r * in_features + i] * w.values[o * in_features + i];
      }
      out.push_back(sum);
    }
  }
  Sizes sizes = x.sizes;
  sizes.back() = out_features;
  return from_values(out, sizes, in[0].dtype());
}

std::vector<Sample> embedding_samples(ScalarType dtype) {
  std::vector<Sample> samples;
  const Tensor weight = make_tensor({5, 3}, dtype, -2, 2, 1);
  samples.push_back({"2-D indices", {weight, from_values({4, 0, 2, 2, 1, 4}, {2, 3}, kInt64)}, {}});
  samples.push_back({"1-D indices", {weight, from_values({3, 3, 0}, {3}, kInt64)}, {}});
  samples.push_back({"0-dim index", {weight, from_values({2}, {}, kInt64)}, {}});
  samples.push_back({"empty indices", {weight, from_values({}, {0}, kInt64)}, {}});
  samples.push_back({"transposed weight, transposed indices",
                     {make_tensor({5, 3}, dtype, Layout::Transposed, -2, 2, 1),
                      make_tensor({3, 2}, kInt64, Layout::Transposed, 0, 5, 2)},
                     {}});
  return samples;
}

Tensor embedding_reference(const Tensor& weight, const Tensor& indices) {
  const HostArray w = HostArray::of(weight), idx = HostArray::of(indices);
  const int64_t dim = w.sizes[1];
  std::vector<double> out;
  for (double i : idx.values) {
    for (int64_t d = 0; d < dim; ++d) out.push_back(w.values[static_cast<int64_t>(i) * dim + d]);
  }
  Sizes sizes = idx.sizes;
  sizes.push_back(dim);
  return from_values(out, sizes, weight.dtype());
}

std::vector<Sample> layer_norm_samples(ScalarType dtype) {
  struct Case {
    Sizes input, normalized;
    Layout layout;
    int parameters;  // 0: none, 1: weight, 2: weight and bias
    double eps;
  };
  using L = Layout;
  static const std::vector<Case> cases{
      {{3, 5}, {5}, L::Contiguous, 2, 1e-5},       {{3, 5}, {5}, L::Contiguous, 0, 1e-5},
      {{2, 3, 4}, {3, 4}, L::Contiguous, 2, 1e-5}, {{2, 3, 4}, {3, 4}, L::Transposed, 1, 0.1},
      {{4}, {4}, L::Contiguous, 2, 1e-5},          {{0, 4}, {4}, L::Contiguous, 2, 1e-5},
      {{3, 4}, {4}, L::Expanded, 2, 1e-5},         {{2, 3, 4}, {4}, L::Sliced, 2, 1e-5},
      {{64, 600}, {600}, L::Contiguous, 2, 1e-5},
  };
  std::vector<Sample> samples;
  for (const Case& c : cases) {
    std::vector<Tensor> inputs{make_tensor(c.input, dtype, c.layout, -2, 2, 1)};
    if (c.parameters > 0) inputs.push_back(make_tensor(c.normalized, dtype, 0.5, 1.5, 2));
    if (c.parameters > 1) inputs.push_back(make_tensor(c.normalized, dtype, -1, 1, 3));
    samples.push_back({ShapeCase{c.input, c.layout}.description() + " over " +
                           shape_string(c.normalized) + " with " + std::to_string(c.parameters) +
                           " parameters",
                       inputs,
                       {IValue(c.normalized), IValue(c.eps)}});
  }
  return samples;
}

Tensor layer_norm_reference(const std::vector<Tensor>& in, const Sizes& normalized, double eps) {
  const HostArray x = HostArray::of(in[0]);
  int64_t features = 1;
  for (int64_t s : normalized) features *= s;
  const std::vector<double> weight =
      in.size() > 1 ? HostArray::of(in[1]).values : std::vector<double>{};
  const std::vector<double> bias =
      in.size() > 2 ? HostArray::of(in[2]).values : std::vector<double>{};
  std::vector<double> out(x.values.size());
  for (int64_t start = 0; start < x.numel(); start += features) {
    double mean = 0, variance = 0;
    for (int64_t i = 0; i < features; ++i) mean += x.values[start + i] / features;
    for (int64_t i = 0; i < features; ++i) {
      variance += (x.values[start + i] - mean) * (x.values[start + i] - mean) / features;
    }
    for (int64_t i = 0; i < features; ++i) {
      double y = (x.values[start + i] - mean) / std::sqrt(variance + eps);
      if (in.size() > 1) y *= weight[i];
      if (in.size() > 2) y += bias[i];
      out[start + i] = y;
    }
  }
  return from_values(out, x.sizes, in[0].dtype());
}

std::vector<OpInfo> misc_entries() {
  std::vector<OpInfo> infos;
  infos.push_back(floating_op_info(
      "nn::linear", linear_samples,
      [](const std::vector<Tensor>& in, const Stack&) {
        const std::optional<Tensor> bias = in.size() > 2 ? std::optional(in[2]) : std::nullopt;
        return std::vector<Tensor>{nn::linear(in[0], in[1], bias)};
      },
      [](const std::vector<Tensor>& in, const Stack&) {
        return std::vector<Tensor>{linear_reference(in)};
      }));
  infos.back().tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};  // 64-term float sums
  infos.push_back(floating_op_info(
      "nn::embedding", embedding_samples,
      [](const std::vector<Tensor>& in, const Stack&) {
        return std::vector<Tensor>{nn::embedding(in[0], in[1])};
      },
      [](const std::vector<Tensor>& in, const Stack&) {
        return std::vector<Tensor>{embedding_reference(in[0], in[1])};
      }));
  infos.back().dtypes = all_dtypes();
  infos.push_back(floating_op_info(
      "nn::layer_norm", layer_norm_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        const std::optional<Tensor> weight = in.size() > 1 ? std::optional(in[1]) : std::nullopt;
        const std::optional<Tensor> bias = in.size() > 2 ? std::optional(in[2]) : std::nullopt;
        return std::vector<Tensor>{
            nn::layer_norm(in[0], a[0].to_int_list(), weight, bias, a[1].to_double())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{layer_norm_reference(in, a[0].to_int_list(), a[1].to_double())};
      }));
  infos.back().tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};  // divides by a float std
  return infos;
}

STRATA_OP_INFOS(nn) {
  std::vector<OpInfo> infos = softmax_entries();
  for (auto* family : {&loss_entries, &misc_entries}) {
    for (OpInfo& info : family()) infos.push_back(std::move(info));
  }
  return infos;
}

}  // namespace
}  // namespace strata::testing
