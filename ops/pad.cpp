// nn::pad in constant mode: the op constant_pad_nd. The pad list is PyTorch's:
// (before, after) pairs from the last dim backwards; a negative amount crops.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/op_def.h"
#include "kernels/scalar_cast.h"
#include "ops/elementwise_kernels.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

constexpr char kPad[] = "strata::constant_pad_nd";
using PadSig = Tensor(const Tensor&, IntArrayRef, const Scalar&);

std::string list_string(IntArrayRef values) { return shape_string(values); }

// The padded sizes, after checking the pad list against self.
DimVector padded_sizes(const Tensor& self, IntArrayRef pad) {
  const int64_t pairs = static_cast<int64_t>(pad.size()) / 2;
  STRATA_CHECK(pad.size() % 2 == 0, kPad, "the pad list ", list_string(pad),
               " must have an even length: a (before, after) pair per dim");
  STRATA_CHECK(pairs <= self.dim(), kPad, "the pad list ", list_string(pad), " pads ", pairs,
               " dims but the input of shape ", shape_string(self.sizes()), " has ", self.dim());
  DimVector sizes(self.sizes());
  for (int64_t k = 0; k < pairs; ++k) {
    const size_t d = static_cast<size_t>(self.dim() - 1 - k);
    const int64_t before = pad[static_cast<size_t>(2 * k)],
                  after = pad[static_cast<size_t>(2 * k + 1)];
    // Amounts whose negation (the crop, the gradient's pad) or sum overflow are refused.
    int64_t size = 0;
    const bool overflows = before == INT64_MIN || after == INT64_MIN ||
                           __builtin_add_overflow(sizes[d], before, &size) ||
                           __builtin_add_overflow(size, after, &size);
    STRATA_CHECK(!overflows, kPad, "the pad list ", list_string(pad), " pads dim ", d,
                 " of the input of shape ", shape_string(self.sizes()), " past the int64 range");
    STRATA_CHECK(size >= 0, kPad, "the pad list ", list_string(pad), " crops dim ", d,
                 " of the input of shape ", shape_string(self.sizes()),
                 " to a negative size ", size);
    sizes[d] = size;
  }
  return sizes;
}

// A view of t's storage (t's own geometry, moved to `offset` and resized).
Tensor window(const Tensor& t, const DimVector& sizes, int64_t offset) {
  return Tensor(make_intrusive<TensorImpl>(t.impl()->storage(), t.dtype(), sizes, t.strides(),
                                           offset));
}

// One function for both backends: a fill and a copy, each on out's device.
Tensor constant_pad_nd_any(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  const DimVector sizes = padded_sizes(self, pad);
  // Checked here for both backends: casting the value is undefined behaviour otherwise.
  STRATA_CHECK(self.dtype() != kInt64 || !value.is_floating_point() ||
                   has_integer_equivalent<int64_t>(value.to_double()),
               kPad, "the fill value ", value, " has no Int64 equivalent (input of shape ",
               shape_string(self.sizes()), ")");
  Tensor out = make_empty_tensor(sizes, self.dtype(), self.device(), kPad);
  on_device::fill_kernel(out, value);
  // The part of self that stays: per padded dim, a negative pad skips elements of
  // self and a positive one starts later in out.
  DimVector kept(self.sizes());
  int64_t in_offset = self.storage_offset();
  int64_t out_offset = out.storage_offset();
  const int64_t pairs = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t k = 0; k < pairs; ++k) {
    const size_t d = static_cast<size_t>(self.dim() - 1 - k);
    const int64_t before = pad[static_cast<size_t>(2 * k)];
    const int64_t after = pad[static_cast<size_t>(2 * k + 1)];
    kept[d] = self.sizes()[d] - std::max<int64_t>(0, -before) - std::max<int64_t>(0, -after);
    if (kept[d] <= 0) return out;
    in_offset += std::max<int64_t>(0, -before) * self.strides()[d];
    out_offset += std::max<int64_t>(0, before) * out.strides()[d];
  }
  if (self.numel() > 0) on_device::copy_kernel(window(out, kept, out_offset),
                                             window(self, kept, in_offset));
  return out;
}

// ---- derivatives (Note [Derivative formulas]) ----
// Padding is linear in self (the constant is not a tensor): self's gradient is the
// gradient with the padding taken off again, which is the same op with the pads
// negated (what was cropped comes back as zeros).

std::vector<int64_t> negated(const std::vector<int64_t>& pad) {
  std::vector<int64_t> out(pad.size());
  for (size_t i = 0; i < pad.size(); ++i) out[i] = -pad[i];
  return out;
}

void pad_backward(autograd::BackwardContext& c) {
  c.set_grad(0, nn::pad(c.grad(), negated(c.int_list_arg(1))));
}

void pad_forward(autograd::ForwardContext& c) {
  c.set_tangent(0, nn::pad(c.tangent(0), c.int_list_arg(1)));
}

// ---- batching rule (Note [Batching rules]) ----
// The pad list reaches only a sample's last dims, so with the batch dim first the
// same list pads every sample.
Tensor pad_batched(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  const batching::VmapLevel at = batching::current_vmap_level(kPad);
  const batching::BatchedArg x = batching::unwrap(self, at.level);
  const batching::BelowThisLevel below;
  const Tensor value_tensor = x.batched() ? batching::batch_first(x) : self;
  STRATA_CHECK(static_cast<int64_t>(pad.size()) / 2 <= x.logical_dim(), kPad, "the pad list ",
               list_string(pad), " pads more dims than a sample has (", x.logical_dim(),
               ", inside vmap)");
  const Tensor out = STRATA_OP(kPad, "", PadSig).call(value_tensor, pad, value);
  return x.batched() ? batching::make_batched(out, 0, at.level) : out;
}

// ---- the row (Note [One op, one place]) ----

MetaList pad_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  return shape::single(padded_sizes(self, args[1].to_int_list()), self.dtype());
}

const OpFamily kPadOps("pad", {
    {.schema = "constant_pad_nd(Tensor self, int[] pad, Scalar value=0) -> Tensor",
     .cpu = &constant_pad_nd_any,
     .cuda = &constant_pad_nd_any,
     .derivative = autograd::derivative({.backward = &pad_backward, .forward = &pad_forward}),
     .batching = &pad_batched,
     .shape = &pad_shape,
     .flops = &flops::zero},
});

}  // namespace

namespace nn {

Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode,
           std::optional<double> value) {
  STRATA_CHECK(mode == "constant", "strata::nn::pad", "mode \"", mode,
               "\" is not supported (only \"constant\")");
  return STRATA_OP(kPad, "", PadSig).call(input, pad, Scalar(value.value_or(0.0)));
}

}  // namespace nn

}  // namespace strata
