// Extrema: amax/amin over any set of dims, max/min over every dim or with the
// index of one dim, argmax/argmin (ops/reduction_common.h has what every reduction
// shares).
#include <optional>
#include <tuple>
#include <vector>

#include "dispatcher/op_def.h"
#include "kernels/cuda/reduction.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "ops/reduction_common.h"

namespace strata::reduction {
namespace {

constexpr char kAmax[] = "strata::amax";
constexpr char kAmin[] = "strata::amin";
constexpr char kMax[] = "strata::max";
constexpr char kMin[] = "strata::min";
constexpr char kArgmax[] = "strata::argmax";
constexpr char kArgmin[] = "strata::argmin";

template <const char* kOp>
Reduction plan_extremum(const Tensor& self, IntArrayRef dim, bool keepdim) {
  const Reduction r = plan_reduction(self, dim, keepdim, self.dtype(), kOp);
  check_nonempty_groups(self, r, dim, kOp);
  return r;
}

template <const char* kOp>
Reduction plan_extremum_all(const Tensor& self) {
  return plan_extremum<kOp>(self, {}, false);
}

template <const char* kOp>
Reduction plan_extremum_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return plan_extremum<kOp>(self, {dim}, keepdim);
}

// With no dim, the index is into the flattened (row-major) tensor.
template <const char* kOp>
Reduction plan_arg_extremum(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const std::vector<int64_t> dims = dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
  const Reduction r = plan_reduction(self, dims, keepdim, kInt64, kOp);
  check_nonempty_groups(self, r, dims, kOp);
  return r;
}

using ValueKernel = void (*)(const Tensor&, const Tensor&, DimMask);
using IndexKernel = void (*)(const Tensor&, const Tensor&, const Tensor&, DimMask);

template <ValueKernel kKernel, const char* kOp>
Tensor extremum_cpu(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return reduce(self, plan_extremum<kOp>(self, dim, keepdim), kOp, kKernel);
}

template <ValueKernel kKernel, const char* kOp>
Tensor extremum_all_cpu(const Tensor& self) {
  return reduce(self, plan_extremum_all<kOp>(self), kOp, kKernel);
}

template <IndexKernel kKernel, const char* kOp>
std::tuple<Tensor, Tensor> extremum_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  const Reduction r = plan_extremum_dim<kOp>(self, dim, keepdim);
  Tensor values = make_empty_tensor(r.out_sizes, r.out_dtype, self.device(), kOp);
  Tensor indices = make_empty_tensor(r.out_sizes, kInt64, self.device(), kOp);
  kKernel(values, indices, self, r.reduced);
  return {values, indices};
}

template <IndexKernel kKernel, const char* kOp>
Tensor arg_extremum_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const Reduction r = plan_arg_extremum<kOp>(self, dim, keepdim);
  Tensor indices = make_empty_tensor(r.out_sizes, r.out_dtype, self.device(), kOp);
  kKernel(Tensor(), indices, self, r.reduced);
  return indices;
}

// ---- derivatives (Note [Derivative formulas]) ----

// amax and amin (over a dim list), max and min (over every dim).
template <bool kAllDims>
struct Extremum {
  template <class C>
  static Folded folded(const C& c) {
    if constexpr (kAllDims) {
      return folded_all(c);
    } else {
      return folded_dim_list(c);
    }
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded& f) {
    return tie_weights(c.input(0), c.output(), f);
  }
};

// max.dim and min.dim: all of it goes to the element the index output names.
struct ExtremumDim {
  template <class C>
  static Folded folded(const C& c) {
    return folded_one_dim(c);
  }
  template <class C>
  static Tensor derivative(const C& c, const Folded& f) {
    const IntArrayRef sizes = input_sizes(c);
    const int64_t rank = static_cast<int64_t>(sizes.size());
    // Positions along the dim, shaped to broadcast against the input (a 0-dim
    // input is one position).
    const int64_t dim = rank == 0 ? 0 : wrap_dim(c.int_arg(1), rank, "strata::autograd");
    std::vector<int64_t> column(static_cast<size_t>(rank - dim), 1);
    const int64_t count = rank == 0 ? 1 : sizes[static_cast<size_t>(dim)];
    if (rank > 0) column[0] = count;
    const Tensor winners = f.restore(c.output(1));
    return arange(count, kInt64, winners.device()).view(column) == winners;
  }
};

// ---- the rows (Note [One op, one place]) ----

using ExtremumDimMethod = std::tuple<Tensor, Tensor> (Tensor::*)(int64_t, bool) const;

const OpFamily kExtremumOps("reduction_extremum", {
    {.schema = "amax(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor",
     .cpu = &extremum_cpu<&cpu::amax_kernel, kAmax>,
     .cuda = &extremum_cpu<&gpu::amax_kernel, kAmax>,
     .derivative = reduction_derivative<Extremum<false>>(kSelf, kResult),
     .batching = kRule<&Tensor::amax, kAmax>,
     .shape = &planned_shape<&plan_extremum<kAmax>>,
     .flops = kOnePerInputElement},
    {.schema = "amin(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor",
     .cpu = &extremum_cpu<&cpu::amin_kernel, kAmin>,
     .cuda = &extremum_cpu<&gpu::amin_kernel, kAmin>,
     .derivative = reduction_derivative<Extremum<false>>(kSelf, kResult),
     .batching = kRule<&Tensor::amin, kAmin>,
     .shape = &planned_shape<&plan_extremum<kAmin>>,
     .flops = kOnePerInputElement},
    {.schema = "max(Tensor self) -> Tensor",
     .cpu = &extremum_all_cpu<&cpu::amax_kernel, kMax>,
     .cuda = &extremum_all_cpu<&gpu::amax_kernel, kMax>,
     .derivative = reduction_derivative<Extremum<true>>(kSelf, kResult),
     .batching = &EveryDimRule<static_cast<AllMethod>(&Tensor::max), &Tensor::amax, kMax>::call,
     .shape = &planned_shape<&plan_extremum_all<kMax>>,
     .flops = kOnePerInputElement},
    {.schema =
         "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
     .cpu = &extremum_dim_cpu<&cpu::max_with_index_kernel, kMax>,
     .cuda = &extremum_dim_cpu<&gpu::max_with_index_kernel, kMax>,
     .derivative = reduction_derivative<ExtremumDim>(0, autograd::args(1)),
     .batching = kRule<static_cast<ExtremumDimMethod>(&Tensor::max), kMax>,
     .shape = &values_and_indices_shape<&plan_extremum_dim<kMax>>,
     .flops = kOnePerInputElement},
    {.schema = "min(Tensor self) -> Tensor",
     .cpu = &extremum_all_cpu<&cpu::amin_kernel, kMin>,
     .cuda = &extremum_all_cpu<&gpu::amin_kernel, kMin>,
     .derivative = reduction_derivative<Extremum<true>>(kSelf, kResult),
     .batching = &EveryDimRule<static_cast<AllMethod>(&Tensor::min), &Tensor::amin, kMin>::call,
     .shape = &planned_shape<&plan_extremum_all<kMin>>,
     .flops = kOnePerInputElement},
    {.schema =
         "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
     .cpu = &extremum_dim_cpu<&cpu::min_with_index_kernel, kMin>,
     .cuda = &extremum_dim_cpu<&gpu::min_with_index_kernel, kMin>,
     .derivative = reduction_derivative<ExtremumDim>(0, autograd::args(1)),
     .batching = kRule<static_cast<ExtremumDimMethod>(&Tensor::min), kMin>,
     .shape = &values_and_indices_shape<&plan_extremum_dim<kMin>>,
     .flops = kOnePerInputElement},
    {.schema = "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     .cpu = &arg_extremum_cpu<&cpu::max_with_index_kernel, kArgmax>,
     .cuda = &arg_extremum_cpu<&gpu::max_with_index_kernel, kArgmax>,
     .derivative = {autograd::non_differentiable(), "not differentiable: Int64 indices"},
     .batching = kRule<&Tensor::argmax, kArgmax>,
     .shape = &planned_shape<&plan_arg_extremum<kArgmax>>,
     .flops = kOnePerInputElement},
    {.schema = "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     .cpu = &arg_extremum_cpu<&cpu::min_with_index_kernel, kArgmin>,
     .cuda = &arg_extremum_cpu<&gpu::min_with_index_kernel, kArgmin>,
     .derivative = {autograd::non_differentiable(), "not differentiable: Int64 indices"},
     .batching = kRule<&Tensor::argmin, kArgmin>,
     .shape = &planned_shape<&plan_arg_extremum<kArgmin>>,
     .flops = kOnePerInputElement},
});

}  // namespace
}  // namespace strata::reduction

namespace strata {
namespace {

using UnarySig = Tensor(const Tensor&);
using DimListSig = Tensor(const Tensor&, IntArrayRef, bool);
using ExtremumDimSig = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool);
using ArgSig = Tensor(const Tensor&, std::optional<int64_t>, bool);

}  // namespace

Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::amax", "", DimListSig).call(*this, dim, keepdim);
}

Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::amin", "", DimListSig).call(*this, dim, keepdim);
}

Tensor Tensor::max() const { return STRATA_OP("strata::max", "", UnarySig).call(*this); }

std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return STRATA_OP("strata::max", "dim", ExtremumDimSig).call(*this, dim, keepdim);
}

Tensor Tensor::min() const { return STRATA_OP("strata::min", "", UnarySig).call(*this); }

std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return STRATA_OP("strata::min", "dim", ExtremumDimSig).call(*this, dim, keepdim);
}

Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return STRATA_OP("strata::argmax", "", ArgSig).call(*this, dim, keepdim);
}

Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return STRATA_OP("strata::argmin", "", ArgSig).call(*this, dim, keepdim);
}

}  // namespace strata
