// Op-table entries: layer_norm_backward (the op layer_norm's gradient goes through), batch_norm
// (training without running statistics, evaluation with them; their in-place update is checked in
// tests/ops/nn_norm_attention_test.cpp), scaled_dot_product_attention and conv1d,
// against naive loops.
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

// ---- layer_norm_backward ---------------------------------------------------------------

// Inputs: grad_output, input, then the weight when there is one. Args:
// normalized_shape, eps.
std::vector<Sample> layer_norm_backward_samples(ScalarType dtype) {
  struct Case {
    Sizes input, normalized;
    Layout layout;
    bool weight;
    double eps;
  };
  using L = Layout;
  static const std::vector<Case> cases{
      {{3, 5}, {5}, L::Contiguous, true, 1e-5},   {{2, 3, 4}, {3, 4}, L::Contiguous, false, 1e-5},
      {{2, 3, 4}, {4}, L::Transposed, true, 0.1}, {{4}, {4}, L::Contiguous, false, 1e-5},
      {{0, 4}, {4}, L::Contiguous, true, 1e-5},   {{3, 4}, {4}, L::Expanded, true, 1e-5},
      {{2, 3, 4}, {4}, L::Sliced, false, 1e-5},   {{16, 300}, {300}, L::Contiguous, true, 1e-5},
  };
  std::vector<Sample> samples;
  for (const Case& c : cases) {
    std::vector<Tensor> inputs{make_tensor(c.input, dtype, -1, 1, 4),
                               make_tensor(c.input, dtype, c.layout, -2, 2, 1)};
    if (c.weight) inputs.push_back(make_tensor(c.normalized, dtype, 0.5, 1.5, 2));
    samples.push_back({ShapeCase{c.input, c.layout}.description() + " over " +
                           shape_string(c.normalized) + (c.weight ? " with a weight" : ""),
                       inputs,
                       {IValue(c.normalized), IValue(c.eps)}});
  }
  return samples;
}

// Per row of n values, the Jacobian of x^ = (x - mean) / sqrt(var + eps) as a
// matrix, d x^_i / d x_j = (delta_ij - 1 / n - x^_i x^_j / n) / sqrt(var + eps),
// applied (transposed) to grad_output * weight.
Tensor layer_norm_backward_reference(const std::vector<Tensor>& in, const Sizes& normalized,
                                     double eps) {
  const HostArray g = HostArray::of(in[0]), x = HostArray::of(in[1]);
  int64_t n = 1;
  for (int64_t s : normalized) n *= s;
  std::vector<double> out(x.values.size());
  for (int64_t start = 0; start < x.numel(); start += n) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x.values[start + i] / n;
    for (int64_t i = 0; i < n; ++i) {
      var += (x.values[start + i] - mean) * (x.values[start + i] - mean) / n;
    }
    const double rstd = 1 / std::sqrt(var + eps);
    std::vector<double> xhat(n), h(n);
    for (int64_t i = 0; i < n; ++i) {
      xhat[i] = (x.values[start + i] - mean) * rstd;
      h[i] = g.values[start + i] * (in.size() > 2 ? HostArray::of(in[2]).values[i] : 1.0);
    }
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        sum += h[i] * ((i == j ? 1.0 : 0.0) - 1.0 / n - xhat[i] * xhat[j] / n) * rstd;
      }
      out[start + j] = sum;
    }
  }
  return from_values(out, x.sizes, in[1].dtype());
}

// ---- batch_norm ----------------------------------------------------------------------

// Inputs: x, then running_mean and running_var in evaluation, then weight and bias
// when affine. Args: training, affine.
std::vector<Sample> batch_norm_samples(ScalarType dtype) {
  struct Case {
    Sizes input;
    bool training;
    bool affine;
    Layout layout;
  };
  using L = Layout;
  static const std::vector<Case> cases{
      {{4, 3}, true, true, L::Contiguous},       {{4, 3, 5}, true, false, L::Contiguous},
      {{2, 3, 2, 2}, true, true, L::Transposed}, {{4, 3, 5}, false, true, L::Contiguous},
      {{2, 3}, false, false, L::Contiguous},     {{2, 3, 4}, false, true, L::Sliced},
  };
  std::vector<Sample> samples;
  for (const Case& c : cases) {
    const int64_t channels = c.input[1];
    std::vector<Tensor> inputs;
    inputs.reserve(5);
    inputs.push_back(make_tensor(c.input, dtype, c.layout, -2, 2, 1));
    if (!c.training) {
      inputs.push_back(make_tensor({channels}, dtype, -0.5, 0.5, 2));
      inputs.push_back(make_tensor({channels}, dtype, 0.5, 1.5, 3));
    }
    if (c.affine) {
      inputs.push_back(make_tensor({channels}, dtype, 0.5, 1.5, 4));
      inputs.push_back(make_tensor({channels}, dtype, -1, 1, 5));
    }
    samples.push_back({ShapeCase{c.input, c.layout}.description() +
                           (c.training ? " training" : " evaluation") + (c.affine ? " affine" : ""),
                       inputs,
                       {IValue(c.training), IValue(c.affine)}});
  }
  return samples;
}

Tensor batch_norm_reference(const std::vector<Tensor>& in, bool training, bool affine) {
  constexpr double kEps = 1e-5;
  const HostArray x = HostArray::of(in[0]);
  const int64_t n = x.sizes[0], channels = x.sizes[1], p = positions(x.sizes);
  const size_t params = training ? 1 : 3;
  std::vector<double> out(x.values.size());
  for (int64_t c = 0; c < channels; ++c) {
    auto at = [&](int64_t s, int64_t i) { return (s * channels + c) * p + i; };
    double mean = 0, var = 0;
    if (training) {
      for (int64_t s = 0; s < n; ++s) {
        for (int64_t i = 0; i < p; ++i) mean += x.values[at(s, i)] / (n * p);
      }
      for (int64_t s = 0; s < n; ++s) {
        for (int64_t i = 0; i < p; ++i) {
          var += (x.values[at(s, i)] - mean) * (x.values[at(s, i)] - mean) / (n * p);
        }
      }
    } else {
      mean = HostArray::of(in[1]).values[c];
      var = HostArray::of(in[2]).values[c];
    }
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t i = 0; i < p; ++i) {
        double y = (x.values[at(s, i)] - mean) / std::sqrt(var + kEps);
        if (affine) {
          y = y * HostArray::of(in[params]).values[c] + HostArray::of(in[params + 1]).values[c];
        }
        out[at(s, i)] = y;
      }
    }
  }
  return from_values(out, x.sizes, in[0].dtype());
}

// ---- scaled_dot_product_attention ------------------------------------------------------

// Inputs: q [..., L, E], k [..., S, E], v [..., S, Ev], then the mask if any. Args:
// is_causal, and the mask's kind (0: none, 1: Bool, 2: additive).
std::vector<Sample> attention_samples(ScalarType dtype) {
  struct Case {
    Sizes lead;
    int64_t l, s, e, ev;
    int mask;  // 0 none, 1 Bool, 2 additive
    Sizes mask_sizes;
    bool causal;
  };
  static const std::vector<Case> cases{
      {{2, 3}, 4, 5, 3, 2, 0, {}, false},  {{2}, 4, 4, 3, 3, 0, {}, true},
      {{}, 3, 5, 2, 4, 1, {3, 5}, false},  {{2, 2}, 3, 4, 2, 2, 1, {2, 1, 3, 4}, false},
      {{2}, 3, 4, 2, 3, 2, {3, 4}, false}, {{1, 2}, 5, 5, 4, 2, 0, {}, true},
  };
  std::vector<Sample> samples;
  for (const Case& c : cases) {
    auto shape = [&](int64_t a, int64_t b) {
      Sizes sizes = c.lead;
      sizes.push_back(a);
      sizes.push_back(b);
      return sizes;
    };
    std::vector<Tensor> inputs{make_tensor(shape(c.l, c.e), dtype, -1, 1, 1),
                               make_tensor(shape(c.s, c.e), dtype, -1, 1, 2),
                               make_tensor(shape(c.s, c.ev), dtype, -1, 1, 3)};
    if (c.mask == 1) {
      // Every query keeps key 0, so no row of scores is all -inf.
      Tensor keep = make_tensor(c.mask_sizes, dtype, -1, 1, 4) > 0.0;
      inputs.push_back(keep.logical_or(arange(c.s) == 0));
    } else if (c.mask == 2) {
      inputs.push_back(make_tensor(c.mask_sizes, dtype, -1, 1, 4));
    }
    samples.push_back({"q " + shape_string(shape(c.l, c.e)) + " k " +
                           shape_string(shape(c.s, c.e)) +
                           (c.mask == 1   ? " bool mask"
                            : c.mask == 2 ? " additive mask"
                                          : "") +
                           (c.causal ? " causal" : ""),
                       inputs,
                       {IValue(c.causal)}});
  }
  return samples;
}

Tensor attention_reference(const std::vector<Tensor>& in, bool causal) {
  const HostArray q = HostArray::of(in[0]), k = HostArray::of(in[1]), v = HostArray::of(in[2]);
  const size_t rank = q.sizes.size();
  const int64_t l = q.sizes[rank - 2], e = q.sizes[rank - 1], s = k.sizes[rank - 2];
  const int64_t ev = v.sizes[rank - 1];
  const Sizes lead(q.sizes.begin(), q.sizes.end() - 2);
  std::optional<HostArray> mask;
  if (in.size() > 3) mask = HostArray::of(in[3]);
  const bool bool_mask = in.size() > 3 && in[3].dtype() == kBool;
  Sizes out_sizes = lead;
  out_sizes.push_back(l);
  out_sizes.push_back(ev);
  std::vector<double> out;
  int64_t b = 0;
  for_each_index(lead, [&](const std::vector<int64_t>& index) {
    for (int64_t i = 0; i < l; ++i) {
      std::vector<double> w(static_cast<size_t>(s));
      double top = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < s; ++j) {
        double score = 0;
        for (int64_t t = 0; t < e; ++t) {
          score += q.values[(b * l + i) * e + t] * k.values[(b * s + j) * e + t];
        }
        score /= std::sqrt(static_cast<double>(e));
        std::vector<int64_t> at = index;
        at.push_back(i);
        at.push_back(j);
        if (mask && bool_mask && mask->at_broadcast(at) == 0) {
          score = -std::numeric_limits<double>::infinity();
        } else if (mask && !bool_mask) {
          score += mask->at_broadcast(at);
        }
        if (causal && j > i) score = -std::numeric_limits<double>::infinity();
        w[j] = score;
        top = std::max(top, score);
      }
      double total = 0;
      for (double& x : w) total += (x = std::exp(x - top));
      for (int64_t t = 0; t < ev; ++t) {
        double y = 0;
        for (int64_t j = 0; j < s; ++j) y += w[j] / total * v.values[(b * s + j) * ev + t];
        out.push_back(y);
      }
    }
    ++b;
  });
  return from_values(out, out_sizes, in[0].dtype());
}

// ---- conv1d ----------------------------------------------------------------------------

// Args: stride, padding, dilation, groups.
std::vector<Sample> conv1d_samples(ScalarType dtype) {
  struct Case {
    Sizes input, weight;
    int64_t stride, padding, dilation, groups;
    bool bias;
  };
  static const std::vector<Case> cases{
      {{2, 3, 8}, {4, 3, 3}, 1, 0, 1, 1, true},
      {{2, 3, 8}, {4, 3, 3}, 2, 1, 1, 1, false},
      {{1, 4, 9}, {6, 2, 2}, 1, 2, 2, 2, true},
      {{3, 2, 5}, {2, 2, 1}, 1, 0, 1, 1, true},
  };
  std::vector<Sample> samples;
  for (const Case& c : cases) {
    std::vector<Tensor> inputs{make_tensor(c.input, dtype, -1, 1, 1),
                               make_tensor(c.weight, dtype, -1, 1, 2)};
    if (c.bias) inputs.push_back(make_tensor({c.weight[0]}, dtype, -1, 1, 3));
    samples.push_back(
        {shape_string(c.input) + " * " + shape_string(c.weight) + " stride " +
             std::to_string(c.stride) + " padding " + std::to_string(c.padding) + " dilation " +
             std::to_string(c.dilation) + " groups " + std::to_string(c.groups),
         inputs,
         {IValue(c.stride), IValue(c.padding), IValue(c.dilation), IValue(c.groups)}});
  }
  return samples;
}

Tensor conv1d_reference(const std::vector<Tensor>& in, const Stack& a) {
  const int64_t stride = a[0].to_int(), padding = a[1].to_int(), dilation = a[2].to_int();
  const int64_t groups = a[3].to_int();
  const HostArray x = HostArray::of(in[0]), w = HostArray::of(in[1]);
  const int64_t n = x.sizes[0], c_in = x.sizes[1], len = x.sizes[2];
  const int64_t c_out = w.sizes[0], c_group = w.sizes[1], k = w.sizes[2];
  const int64_t out_len = (len + 2 * padding - dilation * (k - 1) - 1) / stride + 1;
  const int64_t out_per_group = c_out / groups;
  std::vector<double> out;
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t o = 0; o < c_out; ++o) {
      const int64_t g = o / out_per_group;
      for (int64_t t = 0; t < out_len; ++t) {
        double y = in.size() > 2 ? HostArray::of(in[2]).values[o] : 0.0;
        for (int64_t c = 0; c < c_group; ++c) {
          for (int64_t j = 0; j < k; ++j) {
            const int64_t pos = t * stride - padding + j * dilation;
            if (pos < 0 || pos >= len) continue;
            y += w.values[(o * c_group + c) * k + j] *
                 x.values[(s * c_in + g * c_group + c) * len + pos];
          }
        }
        out.push_back(y);
      }
    }
  }
  return from_values(out, {n, c_out, out_len}, in[0].dtype());
}

}  // namespace

STRATA_OP_INFOS(nn_norm_attention) {
  std::vector<OpInfo> infos;
  infos.push_back(floating_op_info(
      "nn::layer_norm_backward", layer_norm_backward_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{nn::layer_norm_backward(in[0], in[1], a[0].to_int_list(),
                                                           input_or_none(in, 2), a[1].to_double())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{
            layer_norm_backward_reference(in, a[0].to_int_list(), a[1].to_double())};
      }));
  infos.back().tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};
  infos.push_back(floating_op_info(
      "nn::batch_norm", batch_norm_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        const bool training = a[0].to_bool();
        const size_t params = training ? 1 : 3;
        const std::optional<Tensor> mean = training ? std::nullopt : std::optional(in[1]);
        const std::optional<Tensor> var = training ? std::nullopt : std::optional(in[2]);
        return std::vector<Tensor>{nn::batch_norm(in[0], mean, var, input_or_none(in, params),
                                                  input_or_none(in, params + 1), training)};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{batch_norm_reference(in, a[0].to_bool(), a[1].to_bool())};
      }));
  infos.back().tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};
  infos.push_back(floating_op_info(
      "nn::scaled_dot_product_attention", attention_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{nn::scaled_dot_product_attention(
            in[0], in[1], in[2], input_or_none(in, 3), a[0].to_bool())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{attention_reference(in, a[0].to_bool())};
      }));
  infos.back().tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};
  infos.push_back(floating_op_info(
      "nn::conv1d", conv1d_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{
            nn::conv1d(in[0], in[1], input_or_none(in, 2), IntArrayRef(a[0].to_int()),
                       IntArrayRef(a[1].to_int()), IntArrayRef(a[2].to_int()), a[3].to_int())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{conv1d_reference(in, a)};
      }));
  infos.back().tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};
  return infos;
}

}  // namespace strata::testing
