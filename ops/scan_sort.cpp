// Ops along the lanes of one dim: cumsum, sort and topk (kernels in
// kernels/cpu/scan_sort.cpp). sort is stable, as PyTorch's stable=True: equal
// values keep their order, so ties have one answer to compare against.
#include "kernels/cpu/scan_sort.h"

#include <tuple>
#include <utility>

#include "dispatcher/op_def.h"
#include "kernels/cuda/scan_sort.h"
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

using SortResult = std::tuple<Tensor, Tensor>;
using CumsumSig = Tensor(const Tensor&, int64_t);
using SortSig = SortResult(const Tensor&, int64_t, bool);
using TopkSig = SortResult(const Tensor&, int64_t, int64_t, bool, bool);

constexpr char kCumsum[] = "strata::cumsum";
constexpr char kSort[] = "strata::sort";
constexpr char kTopk[] = "strata::topk";

// The lanes of `t` along `dim` (checked; a 0-dim tensor is one lane of one).
cpu::Lanes lanes_of(const Tensor& t, int64_t dim, const char* op) {
  const int64_t d = wrap_dim(dim, t.dim(), op);
  cpu::Lanes lanes{1, 1, 1};
  for (int64_t i = 0; i < t.dim(); ++i) {
    const int64_t size = t.sizes()[i];
    if (i < d) lanes.outer *= size;
    if (i == d) lanes.size = size;
    if (i > d) lanes.inner *= size;
  }
  return lanes;
}

// cumsum sums integers and Bool as Int64, as PyTorch does.
ScalarType cumsum_dtype(const Tensor& self) {
  return is_floating_point(self.dtype()) ? self.dtype() : kInt64;
}

// A contiguous copy of t in `dtype` (t itself when it is one already).
Tensor contiguous_as(const Tensor& t, ScalarType dtype, const char* op) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = make_empty_tensor(t.sizes(), dtype, t.device(), op);
  on_device::copy_kernel(out, t);
  return out;
}

using CumsumKernel = void (*)(const Tensor&, const Tensor&, cpu::Lanes);
using SortKernel = void (*)(const Tensor&, const Tensor&, const Tensor&, cpu::Lanes, bool);

// One instance per backend's kernel (cpu:: or gpu::).
template <CumsumKernel kKernel>
Tensor cumsum_on(const Tensor& self, int64_t dim) {
  const cpu::Lanes lanes = lanes_of(self, dim, kCumsum);
  const ScalarType dtype = cumsum_dtype(self);
  Tensor out = make_empty_tensor(self.sizes(), dtype, self.device(), kCumsum);
  kKernel(out, contiguous_as(self, dtype, kCumsum), lanes);
  return out;
}

template <SortKernel kKernel>
SortResult sort_on(const Tensor& self, int64_t dim, bool descending) {
  const cpu::Lanes lanes = lanes_of(self, dim, kSort);
  Tensor values = make_empty_tensor(self.sizes(), self.dtype(), self.device(), kSort);
  Tensor indices = make_empty_tensor(self.sizes(), kInt64, self.device(), kSort);
  kKernel(values, indices, contiguous_as(self, self.dtype(), kSort), lanes, descending);
  return {values, indices};
}

// topk is the first k of a stable sort: the largest (or smallest) k values,
// sorted, ties to the lower index. `sorted=false` allows any order, and sorted is one.
SortResult topk_composite(const Tensor& self, int64_t k, int64_t dim, bool largest, bool) {
  const cpu::Lanes lanes = lanes_of(self, dim, kTopk);
  STRATA_CHECK(k >= 0 && k <= lanes.size, kTopk, "k = ", k, " is out of range for dim ", dim,
               " of size ", lanes.size, " (tensor of shape ", shape_string(self.sizes()), ")");
  auto [values, indices] = self.sort(dim, largest);
  if (self.dim() == 0) return {values, indices};
  const int64_t d = wrap_dim(dim, self.dim(), kTopk);
  return {values.narrow(d, 0, k), indices.narrow(d, 0, k)};
}

// ---- derivatives (Note [Derivative formulas]) ----

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

// out_k = sum_{j <= k} x_j, so x_j's gradient is sum_{k >= j} g_k: the lane's
// total less the running sum before j.
void cumsum_backward(BackwardContext& c) {
  const Tensor& g = c.grad();
  const int64_t dim = c.int_arg(1);
  c.set_grad(0, g.sum({dim}, true) - g.cumsum(dim) + g);
}

// sorted value k is x[indices[k]]: its gradient goes back there (indices are a
// permutation of each lane, so nothing collides).
void sort_backward(BackwardContext& c) {
  const Tensor zero = zeros(c.input_sizes(0), c.grad(0).dtype(), c.grad(0).device());
  c.set_grad(0, zero.scatter_add(c.int_arg(1), c.output(1), c.grad(0)));
}

void sort_forward(ForwardContext& c) {
  c.set_tangent(0, c.tangent(0).gather(c.int_arg(1), c.output(1)));
}

// ---- batching rules (Note [Batching rules]) ----
// Every sample's lanes are lanes of the whole batch along the same dim once the
// batch dim is first; a 0-dim sample gets a lane dim of size 1 after the batch.

struct LaneCall {
  batching::VmapLevel at;
  batching::BatchedArg self;
  Tensor value;  // batch first
  int64_t dim = 0;  // in value
  bool scalar_sample = false;

  LaneCall(const char* op, const Tensor& t, int64_t sample_dim)
      : at(batching::current_vmap_level(op)), self(batching::unwrap(t, at.level)) {
    if (!self.batched()) return;
    scalar_sample = self.logical_dim() == 0;
    dim = batching::batch_first_dim(sample_dim, self.logical_dim(), op);
    value = batching::batch_first(self);
    if (scalar_sample) value = value.unsqueeze(1);
  }
  Tensor result(const Tensor& out) const {
    return batching::make_batched(scalar_sample ? out.squeeze(1) : out, 0, at.level);
  }
};

Tensor cumsum_batched(const Tensor& self, int64_t dim) {
  const LaneCall call(kCumsum, self, dim);
  const batching::BelowThisLevel below;
  if (!call.self.batched()) return self.cumsum(dim);
  return call.result(call.value.cumsum(call.dim));
}

SortResult sort_batched(const Tensor& self, int64_t dim, bool descending) {
  const LaneCall call(kSort, self, dim);
  const batching::BelowThisLevel below;
  if (!call.self.batched()) return self.sort(dim, descending);
  auto [values, indices] = call.value.sort(call.dim, descending);
  return {call.result(values), call.result(indices)};
}

// ---- the rows (Note [One op, one place]) ----

MetaList cumsum_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  lanes_of(self, args[1].to_int(), kCumsum);
  return shape::single(self.sizes(), cumsum_dtype(self));
}

MetaList sort_shape(OpArgs args) {
  const Tensor& self = shape::tensor_arg(args, 0);
  lanes_of(self, args[1].to_int(), kSort);
  return {{DimVector(self.sizes()), self.dtype()}, {DimVector(self.sizes()), kInt64}};
}

// cumsum adds once per element; sort compares and moves, without arithmetic.
const OpFamily kScanSortOps("scan_sort", {
    {.schema = "cumsum(Tensor self, int dim) -> Tensor",
     .cpu = &cumsum_on<&cpu::cumsum_kernel>,
     .cuda = &cumsum_on<&gpu::cumsum_kernel>,
     .derivative = derivative({.backward = &cumsum_backward, .forward = &autograd::linear_forward}),
     .batching = &cumsum_batched,
     .shape = &cumsum_shape,
     .flops = &flops::per_output_element<1>},
    {.schema = "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor, Tensor)",
     .cpu = &sort_on<&cpu::sort_kernel>,
     .cuda = &sort_on<&gpu::sort_kernel>,
     .derivative = derivative({.backward = &sort_backward,
                               .forward = &sort_forward,
                               .saved_outputs = args(1)}),
     .batching = &sort_batched,
     .shape = &sort_shape,
     .flops = &flops::zero},
    {.schema = "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> "
               "(Tensor, Tensor)",
     .decomposition = &topk_composite},
});

}  // namespace

Tensor Tensor::cumsum(int64_t dim) const {
  return STRATA_OP("strata::cumsum", "", CumsumSig).call(*this, dim);
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return STRATA_OP("strata::sort", "", SortSig).call(*this, dim, descending);
}

std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return STRATA_OP("strata::topk", "", TopkSig).call(*this, k, dim, largest, sorted);
}

}  // namespace strata
