// Op-table entries: 2-D convolution and pooling, forward and backward ops, against
// naive window loops (the backward references are the adjoint loops).
#include <optional>

#include "ops/nn_backward.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using Sizes = std::vector<int64_t>;

int64_t pick(const Sizes& pair, size_t i) { return pair.size() == 1 ? pair[0] : pair[i]; }

int64_t numel(const Sizes& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// ---- convolution ---------------------------------------------------------------------

struct ConvCase {
  std::string description;
  Sizes input, weight, stride, padding, dilation;
  int64_t groups;
  bool bias;
  Layout layout = Layout::Contiguous;  // of the input
};

const std::vector<ConvCase>& conv_cases() {
  using L = Layout;
  static const std::vector<ConvCase> cases{
      {"3x3", {2, 3, 5, 5}, {4, 3, 3, 3}, {1}, {0}, {1}, 1, true},
      {"stride 2 padding 1 dilation 2 groups 2",
       {2, 4, 7, 6},
       {6, 2, 3, 2},
       {2},
       {1},
       {2},
       2,
       true},
      {"stride 2 padding 1 dilation 2 groups 2, no bias",
       {2, 4, 7, 6},
       {6, 2, 3, 2},
       {2},
       {1},
       {2},
       2,
       false},
      {"stride (2, 1) padding (0, 2) dilation (1, 2)",
       {1, 2, 6, 5},
       {3, 2, 2, 3},
       {2, 1},
       {0, 2},
       {1, 2},
       1,
       true},
      // Column rows longer than the kernel's 32-byte copy blocks, with and without padding.
      {"rows of 13, padding 1", {1, 2, 3, 13}, {3, 2, 3, 3}, {1}, {1}, {1}, 1, true},
      {"rows of 18", {2, 1, 3, 20}, {2, 1, 2, 3}, {1}, {0}, {1}, 1, false},
      {"1x1", {2, 3, 4, 5}, {5, 3, 1, 1}, {1}, {0}, {1}, 1, true},
      {"1x1 stride 2, no bias", {2, 3, 4, 5}, {2, 3, 1, 1}, {2}, {0}, {1}, 1, false},
      {"1x1 groups 3", {1, 3, 3, 3}, {6, 1, 1, 1}, {1}, {0}, {1}, 3, true},
      {"kernel as large as the padded input", {1, 1, 3, 3}, {2, 1, 5, 5}, {1}, {1}, {1}, 1, true},
      {"transposed input", {2, 3, 5, 4}, {2, 3, 3, 2}, {1}, {1}, {1}, 1, true, L::Transposed},
      {"sliced input, stride 3", {1, 2, 6, 7}, {2, 2, 2, 2}, {3}, {1}, {1}, 1, true, L::Sliced},
      {"1x1 sliced input", {2, 3, 3, 4}, {4, 3, 1, 1}, {1}, {0}, {1}, 1, false, L::Sliced},
      {"empty batch", {0, 3, 5, 5}, {4, 3, 3, 3}, {1}, {0}, {1}, 1, true},
      // Enough work per image for the parallel loops over the batch.
      {"batch 8 of 8x20x20, parallel", {8, 8, 20, 20}, {16, 8, 3, 3}, {1}, {1}, {1}, 1, true},
  };
  return cases;
}

struct ConvShape {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh = 0, ow = 0;
  Sizes output() const { return {n, o, oh, ow}; }
};

ConvShape conv_shape(const Sizes& input, const Sizes& weight, const Stack& args) {
  const Sizes &stride = args[0].to_int_list(), &padding = args[1].to_int_list(),
              &dilation = args[2].to_int_list();
  ConvShape s{.n = input[0],
              .c = input[1],
              .h = input[2],
              .w = input[3],
              .o = weight[0],
              .kh = weight[2],
              .kw = weight[3],
              .sh = pick(stride, 0),
              .sw = pick(stride, 1),  //
              .ph = pick(padding, 0),
              .pw = pick(padding, 1),  //
              .dh = pick(dilation, 0),
              .dw = pick(dilation, 1),  //
              .groups = args[3].to_int()};
  s.oh = (s.h + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  s.ow = (s.w + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  return s;
}

// Calls f(output, input, weight) with the flat positions of every product term of the
// convolution whose input pixel lies inside the image: the 7-deep loop.
template <class F>
void for_each_conv_term(const ConvShape& s, F&& f) {
  const int64_t cg = s.c / s.groups, og = s.o / s.groups;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.o; ++o)
      for (int64_t oh = 0; oh < s.oh; ++oh)
        for (int64_t ow = 0; ow < s.ow; ++ow)
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t kh = 0; kh < s.kh; ++kh)
              for (int64_t kw = 0; kw < s.kw; ++kw) {
                const int64_t ih = oh * s.sh - s.ph + kh * s.dh, iw = ow * s.sw - s.pw + kw * s.dw;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                const int64_t c = (o / og) * cg + ci;
                f(((n * s.o + o) * s.oh + oh) * s.ow + ow, ((n * s.c + c) * s.h + ih) * s.w + iw,
                  ((o * cg + ci) * s.kh + kh) * s.kw + kw);
              }
}

Stack conv_args(const ConvCase& c) {
  return {IValue(c.stride), IValue(c.padding), IValue(c.dilation), IValue(c.groups)};
}

std::vector<Sample> conv2d_samples(ScalarType dtype) {
  std::vector<Sample> samples;
  for (const ConvCase& c : conv_cases()) {
    std::vector<Tensor> inputs{make_tensor(c.input, dtype, c.layout, -2, 2, 1),
                               make_tensor(c.weight, dtype, Layout::Contiguous, -1, 1, 2)};
    if (c.bias) inputs.push_back(make_tensor({c.weight[0]}, dtype, -1, 1, 3));
    samples.push_back({c.description, inputs, conv_args(c)});
  }
  return samples;
}

// Samples of a backward op: grad_output and the other tensor operand (the weight
// for the input gradient, the input for the weight gradient), then the sizes of
// the gradient's tensor and the conv arguments.
enum class ConvGrad { Input, Weight };
std::vector<Sample> conv2d_backward_samples(ScalarType dtype, ConvGrad grad) {
  std::vector<Sample> samples;
  for (const ConvCase& c : conv_cases()) {
    Stack args = conv_args(c);
    const ConvShape s = conv_shape(c.input, c.weight, args);
    const bool of_input = grad == ConvGrad::Input;
    args.insert(args.begin(), IValue(of_input ? c.input : c.weight));
    Tensor other = of_input ? make_tensor(c.weight, dtype, c.layout, -1, 1, 2)
                            : make_tensor(c.input, dtype, c.layout, -2, 2, 1);
    samples.push_back({c.description, {make_tensor(s.output(), dtype, -1, 1, 4), other}, args});
  }
  return samples;
}

std::vector<Sample> conv2d_backward_input_samples(ScalarType dtype) {
  return conv2d_backward_samples(dtype, ConvGrad::Input);
}

std::vector<Sample> conv2d_backward_weight_samples(ScalarType dtype) {
  return conv2d_backward_samples(dtype, ConvGrad::Weight);
}

// The conv arguments after a leading sizes argument (backward ops).
Stack drop_first(const Stack& args) { return Stack(args.begin() + 1, args.end()); }

OpInfo conv_entry(std::string name, std::function<std::vector<Sample>(ScalarType)> samples,
                  OpFunction op, OpFunction reference) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = floating_dtypes();
  info.samples = std::move(samples);
  info.op = std::move(op);
  info.reference = std::move(reference);
  // Sums of up to 50 products of float32 values rounded in a different order.
  info.tolerances[{Check::Forward, kFloat32}] = {1e-5, 1e-4};
  return info;
}

std::vector<OpInfo> conv_entries() {
  std::vector<OpInfo> infos;
  infos.push_back(conv_entry(
      "nn::conv2d", conv2d_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        const std::optional<Tensor> bias = in.size() > 2 ? std::optional(in[2]) : std::nullopt;
        return std::vector<Tensor>{nn::conv2d(in[0], in[1], bias, a[0].to_int_list(),
                                              a[1].to_int_list(), a[2].to_int_list(),
                                              a[3].to_int())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        const ConvShape s = conv_shape(in[0].sizes().vec(), in[1].sizes().vec(), a);
        const HostArray x = HostArray::of(in[0]), w = HostArray::of(in[1]);
        std::vector<double> out(static_cast<size_t>(numel(s.output())), 0.0);
        if (in.size() > 2) {
          const HostArray b = HostArray::of(in[2]);
          for (size_t i = 0; i < out.size(); ++i) out[i] = b.values[(i / (s.oh * s.ow)) % s.o];
        }
        for_each_conv_term(
            s, [&](int64_t o, int64_t i, int64_t k) { out[o] += x.values[i] * w.values[k]; });
        return std::vector<Tensor>{from_values(out, s.output(), in[0].dtype())};
      }));
  infos.push_back(conv_entry(
      "nn::conv2d_backward_input", conv2d_backward_input_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{nn::conv2d_backward_input(in[0], a[0].to_int_list(), in[1],
                                                             a[1].to_int_list(), a[2].to_int_list(),
                                                             a[3].to_int_list(), a[4].to_int())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        const Sizes& input_sizes = a[0].to_int_list();
        const ConvShape s = conv_shape(input_sizes, in[1].sizes().vec(), drop_first(a));
        const HostArray g = HostArray::of(in[0]), w = HostArray::of(in[1]);
        std::vector<double> grad(static_cast<size_t>(numel(input_sizes)), 0.0);
        for_each_conv_term(
            s, [&](int64_t o, int64_t i, int64_t k) { grad[i] += g.values[o] * w.values[k]; });
        return std::vector<Tensor>{from_values(grad, input_sizes, in[0].dtype())};
      }));
  infos.push_back(conv_entry(
      "nn::conv2d_backward_weight", conv2d_backward_weight_samples,
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{
            nn::conv2d_backward_weight(in[0], in[1], a[0].to_int_list(), a[1].to_int_list(),
                                       a[2].to_int_list(), a[3].to_int_list(), a[4].to_int())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        const Sizes& weight_sizes = a[0].to_int_list();
        const ConvShape s = conv_shape(in[1].sizes().vec(), weight_sizes, drop_first(a));
        const HostArray g = HostArray::of(in[0]), x = HostArray::of(in[1]);
        std::vector<double> grad(static_cast<size_t>(numel(weight_sizes)), 0.0);
        for_each_conv_term(
            s, [&](int64_t o, int64_t i, int64_t k) { grad[k] += g.values[o] * x.values[i]; });
        return std::vector<Tensor>{from_values(grad, weight_sizes, in[0].dtype())};
      }));
  // Each weight's gradient sums batch x output positions: 8 x 400 products of the
  // parallel sample, rounded in float32 in the GEMM's order (worst case near 3200 ulp
  // of the terms' magnitude, ~2e-4 for the sample's values).
  infos.back().tolerances[{Check::Forward, kFloat32}] = {5e-5, 1e-4};
  return infos;
}

// ---- pooling -------------------------------------------------------------------------

struct PoolCase {
  std::string description;
  Sizes input, kernel, stride, padding, dilation;
  Layout layout = Layout::Contiguous;
};

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> cases{
      {"kernel 2, default stride", {2, 3, 6, 6}, {2}, {}, {0}, {1}},
      {"kernel 3 stride 2 padding 1", {2, 2, 7, 6}, {3}, {2}, {1}, {1}},
      {"kernel (2, 3) stride (1, 2) padding (1, 0) dilation 2",
       {1, 2, 7, 8},
       {2, 3},
       {1, 2},
       {1, 0},
       {2}},
      {"3-D input, overlapping windows", {3, 5, 5}, {3}, {1}, {1}, {1}},
      {"kernel 1", {1, 2, 3, 4}, {1}, {}, {0}, {1}},
      {"transposed input", {2, 3, 6, 5}, {2}, {2}, {1}, {1}, Layout::Transposed},
      {"sliced input, dilation (2, 1)", {1, 2, 6, 5}, {2}, {1}, {0}, {2, 1}, Layout::Sliced},
      {"empty batch", {0, 2, 4, 4}, {2}, {}, {0}, {1}},
      {"128 planes, parallel", {8, 16, 32, 32}, {3}, {2}, {1}, {1}},
      // Odd sizes leave a row and a column outside every 2 x 2 window.
      {"kernel 2 stride 2 on odd sizes, parallel", {4, 32, 13, 11}, {2}, {2}, {0}, {1}},
      {"kernel 2 stride (1, 2), overlapping rows", {2, 3, 7, 8}, {2}, {1, 2}, {0}, {1}},
  };
  return cases;
}

struct PoolShape {
  int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, planes = 0, oh = 0, ow = 0;
  Sizes output = {};
};

PoolShape pool_shape(const Sizes& input, const Sizes& kernel, const Sizes& stride,
                     const Sizes& padding, const Sizes& dilation) {
  const Sizes& step = stride.empty() ? kernel : stride;
  PoolShape s{.h = input[input.size() - 2],
              .w = input.back(),
              .kh = pick(kernel, 0),
              .kw = pick(kernel, 1),
              .sh = pick(step, 0),
              .sw = pick(step, 1),
              .ph = pick(padding, 0),
              .pw = pick(padding, 1),
              .dh = pick(dilation, 0),
              .dw = pick(dilation, 1)};
  s.planes = numel(input) / (s.h * s.w);
  s.oh = (s.h + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  s.ow = (s.w + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  s.output = input;
  s.output[s.output.size() - 2] = s.oh;
  s.output.back() = s.ow;
  return s;
}

// Calls f(output, pixels) for each output position, with the flat positions of its
// window's pixels inside the image in row-major order.
template <class F>
void for_each_window(const PoolShape& s, F&& f) {
  for (int64_t p = 0; p < s.planes; ++p)
    for (int64_t oh = 0; oh < s.oh; ++oh)
      for (int64_t ow = 0; ow < s.ow; ++ow) {
        std::vector<int64_t> pixels;
        for (int64_t kh = 0; kh < s.kh; ++kh)
          for (int64_t kw = 0; kw < s.kw; ++kw) {
            const int64_t ih = oh * s.sh - s.ph + kh * s.dh, iw = ow * s.sw - s.pw + kw * s.dw;
            if (ih >= 0 && ih < s.h && iw >= 0 && iw < s.w) pixels.push_back(ih * s.w + iw);
          }
        f((p * s.oh + oh) * s.ow + ow, p * s.h * s.w, pixels);
      }
}

// Values and plane indices of the naive max pool (the first maximum wins ties).
std::pair<Tensor, Tensor> max_pool_reference(const Tensor& input, const PoolShape& s) {
  const HostArray x = HostArray::of(input);
  std::vector<double> values(static_cast<size_t>(numel(s.output))), indices(values.size());
  for_each_window(s, [&](int64_t o, int64_t plane, const std::vector<int64_t>& pixels) {
    int64_t best = pixels.front();
    for (int64_t pixel : pixels) {
      if (x.values[plane + pixel] > x.values[plane + best]) best = pixel;
    }
    values[o] = x.values[plane + best];
    indices[o] = static_cast<double>(best);
  });
  return {from_values(values, s.output, input.dtype()), from_values(indices, s.output, kInt64)};
}

PoolShape pool_shape_of(const Tensor& input, const Stack& a) {
  return pool_shape(input.sizes().vec(), a[0].to_int_list(), a[1].to_int_list(), a[2].to_int_list(),
                    a.size() > 3 ? a[3].to_int_list() : Sizes{1});
}

// A pooling input in c's layout holding the values -2 + 4 k / n, k = 0 .. n - 1, in a
// scrambled order. Max pooling has a kink wherever two values of a window tie; values
// this far apart keep gradcheck's finite differences (steps of 1e-6) off every kink,
// which random values of a large input do not (two of them can lie 1e-7 apart).
Tensor distinct_pool_input(const PoolCase& c, ScalarType dtype) {
  Tensor input = make_tensor(c.input, dtype, c.layout, -2, 2, 1);
  const auto n = static_cast<uint64_t>(numel(c.input));
  std::vector<double> values(n);
  // 2654435761 is a prime larger than any n here, so i -> i * 2654435761 mod n permutes.
  for (uint64_t i = 0; i < n; ++i) {
    values[i] = -2.0 + 4.0 * static_cast<double>(i * 2654435761ULL % n) / static_cast<double>(n);
  }
  input.copy_(from_values(values, c.input, dtype));
  return input;
}

// Samples for every case; avg pooling (no dilation) skips dilated cases. `with_grad`
// prepends a gradient of the output's shape to the inputs.
std::vector<Sample> pool_samples(ScalarType dtype, bool dilation, bool with_grad) {
  std::vector<Sample> samples;
  for (const PoolCase& c : pool_cases()) {
    if (!dilation && c.dilation != Sizes{1}) continue;
    std::vector<Tensor> inputs{distinct_pool_input(c, dtype)};
    if (with_grad) {
      const PoolShape s = pool_shape(c.input, c.kernel, c.stride, c.padding, c.dilation);
      inputs.insert(inputs.begin(), make_tensor(s.output, dtype, -1, 1, 5));
    }
    Stack args{IValue(c.kernel), IValue(c.stride), IValue(c.padding)};
    if (dilation) args.push_back(IValue(c.dilation));
    samples.push_back({c.description, inputs, args});
  }
  return samples;
}

std::vector<Sample> max_pool_backward_samples(ScalarType dtype) {
  std::vector<Sample> samples;
  for (Sample& sample : pool_samples(dtype, true, true)) {
    const Tensor indices =
        max_pool_reference(sample.inputs[1], pool_shape_of(sample.inputs[1], sample.args)).second;
    samples.push_back({sample.description, {sample.inputs[0], sample.inputs[1], indices}, {}});
  }
  return samples;
}

std::vector<OpInfo> pool_entries() {
  std::vector<OpInfo> infos;
  infos.push_back(floating_op_info(
      "nn::max_pool2d_with_indices", [](ScalarType t) { return pool_samples(t, true, false); },
      [](const std::vector<Tensor>& in, const Stack& a) {
        auto [values, indices] = nn::max_pool2d_with_indices(
            in[0], a[0].to_int_list(), a[1].to_int_list(), a[2].to_int_list(), a[3].to_int_list());
        return std::vector<Tensor>{values, indices};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        auto [values, indices] = max_pool_reference(in[0], pool_shape_of(in[0], a));
        return std::vector<Tensor>{values, indices};
      }));
  infos.push_back(floating_op_info(
      "nn::max_pool2d", [](ScalarType t) { return pool_samples(t, true, false); },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{nn::max_pool2d(in[0], a[0].to_int_list(), a[1].to_int_list(),
                                                  a[2].to_int_list(), a[3].to_int_list())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{max_pool_reference(in[0], pool_shape_of(in[0], a)).first};
      }));
  infos.push_back(floating_op_info(
      "nn::max_pool2d_backward", max_pool_backward_samples,
      [](const std::vector<Tensor>& in, const Stack&) {
        return std::vector<Tensor>{nn::max_pool2d_backward(in[0], in[1], in[2])};
      },
      [](const std::vector<Tensor>& in, const Stack&) {
        const HostArray g = HostArray::of(in[0]), indices = HostArray::of(in[2]);
        const Sizes sizes = in[1].sizes().vec(), out_sizes = in[0].sizes().vec();
        const int64_t plane = sizes[sizes.size() - 2] * sizes.back();
        const int64_t out_plane = out_sizes[out_sizes.size() - 2] * out_sizes.back();
        std::vector<double> grad(static_cast<size_t>(numel(sizes)), 0.0);
        for (int64_t o = 0; o < g.numel(); ++o) {
          grad[(o / out_plane) * plane + static_cast<int64_t>(indices.values[o])] += g.values[o];
        }
        return std::vector<Tensor>{from_values(grad, sizes, in[0].dtype())};
      }));
  infos.push_back(floating_op_info(
      "nn::avg_pool2d", [](ScalarType t) { return pool_samples(t, false, false); },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{
            nn::avg_pool2d(in[0], a[0].to_int_list(), a[1].to_int_list(), a[2].to_int_list())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        const PoolShape s = pool_shape_of(in[0], a);
        const HostArray x = HostArray::of(in[0]);
        std::vector<double> out(static_cast<size_t>(numel(s.output)));
        for_each_window(s, [&](int64_t o, int64_t plane, const std::vector<int64_t>& pixels) {
          for (int64_t pixel : pixels) out[o] += x.values[plane + pixel];
          out[o] /= static_cast<double>(s.kh * s.kw);  // padding counts
        });
        return std::vector<Tensor>{from_values(out, s.output, in[0].dtype())};
      }));
  infos.push_back(floating_op_info(
      "nn::avg_pool2d_backward", [](ScalarType t) { return pool_samples(t, false, true); },
      [](const std::vector<Tensor>& in, const Stack& a) {
        return std::vector<Tensor>{nn::avg_pool2d_backward(in[0], in[1], a[0].to_int_list(),
                                                           a[1].to_int_list(), a[2].to_int_list())};
      },
      [](const std::vector<Tensor>& in, const Stack& a) {
        const PoolShape s = pool_shape_of(in[1], a);
        const HostArray g = HostArray::of(in[0]);
        std::vector<double> grad(static_cast<size_t>(in[1].numel()), 0.0);
        for_each_window(s, [&](int64_t o, int64_t plane, const std::vector<int64_t>& pixels) {
          for (int64_t pixel : pixels) grad[plane + pixel] += g.values[o] / (s.kh * s.kw);
        });
        return std::vector<Tensor>{from_values(grad, in[1].sizes().vec(), in[0].dtype())};
      }));
  return infos;
}

STRATA_OP_INFOS(nn_conv_pool) {
  std::vector<OpInfo> infos = conv_entries();
  for (OpInfo& info : pool_entries()) infos.push_back(std::move(info));
  return infos;
}

}  // namespace
}  // namespace strata::testing
