// Factory operators: empty, zeros, ones, full, arange, linspace, eye, the *_like
// family, and tensor() from host values.
//
// Two kinds of factory: those whose values need a kernel of their own (empty,
// arange, linspace, eye) have a BackendSelect kernel that routes by the device
// option to the backend's kernel; those that hold one value everywhere (zeros,
// ones, full and every *_like) are CompositeExplicitAutograd: `empty` + fill_.
#include "kernels/cpu/creation.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "dispatcher/op_def.h"
#include "ops/elementwise_kernels.h"
#include "ops/factory_backend_select.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using FactorySig = Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<Device>);
using ArangeSig = Tensor(const Scalar&, const Scalar&, const Scalar&, std::optional<ScalarType>,
                         std::optional<Device>);
using LinspaceSig = Tensor(const Scalar&, const Scalar&, int64_t, std::optional<ScalarType>,
                           std::optional<Device>);
using EyeSig = Tensor(int64_t, std::optional<int64_t>, std::optional<ScalarType>,
                      std::optional<Device>);
using LikeSig = Tensor(const Tensor&, std::optional<ScalarType>);
using FullLikeSig = Tensor(const Tensor&, const Scalar&, std::optional<ScalarType>);

constexpr char kNoOverload[] = "";
constexpr char kEmpty[] = "strata::empty";
constexpr char kArange[] = "strata::arange";
constexpr char kStartStep[] = "start_step";
constexpr char kLinspace[] = "strata::linspace";
constexpr char kEye[] = "strata::eye";

Tensor empty_cpu(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return make_empty_tensor(size, dtype.value_or(kFloat32), device.value_or(kCPU), "strata::empty");
}

Tensor zeros_composite(IntArrayRef size, std::optional<ScalarType> dtype,
                       std::optional<Device> device) {
  Tensor out = empty(size, dtype, device);
  out.zero_();
  return out;
}

Tensor ones_composite(IntArrayRef size, std::optional<ScalarType> dtype,
                      std::optional<Device> device) {
  Tensor out = empty(size, dtype, device);
  out.fill_(1);
  return out;
}

ScalarType default_dtype_for(const Scalar& value) {
  if (value.is_bool()) return kBool;
  return value.is_integral() ? kInt64 : kFloat32;
}

Tensor full_composite(IntArrayRef size, const Scalar& value, std::optional<ScalarType> dtype,
                      std::optional<Device> device) {
  Tensor out = empty(size, dtype.value_or(default_dtype_for(value)), device);
  out.fill_(value);
  return out;
}

// ---- arange, linspace, eye -------------------------------------------------------

void check_numeric_dtype(ScalarType dtype, const char* op) {
  STRATA_CHECK(dtype != kBool, op, "expected a numeric dtype (Int64, Float32 or Float64), got ",
               dtype);
}

void check_arange_direction(bool reaches_end, const Scalar& start, const Scalar& end,
                            const Scalar& step) {
  STRATA_CHECK(reaches_end, "strata::arange", "a ", step.to_double() > 0 ? "positive" : "negative",
               " step (", step, ") cannot go from start=", start, " to end=", end);
}

// The length of [start, end) by step: ceil((end - start) / step), exact for integers.
int64_t arange_length(const Scalar& start, const Scalar& end, const Scalar& step) {
  const double first = start.to_double(), last = end.to_double(), by = step.to_double();
  STRATA_CHECK(std::isfinite(first) && std::isfinite(last) && std::isfinite(by), "strata::arange",
               "start, end and step must be finite, got start=", start, ", end=", end,
               ", step=", step);
  STRATA_CHECK(by != 0, "strata::arange", "step must be nonzero (start=", start, ", end=", end,
               ")");
  if (!start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point()) {
    // In 128 bits: end - start can overflow int64.
    const __int128 distance = static_cast<__int128>(end.to_int()) - start.to_int();
    const __int128 stride = step.to_int();
    check_arange_direction(distance == 0 || (distance > 0) == (stride > 0), start, end, step);
    if (distance == 0) return 0;
    return static_cast<int64_t>((distance + stride - (stride > 0 ? 1 : -1)) / stride);
  }
  check_arange_direction(by > 0 ? last >= first : last <= first, start, end, step);
  const double length = std::ceil((last - first) / by);
  STRATA_CHECK(length < static_cast<double>(std::numeric_limits<int64_t>::max()), "strata::arange",
               "the range from ", start, " to ", end, " by ", step, " has too many elements");
  return static_cast<int64_t>(length);
}

// Each factory's checks, shared by its kernel and its shape function; they give
// the output's sizes and dtype.

TensorMeta arange_checked(const Scalar& start, const Scalar& end, const Scalar& step,
                          std::optional<ScalarType> dtype) {
  const bool all_integral =
      !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  const ScalarType out_dtype = dtype.value_or(all_integral ? kInt64 : kFloat32);
  check_numeric_dtype(out_dtype, "strata::arange");
  return {{arange_length(start, end, step)}, out_dtype};
}

TensorMeta linspace_checked(int64_t steps, std::optional<ScalarType> dtype) {
  STRATA_CHECK(steps >= 0, "strata::linspace", "number of steps must be non-negative, got ", steps);
  const ScalarType out_dtype = dtype.value_or(kFloat32);
  check_numeric_dtype(out_dtype, "strata::linspace");
  return {{steps}, out_dtype};
}

TensorMeta eye_checked(int64_t n, std::optional<int64_t> m, std::optional<ScalarType> dtype) {
  const int64_t cols = m.value_or(n);
  STRATA_CHECK(n >= 0 && cols >= 0, "strata::eye", "n and m must be non-negative, got n=", n,
               ", m=", cols);
  return {{n, cols}, dtype.value_or(kFloat32)};
}

// A factory's values computed on the host: for a GPU they are copied over (arange,
// linspace and eye are small and made once, so no kernel of their own).
template <class Fill>
Tensor made_on_host(const TensorMeta& meta, std::optional<Device> device, const char* op,
                    Fill fill) {
  const Device target = device.value_or(kCPU);
  Tensor host = make_empty_tensor(meta.sizes, meta.dtype, kCPU, op);
  fill(host);
  if (target.is_cpu()) return host;
  Tensor out = make_empty_tensor(meta.sizes, meta.dtype, target, op);
  on_device::copy_kernel(out, host);
  return out;
}

Tensor arange_cpu(const Scalar& start, const Scalar& end, const Scalar& step,
                  std::optional<ScalarType> dtype, std::optional<Device> device) {
  return made_on_host(arange_checked(start, end, step, dtype), device, "strata::arange",
                      [&](const Tensor& out) { cpu::arange_kernel(out, start, step); });
}

Tensor arange_end_composite(const Scalar& end, std::optional<ScalarType> dtype,
                            std::optional<Device> device) {
  return STRATA_OP("strata::arange", "start_step", ArangeSig).call(0, end, 1, dtype, device);
}

Tensor linspace_cpu(const Scalar& start, const Scalar& end, int64_t steps,
                    std::optional<ScalarType> dtype, std::optional<Device> device) {
  return made_on_host(linspace_checked(steps, dtype), device, "strata::linspace",
                      [&](const Tensor& out) { cpu::linspace_kernel(out, start, end); });
}

Tensor eye_cpu(int64_t n, std::optional<int64_t> m, std::optional<ScalarType> dtype,
               std::optional<Device> device) {
  return made_on_host(eye_checked(n, m, dtype), device, "strata::eye",
                      [](const Tensor& out) { cpu::eye_kernel(out); });
}

// ---- the *_like family ---------------------------------------------------------

Tensor empty_like_composite(const Tensor& like, std::optional<ScalarType> dtype) {
  return empty(like.sizes(), dtype.value_or(like.dtype()), like.device());
}

Tensor zeros_like_composite(const Tensor& like, std::optional<ScalarType> dtype) {
  Tensor out = empty_like(like, dtype);
  out.zero_();
  return out;
}

Tensor ones_like_composite(const Tensor& like, std::optional<ScalarType> dtype) {
  Tensor out = empty_like(like, dtype);
  out.fill_(1);
  return out;
}

// full_like's dtype, which must hold the value; shared with its shape function.
ScalarType full_like_dtype(const Tensor& like, const Scalar& value,
                           std::optional<ScalarType> dtype) {
  const ScalarType out_dtype = dtype.value_or(like.dtype());
  STRATA_CHECK(is_floating_point(out_dtype) || !value.is_floating_point(), "strata::full_like",
               "cannot fill a ", out_dtype, " tensor (like one of shape ",
               shape_string(like.sizes()), ") with the floating-point value ", value,
               "; pass a floating dtype");
  return out_dtype;
}

Tensor full_like_composite(const Tensor& like, const Scalar& value,
                           std::optional<ScalarType> dtype) {
  Tensor out = empty_like(like, full_like_dtype(like, value, dtype));
  out.fill_(value);
  return out;
}

template <class T>
Tensor tensor_from_values(const T* values, size_t count, IntArrayRef shape) {
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  STRATA_CHECK(numel == static_cast<int64_t>(count), "strata::tensor", count,
               " values cannot fill a tensor of shape ", shape_string(shape), " (", numel,
               " elements)");
  Tensor out = make_empty_tensor(shape, scalar_type_of<T>, kCPU, "strata::tensor");
  T* data = out.data_ptr<T>();
  for (size_t i = 0; i < count; ++i) data[i] = values[i];
  return out;
}

// ---- the rows (Note [One op, one place]) ----------------------------------------
// A factory's shape function reads its size and dtype arguments. No factory does
// arithmetic on data: 0 FLOPs. Those without tensor inputs are never reached by grad
// or vmap (no tensor carries an Autograd or Batched key into the call).

MetaList factory_shape(OpArgs args) {
  return shape::single(args[0].to_int_list(), dtype_arg(args[1]).value_or(kFloat32));
}

MetaList full_shape(OpArgs args) {
  return shape::single(args[0].to_int_list(),
                       dtype_arg(args[2]).value_or(default_dtype_for(args[1].to_scalar())));
}

MetaList arange_shape(OpArgs args) {
  return {arange_checked(args[0].to_scalar(), args[1].to_scalar(), args[2].to_scalar(),
                         dtype_arg(args[3]))};
}

MetaList linspace_shape(OpArgs args) {
  return {linspace_checked(args[2].to_int(), dtype_arg(args[3]))};
}

MetaList eye_shape(OpArgs args) {
  const std::optional<int64_t> m =
      args[1].is_none() ? std::nullopt : std::optional<int64_t>(args[1].to_int());
  return {eye_checked(args[0].to_int(), m, dtype_arg(args[2]))};
}

MetaList like_shape(OpArgs args) {
  const Tensor& like = shape::tensor_arg(args, 0);
  return shape::single(like.sizes(), dtype_arg(args[1]).value_or(like.dtype()));
}

MetaList full_like_shape(OpArgs args) {
  const Tensor& like = shape::tensor_arg(args, 0);
  return shape::single(like.sizes(),
                       full_like_dtype(like, args[1].to_scalar(), dtype_arg(args[2])));
}

constexpr Absent kNoTensorInputGradient{"no tensor inputs: nothing to differentiate"};
constexpr Absent kNoTensorInputBatching{"no tensor inputs: never called with a batched tensor"};

// A factory whose values need a kernel of its own.
OpDef kernel_factory(const char* schema, Kernel cpu, Kernel backend_select, ShapeFn shape) {
  return {.schema = schema,
          .cpu = std::move(cpu),
          .backend_select = std::move(backend_select),
          .derivative = kNoTensorInputGradient,
          .batching = kNoTensorInputBatching,
          .shape = shape,
          .flops = &flops::zero};
}

// A factory of one value everywhere: `empty` and fill_.
OpDef filled_factory(const char* schema, Kernel all_backends, ShapeFn shape) {
  return {.schema = schema,
          .all_backends = std::move(all_backends),
          .derivative = kNoTensorInputGradient,
          .batching = kNoTensorInputBatching,
          .shape = shape,
          .flops = &flops::zero};
}

// A tensor made like another takes its shape, never its values: no gradient. It is
// batched like `like`, as a unary pointwise op's output; the boxed rule puts the
// batch first, so that each sample is contiguous, as a new tensor is (a view of it,
// as of a clone, must work).
OpDef like_factory(const char* schema, Kernel all_backends, ShapeFn shape) {
  return {.schema = schema,
          .all_backends = std::move(all_backends),
          .derivative = {autograd::non_differentiable(), "takes like's shape, not its values"},
          .batching = batching::pointwise_batch_rule(),
          .shape = shape,
          .flops = &flops::zero};
}

const OpFamily kCreationOps("creation", {
    on_every_backend(kernel_factory(
        "empty(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
        &empty_cpu, &FactoryBackendSelect<kEmpty, kNoOverload, FactorySig>::kernel,
        &factory_shape)),
    filled_factory("zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
                   &zeros_composite, &factory_shape),
    filled_factory("ones(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
                   &ones_composite, &factory_shape),
    filled_factory("full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, "
                   "Device? device=None) -> Tensor",
                   &full_composite, &full_shape),
    {.schema = "arange(Scalar end, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
     .decomposition = &arange_end_composite},
    on_every_backend(kernel_factory(
        "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "
        "ScalarType? dtype=None, Device? device=None) -> Tensor",
        &arange_cpu, &FactoryBackendSelect<kArange, kStartStep, ArangeSig>::kernel,
        &arange_shape)),
    on_every_backend(kernel_factory(
        "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, "
        "Device? device=None) -> Tensor",
        &linspace_cpu, &FactoryBackendSelect<kLinspace, kNoOverload, LinspaceSig>::kernel,
        &linspace_shape)),
    on_every_backend(kernel_factory(
        "eye(int n, int? m=None, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
        &eye_cpu, &FactoryBackendSelect<kEye, kNoOverload, EyeSig>::kernel, &eye_shape)),
    like_factory("empty_like(Tensor self, *, ScalarType? dtype=None) -> Tensor",
                 &empty_like_composite, &like_shape),
    like_factory("zeros_like(Tensor self, *, ScalarType? dtype=None) -> Tensor",
                 &zeros_like_composite, &like_shape),
    like_factory("ones_like(Tensor self, *, ScalarType? dtype=None) -> Tensor",
                 &ones_like_composite, &like_shape),
    like_factory("full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None) -> Tensor",
                 &full_like_composite, &full_like_shape),
});

}  // namespace

Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return STRATA_OP(kEmpty, "", FactorySig).call(size, dtype, device);
}

Tensor zeros(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return STRATA_OP("strata::zeros", "", FactorySig).call(size, dtype, device);
}

Tensor ones(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  return STRATA_OP("strata::ones", "", FactorySig).call(size, dtype, device);
}

Tensor full(IntArrayRef size, const Scalar& value, std::optional<ScalarType> dtype,
            std::optional<Device> device) {
  return STRATA_OP(
             "strata::full", "",
             Tensor(IntArrayRef, const Scalar&, std::optional<ScalarType>, std::optional<Device>))
      .call(size, value, dtype, device);
}

Tensor arange(const Scalar& end, std::optional<ScalarType> dtype) {
  return STRATA_OP("strata::arange", "",
                   Tensor(const Scalar&, std::optional<ScalarType>, std::optional<Device>))
      .call(end, dtype, std::nullopt);
}

Tensor arange(const Scalar& end, std::optional<ScalarType> dtype, Device device) {
  return STRATA_OP("strata::arange", "",
                   Tensor(const Scalar&, std::optional<ScalarType>, std::optional<Device>))
      .call(end, dtype, device);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              std::optional<ScalarType> dtype) {
  return STRATA_OP("strata::arange", "start_step", ArangeSig)
      .call(start, end, step, dtype, std::nullopt);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                std::optional<ScalarType> dtype) {
  return STRATA_OP(kLinspace, "", LinspaceSig).call(start, end, steps, dtype, std::nullopt);
}

Tensor eye(int64_t n, std::optional<int64_t> m, std::optional<ScalarType> dtype) {
  return STRATA_OP(kEye, "", EyeSig).call(n, m, dtype, std::nullopt);
}

Tensor eye(int64_t n, std::optional<int64_t> m, std::optional<ScalarType> dtype, Device device) {
  return STRATA_OP(kEye, "", EyeSig).call(n, m, dtype, device);
}

Tensor empty_like(const Tensor& like, std::optional<ScalarType> dtype) {
  return STRATA_OP("strata::empty_like", "", LikeSig).call(like, dtype);
}

Tensor zeros_like(const Tensor& like, std::optional<ScalarType> dtype) {
  return STRATA_OP("strata::zeros_like", "", LikeSig).call(like, dtype);
}

Tensor ones_like(const Tensor& like, std::optional<ScalarType> dtype) {
  return STRATA_OP("strata::ones_like", "", LikeSig).call(like, dtype);
}

Tensor full_like(const Tensor& like, const Scalar& value, std::optional<ScalarType> dtype) {
  return STRATA_OP("strata::full_like", "", FullLikeSig).call(like, value, dtype);
}

Tensor tensor(std::initializer_list<double> values, IntArrayRef shape) {
  return tensor_from_values(values.begin(), values.size(), shape);
}

Tensor tensor(std::initializer_list<double> values) {
  return tensor(values, {static_cast<int64_t>(values.size())});
}

template <class T>
Tensor tensor(const std::vector<T>& values, IntArrayRef shape) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<char> bytes(values.begin(), values.end());
    Tensor out = make_empty_tensor(shape, kBool, kCPU, "strata::tensor");
    STRATA_CHECK(out.numel() == static_cast<int64_t>(values.size()), "strata::tensor",
                 values.size(), " values cannot fill a tensor of shape ", shape_string(shape));
    std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
    return out;
  } else {
    return tensor_from_values(values.data(), values.size(), shape);
  }
}

template Tensor tensor<double>(const std::vector<double>&, IntArrayRef);
template Tensor tensor<float>(const std::vector<float>&, IntArrayRef);
template Tensor tensor<int64_t>(const std::vector<int64_t>&, IntArrayRef);
template Tensor tensor<bool>(const std::vector<bool>&, IntArrayRef);

}  // namespace strata
