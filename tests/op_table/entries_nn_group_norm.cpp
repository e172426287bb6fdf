// Op-table entries: group_norm and group_norm_backward (its gradient), against
// naive loops.
#include <cmath>
#include <optional>
#include <string>
#include <tuple>

#include "ops/nn_backward.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using Sizes = std::vector<int64_t>;

// An input shape and layout split into `groups`, with or without the per-channel
// weight (and, for group_norm, bias).
struct GroupNormCase {
  Sizes input;
  int64_t groups;
  Layout layout;
  bool weight;
};

// ---- group_norm ----------------------------------------------------------------------

std::vector<Sample> group_norm_samples(ScalarType dtype) {
  using L = Layout;
  static const std::vector<GroupNormCase> cases{
      {{2, 6, 5}, 3, L::Contiguous, true},    {{2, 6, 5}, 1, L::Contiguous, false},
      {{2, 4, 3, 3}, 2, L::Contiguous, true}, {{3, 4}, 4, L::Contiguous, true},
      {{2, 4, 3, 3}, 4, L::Transposed, true}, {{2, 6, 4}, 2, L::Sliced, false},
  };
  std::vector<Sample> samples;
  for (const GroupNormCase& c : cases) {
    std::vector<Tensor> inputs{make_tensor(c.input, dtype, c.layout, -2, 2, 1)};
    if (c.weight) {
      inputs.push_back(make_tensor({c.input[1]}, dtype, 0.5, 1.5, 2));
      inputs.push_back(make_tensor({c.input[1]}, dtype, -1, 1, 3));
    }
    samples.push_back({ShapeCase{c.input, c.layout}.description() + " in " +
                           std::to_string(c.groups) + " groups" + (c.weight ? " affine" : ""),
                       inputs,
                       {IValue(c.groups), IValue(1e-5)}});
  }
  return samples;
}

Tensor group_norm_reference(const std::vector<Tensor>& in, int64_t groups, double eps) {
  const HostArray x = HostArray::of(in[0]);
  const int64_t n = x.sizes[0], channels = x.sizes[1], p = positions(x.sizes);
  const int64_t per_group = channels / groups;
  std::vector<double> out(x.values.size());
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t start = (s * channels + g * per_group) * p, count = per_group * p;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < count; ++i) mean += x.values[start + i] / count;
      for (int64_t i = 0; i < count; ++i) {
        var += (x.values[start + i] - mean) * (x.values[start + i] - mean) / count;
      }
      for (int64_t i = 0; i < count; ++i) {
        const int64_t c = g * per_group + i / p;
        double y = (x.values[start + i] - mean) / std::sqrt(var + eps);
        if (in.size() > 1) y = y * HostArray::of(in[1]).values[c] + HostArray::of(in[2]).values[c];
        out[start + i] = y;
      }
    }
  }
  return from_values(out, x.sizes, in[0].dtype());
}

// ---- group_norm_backward -------------------------------------------------------------

// Inputs: grad_output, input, then the weight when there is one. Args: num_groups, eps.
std::vector<Sample> group_norm_backward_samples(ScalarType dtype) {
  using L = Layout;
  static const std::vector<GroupNormCase> cases{
      {{2, 6, 5}, 3, L::Contiguous, true}, {{2, 4, 3, 3}, 2, L::Contiguous, false},
      {{3, 6}, 2, L::Contiguous, true},    {{2, 4, 3, 3}, 4, L::Transposed, true},
      {{2, 6, 4}, 1, L::Sliced, true},     {{0, 4, 3}, 2, L::Contiguous, true},
      {{2, 4, 0}, 2, L::Contiguous, true},
  };
  std::vector<Sample> samples;
  for (const GroupNormCase& c : cases) {
    std::vector<Tensor> inputs{make_tensor(c.input, dtype, -1, 1, 4),
                               make_tensor(c.input, dtype, c.layout, -2, 2, 1)};
    if (c.weight) inputs.push_back(make_tensor({c.input[1]}, dtype, 0.5, 1.5, 2));
    samples.push_back({ShapeCase{c.input, c.layout}.description() + " in " +
                           std::to_string(c.groups) + " groups" +
                           (c.weight ? " with a weight" : ""),
                       inputs,
                       {IValue(c.groups), IValue(1e-5)}});
  }
  return samples;
}

// Per row (a sample's group), the Jacobian of x^ = (x - mean) / sqrt(var + eps) as
// a matrix, applied (transposed) to grad_output * weight; and per sample and
// channel the sums over positions of grad_output * x^ and of grad_output.
std::vector<Tensor> group_norm_backward_reference(const std::vector<Tensor>& in, int64_t groups,
                                                  double eps) {
  const HostArray g = HostArray::of(in[0]), x = HostArray::of(in[1]);
  const int64_t n = x.sizes[0], channels = x.sizes[1], p = positions(x.sizes);
  const int64_t per_group = channels / groups, count = per_group * p;
  std::vector<double> dx(x.values.size()), dw(n * channels, 0.0), db(n * channels, 0.0);
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t grp = 0; grp < groups; ++grp) {
      const int64_t start = (s * channels + grp * per_group) * p;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < count; ++i) mean += x.values[start + i] / count;
      for (int64_t i = 0; i < count; ++i) {
        var += (x.values[start + i] - mean) * (x.values[start + i] - mean) / count;
      }
      const double rstd = 1 / std::sqrt(var + eps);
      std::vector<double> xhat(count), h(count);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t c = grp * per_group + i / p;
        xhat[i] = (x.values[start + i] - mean) * rstd;
        h[i] = g.values[start + i] * (in.size() > 2 ? HostArray::of(in[2]).values[c] : 1.0);
        dw[s * channels + c] += g.values[start + i] * xhat[i];
        db[s * channels + c] += g.values[start + i];
      }
      for (int64_t j = 0; j < count; ++j) {
        double sum = 0;
        for (int64_t i = 0; i < count; ++i) {
          sum += h[i] * ((i == j ? 1.0 : 0.0) - 1.0 / count - xhat[i] * xhat[j] / count) * rstd;
        }
        dx[start + j] = sum;
      }
    }
  }
  const ScalarType dtype = in[0].dtype();
  return {from_values(dx, x.sizes, dtype), from_values(dw, {n, channels}, dtype),
          from_values(db, {n, channels}, dtype)};
}

}  // namespace

STRATA_OP_INFOS(nn_group_norm) {
  std::vector<OpInfo> infos;
  infos.push_back(floating_op_info(
      "nn::group_norm", group_norm_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{nn::group_norm(in[0], a[0].to_int(), input_or_none(in, 1),
                                                  input_or_none(in, 2), a[1].to_double())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{group_norm_reference(in, a[0].to_int(), a[1].to_double())};
      }));
  infos.back().tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};
  infos.push_back(floating_op_info(
      "nn::group_norm_backward", group_norm_backward_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        const auto [dx, dw, db] = nn::group_norm_backward(in[0], in[1], a[0].to_int(),
                                                          input_or_none(in, 2), a[1].to_double());
        return std::vector<Tensor>{dx, dw, db};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return group_norm_backward_reference(in, a[0].to_int(), a[1].to_double());
      }));
  infos.back().tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};
  return infos;
}

}  // namespace strata::testing
