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

#include "dispatcher/library.h"
#include "ops/factory_backend_select.h"
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

Tensor arange_cpu(const Scalar& start, const Scalar& end, const Scalar& step,
                  std::optional<ScalarType> dtype, std::optional<Device> device) {
  const bool all_integral =
      !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  const ScalarType out_dtype = dtype.value_or(all_integral ? kInt64 : kFloat32);
  check_numeric_dtype(out_dtype, "strata::arange");
  const int64_t length = arange_length(start, end, step);
  Tensor out = make_empty_tensor({length}, out_dtype, device.value_or(kCPU), "strata::arange");
  cpu::arange_kernel(out, start, step);
  return out;
}

Tensor arange_end_composite(const Scalar& end, std::optional<ScalarType> dtype,
                            std::optional<Device> device) {
  return STRATA_OP("strata::arange", "start_step", ArangeSig).call(0, end, 1, dtype, device);
}

Tensor linspace_cpu(const Scalar& start, const Scalar& end, int64_t steps,
                    std::optional<ScalarType> dtype, std::optional<Device> device) {
  STRATA_CHECK(steps >= 0, "strata::linspace", "number of steps must be non-negative, got ", steps);
  const ScalarType out_dtype = dtype.value_or(kFloat32);
  check_numeric_dtype(out_dtype, "strata::linspace");
  Tensor out = make_empty_tensor({steps}, out_dtype, device.value_or(kCPU), "strata::linspace");
  cpu::linspace_kernel(out, start, end);
  return out;
}

Tensor eye_cpu(int64_t n, std::optional<int64_t> m, std::optional<ScalarType> dtype,
               std::optional<Device> device) {
  const int64_t cols = m.value_or(n);
  STRATA_CHECK(n >= 0 && cols >= 0, "strata::eye", "n and m must be non-negative, got n=", n,
               ", m=", cols);
  Tensor out =
      make_empty_tensor({n, cols}, dtype.value_or(kFloat32), device.value_or(kCPU), "strata::eye");
  cpu::eye_kernel(out);
  return out;
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

Tensor full_like_composite(const Tensor& like, const Scalar& value,
                           std::optional<ScalarType> dtype) {
  const ScalarType out_dtype = dtype.value_or(like.dtype());
  STRATA_CHECK(is_floating_point(out_dtype) || !value.is_floating_point(), "strata::full_like",
               "cannot fill a ", out_dtype, " tensor (like one of shape ",
               shape_string(like.sizes()), ") with the floating-point value ", value,
               "; pass a floating dtype");
  Tensor out = empty_like(like, out_dtype);
  out.fill_(value);
  return out;
}

STRATA_LIBRARY(strata, m) {
  m.def("empty(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("ones(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def(
      "full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> "
      "Tensor");
  m.def("arange(Scalar end, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def(
      "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, "
      "Device? device=None) -> Tensor");
  m.def(
      "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, "
      "Device? device=None) -> Tensor");
  m.def("eye(int n, int? m=None, *, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("empty_like(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  m.def("zeros_like(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  m.def("ones_like(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  m.def("full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, BackendSelect, m) {
  m.impl("empty", &FactoryBackendSelect<kEmpty, kNoOverload, FactorySig>::kernel);
  m.impl("arange.start_step", &FactoryBackendSelect<kArange, kStartStep, ArangeSig>::kernel);
  m.impl("linspace", &FactoryBackendSelect<kLinspace, kNoOverload, LinspaceSig>::kernel);
  m.impl("eye", &FactoryBackendSelect<kEye, kNoOverload, EyeSig>::kernel);
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("empty", &empty_cpu);
  m.impl("arange.start_step", &arange_cpu);
  m.impl("linspace", &linspace_cpu);
  m.impl("eye", &eye_cpu);
}

STRATA_LIBRARY_IMPL(strata, CompositeExplicitAutograd, m) {
  m.impl("zeros", &zeros_composite);
  m.impl("ones", &ones_composite);
  m.impl("full", &full_composite);
  m.impl("empty_like", &empty_like_composite);
  m.impl("zeros_like", &zeros_like_composite);
  m.impl("ones_like", &ones_like_composite);
  m.impl("full_like", &full_like_composite);
}

STRATA_LIBRARY_IMPL(strata, CompositeImplicitAutograd, m) {
  m.impl("arange", &arange_end_composite);
}

// A tensor made like another takes its shape, never its values: no gradient.
STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  for (const char* name : {"empty_like", "zeros_like", "ones_like", "full_like"}) {
    m.impl(name, autograd::non_differentiable());
  }
}

// A tensor made like a batched one is batched like it, as a unary pointwise op's
// output. The boxed rule puts the batch first, so that each sample is contiguous,
// as a new tensor is (a view of it, as of a clone, must work).
STRATA_LIBRARY_IMPL(strata, Batched, m) {
  for (const char* name : {"empty_like", "zeros_like", "ones_like", "full_like"}) {
    m.impl(name, batching::pointwise_batch_rule());
  }
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
