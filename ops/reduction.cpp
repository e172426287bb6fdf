// Reductions: sum, mean, prod, amax/amin, max/min (with indices), argmax/argmin,
// logsumexp, var/std and norm, over any set of dims with keepdim.
#include "kernels/cpu/reduction.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <type_traits>

#include "dispatcher/library.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using cpu::DimMask;

// The dims a reduction folds and the shape of its result.
struct Reduction {
  DimMask reduced = 0;
  DimVector out_sizes;
  int64_t group_numel = 1;  // input elements per output element
};

// Wraps and checks `dims` (an empty list means every dim). A 0-dim input accepts
// dim 0 or -1 and reduces its single value.
Reduction plan_reduction(const Tensor& self, IntArrayRef dims, bool keepdim, const char* op) {
  const int64_t rank = self.dim();
  STRATA_CHECK(rank <= cpu::kMaxReductionRank, op, "cannot reduce a tensor of rank ", rank,
               " (at most ", cpu::kMaxReductionRank, " dims)");
  DimMask named = 0;
  for (int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, rank, op);
    STRATA_CHECK(!(named >> d & 1), op, "dim ", d, " appears more than once in the dim list ",
                 shape_string(dims));
    named |= DimMask{1} << d;
  }
  Reduction r;
  r.reduced = dims.empty() ? ~DimMask{0} : named;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = self.sizes()[d];
    if (!(r.reduced >> d & 1)) {
      r.out_sizes.push_back(size);
    } else {
      r.group_numel *= size;
      if (keepdim) r.out_sizes.push_back(1);
    }
  }
  return r;
}

// Max, min and their kin have no value for zero elements.
void check_nonempty_groups(const Tensor& self, const Reduction& r, IntArrayRef dims,
                           const char* op) {
  STRATA_CHECK(r.group_numel > 0, op,
               "cannot reduce over zero elements: the reduction has no identity (input of "
               "shape ",
               shape_string(self.sizes()), ", reduced dims ",
               dims.empty() ? std::string("all") : shape_string(dims), ")");
}

void check_floating(const Tensor& self, const char* op) {
  STRATA_CHECK(is_floating_point(self.dtype()), op,
               "expected a floating-point input, got a tensor of dtype ", self.dtype(),
               " and shape ", shape_string(self.sizes()),
               " (convert it first, e.g. x.to(kFloat32))");
}

// Sums and products of Bool and Int64 tensors are Int64.
ScalarType widened_dtype(ScalarType dtype) { return is_floating_point(dtype) ? dtype : kInt64; }

template <class Kernel>
Tensor reduce(const Tensor& self, const Reduction& r, ScalarType out_dtype, const char* op,
              Kernel&& kernel) {
  Tensor out = make_empty_tensor(r.out_sizes, out_dtype, self.device(), op);
  kernel(out, self, r.reduced);
  return out;
}

Tensor sum_dim_cpu(const Tensor& self, IntArrayRef dim, bool keepdim) {
  const Reduction r = plan_reduction(self, dim, keepdim, "strata::sum");
  return reduce(self, r, widened_dtype(self.dtype()), "strata::sum", &cpu::sum_kernel);
}

Tensor sum_composite(const Tensor& self) { return self.sum({}, false); }

Tensor mean_dim_cpu(const Tensor& self, IntArrayRef dim, bool keepdim) {
  check_floating(self, "strata::mean");
  const Reduction r = plan_reduction(self, dim, keepdim, "strata::mean");
  return reduce(self, r, self.dtype(), "strata::mean", &cpu::mean_kernel);
}

Tensor mean_composite(const Tensor& self) { return self.mean({}, false); }

Tensor prod_cpu(const Tensor& self) {
  const Reduction r = plan_reduction(self, {}, false, "strata::prod");
  return reduce(self, r, widened_dtype(self.dtype()), "strata::prod", &cpu::prod_kernel);
}

Tensor prod_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  const Reduction r = plan_reduction(self, {dim}, keepdim, "strata::prod");
  return reduce(self, r, widened_dtype(self.dtype()), "strata::prod", &cpu::prod_kernel);
}

template <void (*kKernel)(const Tensor&, const Tensor&, DimMask), const char* kOp>
Tensor extremum_cpu(const Tensor& self, IntArrayRef dim, bool keepdim) {
  const Reduction r = plan_reduction(self, dim, keepdim, kOp);
  check_nonempty_groups(self, r, dim, kOp);
  return reduce(self, r, self.dtype(), kOp, kKernel);
}

constexpr char kAmax[] = "strata::amax";
constexpr char kAmin[] = "strata::amin";
constexpr char kMax[] = "strata::max";
constexpr char kMin[] = "strata::min";
constexpr char kArgmax[] = "strata::argmax";
constexpr char kArgmin[] = "strata::argmin";

template <void (*kKernel)(const Tensor&, const Tensor&, DimMask), const char* kOp>
Tensor extremum_all_cpu(const Tensor& self) {
  return extremum_cpu<kKernel, kOp>(self, {}, false);
}

using IndexKernel = void (*)(const Tensor&, const Tensor&, const Tensor&, DimMask);

template <IndexKernel kKernel, const char* kOp>
std::tuple<Tensor, Tensor> extremum_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  const Reduction r = plan_reduction(self, {dim}, keepdim, kOp);
  check_nonempty_groups(self, r, {dim}, kOp);
  Tensor values = make_empty_tensor(r.out_sizes, self.dtype(), self.device(), kOp);
  Tensor indices = make_empty_tensor(r.out_sizes, kInt64, self.device(), kOp);
  kKernel(values, indices, self, r.reduced);
  return {values, indices};
}

// With no dim, the index is into the flattened (row-major) tensor.
template <IndexKernel kKernel, const char* kOp>
Tensor arg_extremum_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const std::vector<int64_t> dims = dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
  const Reduction r = plan_reduction(self, dims, keepdim, kOp);
  check_nonempty_groups(self, r, dims, kOp);
  Tensor indices = make_empty_tensor(r.out_sizes, kInt64, self.device(), kOp);
  kKernel(Tensor(), indices, self, r.reduced);
  return indices;
}

Tensor logsumexp_cpu(const Tensor& self, IntArrayRef dim, bool keepdim) {
  check_floating(self, "strata::logsumexp");
  const Reduction r = plan_reduction(self, dim, keepdim, "strata::logsumexp");
  return reduce(self, r, self.dtype(), "strata::logsumexp", &cpu::logsumexp_kernel);
}

template <bool kSqrt>
Tensor var_cpu(const Tensor& self, IntArrayRef dim, int64_t correction, bool keepdim) {
  const char* op = kSqrt ? "strata::std" : "strata::var";
  check_floating(self, op);
  STRATA_CHECK(correction >= 0, op, "correction must be non-negative, got ", correction);
  const Reduction r = plan_reduction(self, dim, keepdim, op);
  return reduce(self, r, self.dtype(), op, [&](const Tensor& out, const Tensor& in, DimMask m) {
    cpu::var_kernel(out, in, m, correction, kSqrt);
  });
}

cpu::NormOrder norm_order(const Scalar& p) {
  const double order = p.to<double>();
  if (order == 1) return cpu::NormOrder::L1;
  if (order == 2) return cpu::NormOrder::L2;
  STRATA_CHECK(std::isinf(order) && order > 0, "strata::norm", "unsupported p=", p,
               ": the supported norms are p=1, p=2 and p=inf");
  return cpu::NormOrder::Inf;
}

Tensor norm_cpu(const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim) {
  check_floating(self, "strata::norm");
  const cpu::NormOrder order = norm_order(p);
  const Reduction r = plan_reduction(self, dim, keepdim, "strata::norm");
  if (order == cpu::NormOrder::Inf) check_nonempty_groups(self, r, dim, "strata::norm");
  return reduce(self, r, self.dtype(), "strata::norm",
                [order](const Tensor& out, const Tensor& in, DimMask m) {
                  cpu::norm_kernel(out, in, m, order);
                });
}

STRATA_LIBRARY(strata, m) {
  m.def("sum(Tensor self) -> Tensor");
  m.def("sum.dim_IntList(Tensor self, int[] dim, bool keepdim=False) -> Tensor");
  m.def("mean(Tensor self) -> Tensor");
  m.def("mean.dim(Tensor self, int[] dim, bool keepdim=False) -> Tensor");
  m.def("prod(Tensor self) -> Tensor");
  m.def("prod.dim_int(Tensor self, int dim, bool keepdim=False) -> Tensor");
  m.def("amax(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor");
  m.def("amin(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor");
  m.def("max(Tensor self) -> Tensor");
  m.def("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  m.def("min(Tensor self) -> Tensor");
  m.def("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  m.def("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  m.def("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  m.def("logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor");
  m.def(
      "var.correction(Tensor self, int[] dim=[], int correction=1, bool keepdim=False) -> Tensor");
  m.def(
      "std.correction(Tensor self, int[] dim=[], int correction=1, bool keepdim=False) -> Tensor");
  m.def("norm(Tensor self, Scalar p=2, int[] dim=[], bool keepdim=False) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("sum.dim_IntList", &sum_dim_cpu);
  m.impl("mean.dim", &mean_dim_cpu);
  m.impl("prod", &prod_cpu);
  m.impl("prod.dim_int", &prod_dim_cpu);
  m.impl("amax", &extremum_cpu<&cpu::amax_kernel, kAmax>);
  m.impl("amin", &extremum_cpu<&cpu::amin_kernel, kAmin>);
  m.impl("max", &extremum_all_cpu<&cpu::amax_kernel, kMax>);
  m.impl("min", &extremum_all_cpu<&cpu::amin_kernel, kMin>);
  m.impl("max.dim", &extremum_dim_cpu<&cpu::max_with_index_kernel, kMax>);
  m.impl("min.dim", &extremum_dim_cpu<&cpu::min_with_index_kernel, kMin>);
  m.impl("argmax", &arg_extremum_cpu<&cpu::max_with_index_kernel, kArgmax>);
  m.impl("argmin", &arg_extremum_cpu<&cpu::min_with_index_kernel, kArgmin>);
  m.impl("logsumexp", &logsumexp_cpu);
  m.impl("var.correction", &var_cpu<false>);
  m.impl("std.correction", &var_cpu<true>);
  m.impl("norm", &norm_cpu);
}

// sum() and mean() are the dim-list overloads over every dim, so only those need
// derivative formulas and batching rules.
STRATA_LIBRARY_IMPL(strata, CompositeImplicitAutograd, m) {
  m.impl("sum", &sum_composite);
  m.impl("mean", &mean_composite);
}

// ---- batching rules (Note [Batching rules]) -------------------------------------
// Reducing every sample over some of its dims is reducing the batch over the same
// dims, which leaves the batch dim in place (shifted by the dims before it that
// keepdim=false drops): no copy, whatever the batch dim. Only an op that reduces
// one dim, asked for every dim of a sample, reduces the flattened samples.

using batching::BatchedArg;
using batching::VmapLevel;

// Where the reduction of every sample happens in the batch.
struct BatchedReduction {
  Tensor value;    // the batch, or a view of it that the dims below fit
  DimVector dims;  // the dims of `value` to reduce
  bool keepdim;
  int64_t out_bdim;
  // The shape to give the result, where the reduction leaves it flattened.
  std::optional<DimVector> out_sizes;
};

// Plans the reduction of each sample of x over `dims` (empty: every dim). An op
// with `single_dim` reduces one dim, so its "every dim" of a sample of rank > 1 is
// the one dim of the flattened sample.
BatchedReduction plan_batched_reduction(const BatchedArg& x, IntArrayRef dims, bool keepdim,
                                        bool single_dim, const char* op) {
  const int64_t rank = x.logical_dim();
  const int64_t bdim = *x.bdim;
  if (rank == 0) {
    // A 0-dim sample reduces its one value: give it a size-1 dim after the batch.
    DimVector physical;
    for (int64_t d : dims) physical.push_back(batching::batch_first_dim(d, 0, op));
    if (physical.empty()) physical.push_back(1);
    return {x.value.unsqueeze(1), std::move(physical), false, 0, std::nullopt};
  }
  if (dims.empty() && single_dim && rank > 1) {
    const int64_t batch_size = x.value.sizes()[bdim];
    const int64_t sample_numel = batch_size == 0 ? 0 : x.value.numel() / batch_size;
    BatchedReduction r{
        batching::batch_first(x).reshape({batch_size, sample_numel}), {1}, false, 0, std::nullopt};
    if (keepdim) {
      r.out_sizes = DimVector(static_cast<size_t>(rank) + 1, 1);
      (*r.out_sizes)[0] = batch_size;
    }
    return r;
  }
  DimVector physical;
  if (!dims.empty()) {
    for (int64_t d : dims) {
      const int64_t in_sample = batching::batch_first_dim(d, rank, op) - 1;
      physical.push_back(in_sample < bdim ? in_sample : in_sample + 1);
    }
  } else {
    for (int64_t d = 0; d <= rank; ++d) {
      if (d != bdim) physical.push_back(d);
    }
  }
  const int64_t dropped_before_batch = keepdim ? 0
                                               : std::count_if(physical.begin(), physical.end(),
                                                               [&](int64_t d) { return d < bdim; });
  return {x.value, std::move(physical), keepdim, bdim - dropped_before_batch, std::nullopt};
}

Tensor batched_result(Tensor result, const BatchedReduction& r, int64_t level) {
  if (r.out_sizes) result = result.reshape(*r.out_sizes);
  return batching::make_batched(std::move(result), r.out_bdim, level);
}

// A reduction's dim argument (int[], int, int?) as a list (empty: every dim), and
// a planned list as that argument (a single-dim op plans one dim).
IntArrayRef dims_of(IntArrayRef dims) { return dims; }
IntArrayRef dims_of(const int64_t& dim) { return IntArrayRef(dim); }
IntArrayRef dims_of(const std::optional<int64_t>& dim) {
  return dim ? IntArrayRef(*dim) : IntArrayRef();
}
template <class DimArg>
DimArg as_dim_arg(IntArrayRef dims) {
  if constexpr (std::is_same_v<DimArg, IntArrayRef>) {
    return dims;
  } else {
    return dims[0];
  }
}

// The batching rule of reduction method kMethod of op kName, whose arguments
// kDim and kKeepdim are its dims and keepdim: the same method on the batch.
template <auto kMethod, const char* kName, size_t kDim, size_t kKeepdim>
struct ReductionRule;
template <class Ret, class... Args, Ret (Tensor::*kMethod)(Args...) const, const char* kName,
          size_t kDim, size_t kKeepdim>
struct ReductionRule<kMethod, kName, kDim, kKeepdim> {
  using DimArg = std::tuple_element_t<kDim, std::tuple<Args...>>;

  static Ret call(const Tensor& self, Args... args) {
    const VmapLevel at = batching::current_vmap_level(kName);
    const BatchedArg x = batching::unwrap(self, at.level);
    const batching::BelowThisLevel below;
    if (!x.batched()) return (self.*kMethod)(args...);
    std::tuple<Args...> arguments{args...};
    const BatchedReduction r =
        plan_batched_reduction(x, dims_of(std::get<kDim>(arguments)), std::get<kKeepdim>(arguments),
                               !std::is_same_v<DimArg, IntArrayRef>, kName);
    std::get<kDim>(arguments) = as_dim_arg<DimArg>(r.dims);
    std::get<kKeepdim>(arguments) = r.keepdim;
    Ret result = std::apply([&](auto... a) { return (r.value.*kMethod)(a...); }, arguments);
    if constexpr (std::is_same_v<Ret, Tensor>) {
      return batched_result(std::move(result), r, at.level);
    } else {
      return {batched_result(std::get<0>(result), r, at.level),
              batched_result(std::get<1>(result), r, at.level)};
    }
  }
};

// prod(), max() and min() (kAll): kOverDims (prod over a dim, amax, amin) over
// every dim of a sample.
template <auto kAll, auto kOverDims, const char* kName>
struct EveryDimRule;
template <Tensor (Tensor::*kAll)() const, class DimArg,
          Tensor (Tensor::*kOverDims)(DimArg, bool) const, const char* kName>
struct EveryDimRule<kAll, kOverDims, kName> {
  static Tensor call(const Tensor& self) {
    const VmapLevel at = batching::current_vmap_level(kName);
    const BatchedArg x = batching::unwrap(self, at.level);
    const batching::BelowThisLevel below;
    if (!x.batched()) return (self.*kAll)();
    const BatchedReduction r =
        plan_batched_reduction(x, {}, false, !std::is_same_v<DimArg, IntArrayRef>, kName);
    return batched_result((r.value.*kOverDims)(as_dim_arg<DimArg>(r.dims), r.keepdim), r, at.level);
  }
};

constexpr char kSum[] = "strata::sum";
constexpr char kMean[] = "strata::mean";
constexpr char kProd[] = "strata::prod";
constexpr char kLogsumexp[] = "strata::logsumexp";
constexpr char kVar[] = "strata::var";
constexpr char kStd[] = "strata::std";
constexpr char kNorm[] = "strata::norm";

using AllMethod = Tensor (Tensor::*)() const;
using DimListMethod = Tensor (Tensor::*)(IntArrayRef, bool) const;
using DimMethod = Tensor (Tensor::*)(int64_t, bool) const;
using ExtremumDimMethod = std::tuple<Tensor, Tensor> (Tensor::*)(int64_t, bool) const;

template <auto kMethod, const char* kName, size_t kDim = 0, size_t kKeepdim = 1>
constexpr auto kRule = &ReductionRule<kMethod, kName, kDim, kKeepdim>::call;

STRATA_LIBRARY_IMPL(strata, Batched, m) {
  m.impl("sum.dim_IntList", kRule<static_cast<DimListMethod>(&Tensor::sum), kSum>);
  m.impl("mean.dim", kRule<static_cast<DimListMethod>(&Tensor::mean), kMean>);
  m.impl("prod.dim_int", kRule<static_cast<DimMethod>(&Tensor::prod), kProd>);
  m.impl("amax", kRule<&Tensor::amax, kAmax>);
  m.impl("amin", kRule<&Tensor::amin, kAmin>);
  m.impl("max.dim", kRule<static_cast<ExtremumDimMethod>(&Tensor::max), kMax>);
  m.impl("min.dim", kRule<static_cast<ExtremumDimMethod>(&Tensor::min), kMin>);
  m.impl("argmax", kRule<&Tensor::argmax, kArgmax>);
  m.impl("argmin", kRule<&Tensor::argmin, kArgmin>);
  m.impl("logsumexp", kRule<&Tensor::logsumexp, kLogsumexp>);
  m.impl("var.correction", kRule<&Tensor::var, kVar, 0, 2>);
  m.impl("std.correction", kRule<&Tensor::std, kStd, 0, 2>);
  m.impl("norm", kRule<&Tensor::norm, kNorm, 1, 2>);
  m.impl("prod", &EveryDimRule<static_cast<AllMethod>(&Tensor::prod),
                               static_cast<DimMethod>(&Tensor::prod), kProd>::call);
  m.impl("max", &EveryDimRule<static_cast<AllMethod>(&Tensor::max), &Tensor::amax, kMax>::call);
  m.impl("min", &EveryDimRule<static_cast<AllMethod>(&Tensor::min), &Tensor::amin, kMin>::call);
}

using UnarySig = Tensor(const Tensor&);
using DimListSig = Tensor(const Tensor&, IntArrayRef, bool);
using ExtremumDimSig = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool);
using ArgSig = Tensor(const Tensor&, std::optional<int64_t>, bool);
using VarSig = Tensor(const Tensor&, IntArrayRef, int64_t, bool);

}  // namespace

Tensor Tensor::sum() const { return STRATA_OP("strata::sum", "", UnarySig).call(*this); }

Tensor Tensor::sum(IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::sum", "dim_IntList", DimListSig).call(*this, dim, keepdim);
}

Tensor Tensor::mean() const { return STRATA_OP("strata::mean", "", UnarySig).call(*this); }

Tensor Tensor::mean(IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::mean", "dim", DimListSig).call(*this, dim, keepdim);
}

Tensor Tensor::prod() const { return STRATA_OP("strata::prod", "", UnarySig).call(*this); }

Tensor Tensor::prod(int64_t dim, bool keepdim) const {
  return STRATA_OP("strata::prod", "dim_int", Tensor(const Tensor&, int64_t, bool))
      .call(*this, dim, keepdim);
}

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

Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::logsumexp", "", DimListSig).call(*this, dim, keepdim);
}

Tensor Tensor::var(IntArrayRef dim, int64_t correction, bool keepdim) const {
  return STRATA_OP("strata::var", "correction", VarSig).call(*this, dim, correction, keepdim);
}

Tensor Tensor::std(IntArrayRef dim, int64_t correction, bool keepdim) const {
  return STRATA_OP("strata::std", "correction", VarSig).call(*this, dim, correction, keepdim);
}

Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim) const {
  return STRATA_OP("strata::norm", "", Tensor(const Tensor&, const Scalar&, IntArrayRef, bool))
      .call(*this, p, dim, keepdim);
}

}  // namespace strata
