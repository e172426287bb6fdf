// Random operators: rand, randn, randint, bernoulli, normal. Every op reserves one
// Philox counter per output element from its generator (the default generator when
// none is given) and the kernels draw element i from counter offset + i: Note
// [Counter-based random numbers] in tensor/generator.h. The factories (rand, randn,
// randint) route by their device option through BackendSelect like `empty`.
#include "kernels/cpu/random.h"

#include <limits>

#include "dispatcher/op_def.h"
#include "kernels/cuda/random.h"
#include "ops/device_choice.h"
#include "ops/factory_backend_select.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"

namespace strata {
namespace {

using OptionalGenerator = std::optional<Generator>;
using RandomFactorySig = Tensor(IntArrayRef, const OptionalGenerator&, std::optional<ScalarType>,
                                std::optional<Device>);
using RandintSig = Tensor(int64_t, int64_t, IntArrayRef, const OptionalGenerator&,
                          std::optional<ScalarType>, std::optional<Device>);
using BernoulliSig = Tensor(const Tensor&, const OptionalGenerator&);
using NormalSig = Tensor(const Tensor&, const Tensor&, const OptionalGenerator&);

constexpr char kNoOverload[] = "";
constexpr char kRand[] = "strata::rand";
constexpr char kRandn[] = "strata::randn";
constexpr char kRandint[] = "strata::randint";
constexpr char kLow[] = "low";

// Reserves one counter per element; called after every check, so a call that
// throws leaves the generator where it was.
cpu::PhiloxStream reserve_stream(const OptionalGenerator& generator, int64_t numel) {
  const Generator gen = generator ? *generator : default_generator();
  return {gen.seed(), gen.reserve(static_cast<uint64_t>(numel))};
}

ScalarType floating_dtype(std::optional<ScalarType> dtype, IntArrayRef size, const char* op) {
  const ScalarType out_dtype = dtype.value_or(kFloat32);
  STRATA_CHECK(is_floating_point(out_dtype), op,
               "expected a floating-point dtype (Float32 or Float64) for a tensor of shape ",
               shape_string(size), ", got ", out_dtype);
  return out_dtype;
}

Tensor rand_cpu(IntArrayRef size, const OptionalGenerator& generator,
                std::optional<ScalarType> dtype, std::optional<Device> device) {
  Tensor out =
      make_empty_tensor(size, floating_dtype(dtype, size, kRand), device.value_or(kCPU), kRand);
  (on_device::any_cuda(out) ? gpu::uniform_kernel : cpu::uniform_kernel)(
      out, reserve_stream(generator, out.numel()));
  return out;
}

Tensor randn_cpu(IntArrayRef size, const OptionalGenerator& generator,
                 std::optional<ScalarType> dtype, std::optional<Device> device) {
  Tensor out =
      make_empty_tensor(size, floating_dtype(dtype, size, kRandn), device.value_or(kCPU), kRandn);
  (on_device::any_cuda(out) ? gpu::standard_normal_kernel : cpu::standard_normal_kernel)(
      out, reserve_stream(generator, out.numel()));
  return out;
}

ScalarType randint_dtype(int64_t low, int64_t high, std::optional<ScalarType> dtype) {
  STRATA_CHECK(high > low, kRandint, "high (", high, ") must be greater than low (", low,
               ") to draw from [low, high)");
  const ScalarType out_dtype = dtype.value_or(kInt64);
  STRATA_CHECK(out_dtype != kBool, kRandint,
               "expected a numeric dtype (Int64, Float32 or Float64), got Bool");
  return out_dtype;
}

Tensor randint_cpu(int64_t low, int64_t high, IntArrayRef size, const OptionalGenerator& generator,
                   std::optional<ScalarType> dtype, std::optional<Device> device) {
  Tensor out =
      make_empty_tensor(size, randint_dtype(low, high, dtype), device.value_or(kCPU), kRandint);
  (on_device::any_cuda(out) ? gpu::randint_kernel : cpu::randint_kernel)(
      out, low, high, reserve_stream(generator, out.numel()));
  return out;
}

// What the shape functions can check of bernoulli's and normal's arguments: their
// metadata. The kernels check the values too.
void check_probabilities_dtype(const Tensor& p) {
  STRATA_CHECK(is_floating_point(p.dtype()), "strata::bernoulli",
               "expected a floating-point tensor of probabilities, got ", p.dtype(), " of shape ",
               shape_string(p.sizes()));
}

TensorMeta normal_meta(const Tensor& mean, const Tensor& std) {
  const ScalarType dtype = result_type(mean, std);
  STRATA_CHECK(is_floating_point(dtype), "strata::normal",
               "expected floating-point mean and std, got ", mean.dtype(), " and ", std.dtype());
  return {broadcast_shapes(mean.sizes(), std.sizes(), "strata::normal"), dtype};
}

Tensor bernoulli_cpu(const Tensor& p, const OptionalGenerator& generator) {
  check_probabilities_dtype(p);
  STRATA_CHECK((on_device::any_cuda(p) ? gpu::all_within : cpu::all_within)(p, 0.0, 1.0),
               "strata::bernoulli", "every probability must lie in [0, 1]; the tensor of shape ",
               shape_string(p.sizes()), " holds values outside it (or NaN)");
  Tensor out = make_empty_tensor(p.sizes(), p.dtype(), p.device(), "strata::bernoulli");
  (on_device::any_cuda(out, p) ? gpu::bernoulli_kernel : cpu::bernoulli_kernel)(
      out, p, reserve_stream(generator, out.numel()));
  return out;
}

// t itself when it already has dtype, else a converted copy.
Tensor with_dtype(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor converted = empty(t.sizes(), dtype, t.device());
  converted.copy_(t);
  return converted;
}

Tensor normal_cpu(const Tensor& mean, const Tensor& std, const OptionalGenerator& generator) {
  const TensorMeta meta = normal_meta(mean, std);
  const Tensor mean_values = with_dtype(mean, meta.dtype);
  const Tensor std_values = with_dtype(std, meta.dtype);
  STRATA_CHECK((on_device::any_cuda(std_values) ? gpu::all_within : cpu::all_within)(
                   std_values, 0.0, std::numeric_limits<double>::infinity()),
               "strata::normal", "every std must be >= 0; the tensor of shape ",
               shape_string(std.sizes()), " holds a negative value (or NaN)");
  Tensor out = make_empty_tensor(meta.sizes, meta.dtype, mean.device(), "strata::normal");
  (on_device::any_cuda(out, mean_values, std_values) ? gpu::normal_kernel : cpu::normal_kernel)(
      out, mean_values, std_values, reserve_stream(generator, out.numel()));
  return out;
}

// normal(mean, std) = mean + std * eps (eps ~ N(0, 1)) is differentiable in both
// parameters (the reparameterization trick): eps = (out - mean) / std.
template <class Context>
Tensor standard_noise(const Context& c) {
  return (c.output() - c.input(0)) / c.input(1);
}

void normal_backward(autograd::BackwardContext& c) {
  if (c.needs_grad(0)) c.set_grad(0, c.grad());
  if (c.needs_grad(1)) c.set_grad(1, c.grad() * standard_noise(c));
}

void normal_forward(autograd::ForwardContext& c) {
  c.set_tangent(
      0, autograd::sum_defined(c.tangent(0),
                               c.has_tangent(1) ? c.tangent(1) * standard_noise(c) : Tensor()));
}

// ---- the rows (Note [One op, one place]) ----
// Sampling is not counted as FLOPs; normal's scale and shift of each draw are (2
// per element). No rule batches a random op: the vmap interpreter runs it per
// sample with a generator of the sample's own (or one for all) before any rule
// (VmapInterpreter::process, Randomness).

template <const char* kName>
MetaList random_factory_shape(OpArgs args) {
  const std::vector<int64_t>& size = args[0].to_int_list();
  return shape::single(size, floating_dtype(dtype_arg(args[2]), size, kName));
}

MetaList randint_shape(OpArgs args) {
  return shape::single(args[2].to_int_list(),
                       randint_dtype(args[0].to_int(), args[1].to_int(), dtype_arg(args[4])));
}

MetaList bernoulli_shape(OpArgs args) {
  check_probabilities_dtype(shape::tensor_arg(args, 0));
  return shape::same_as_self(args);
}

MetaList normal_shape(OpArgs args) {
  return {normal_meta(shape::tensor_arg(args, 0), shape::tensor_arg(args, 1))};
}

constexpr Absent kRandomBatching{"random: the vmap interpreter draws per sample, before any rule"};

// rand, randn and randint: factories (no tensor inputs, so no gradient) that route
// by their device option like `empty`.
OpDef random_factory(const char* schema, Kernel cpu, Kernel backend_select, ShapeFn shape) {
  return {.schema = schema,
          .cpu = cpu,
          .cuda = std::move(cpu),
          .backend_select = std::move(backend_select),
          .derivative = Absent{"no tensor inputs: nothing to differentiate"},
          .batching = kRandomBatching,
          .shape = shape,
          .flops = &flops::zero};
}

const OpFamily kRandomOps("random", {
    random_factory("rand(int[] size, *, Generator? generator=None, ScalarType? dtype=None, "
                   "Device? device=None) -> Tensor",
                   &rand_cpu, &FactoryBackendSelect<kRand, kNoOverload, RandomFactorySig>::kernel,
                   &random_factory_shape<kRand>),
    random_factory("randn(int[] size, *, Generator? generator=None, ScalarType? dtype=None, "
                   "Device? device=None) -> Tensor",
                   &randn_cpu, &FactoryBackendSelect<kRandn, kNoOverload, RandomFactorySig>::kernel,
                   &random_factory_shape<kRandn>),
    random_factory("randint.low(int low, int high, int[] size, *, Generator? generator=None, "
                   "ScalarType? dtype=None, Device? device=None) -> Tensor",
                   &randint_cpu, &FactoryBackendSelect<kRandint, kLow, RandintSig>::kernel,
                   &randint_shape),
    {.schema = "bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
     .cpu = &bernoulli_cpu,
     .cuda = &bernoulli_cpu,
     .derivative = {autograd::non_differentiable(), "a 0/1 sample: piecewise constant in p"},
     .batching = kRandomBatching,
     .shape = &bernoulli_shape,
     .flops = &flops::zero},
    {.schema = "normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> "
               "Tensor",
     .cpu = &normal_cpu,
     .cuda = &normal_cpu,
     .derivative = autograd::derivative({.backward = &normal_backward,
                                         .forward = &normal_forward,
                                         .saved_inputs = autograd::args(0, 1),
                                         .saved_outputs = autograd::args(0)}),
     .batching = kRandomBatching,
     .shape = &normal_shape,
     .flops = &flops::per_output_element<2>},
});

}  // namespace

Tensor rand(IntArrayRef size, const Generator& gen, std::optional<ScalarType> dtype) {
  return STRATA_OP(kRand, "", RandomFactorySig).call(size, gen, dtype, std::nullopt);
}

Tensor randn(IntArrayRef size, const Generator& gen, std::optional<ScalarType> dtype) {
  return STRATA_OP(kRandn, "", RandomFactorySig).call(size, gen, dtype, std::nullopt);
}

Tensor randint(int64_t low, int64_t high, IntArrayRef size, const Generator& gen,
               std::optional<ScalarType> dtype) {
  return STRATA_OP(kRandint, "low", RandintSig).call(low, high, size, gen, dtype, std::nullopt);
}

Tensor bernoulli(const Tensor& p, const Generator& gen) {
  return STRATA_OP("strata::bernoulli", "", BernoulliSig).call(p, gen);
}

Tensor normal(const Tensor& mean, const Tensor& std, const Generator& gen) {
  return STRATA_OP("strata::normal", "Tensor_Tensor", NormalSig).call(mean, std, gen);
}

Tensor rand(IntArrayRef size, std::optional<ScalarType> dtype) {
  return STRATA_OP(kRand, "", RandomFactorySig).call(size, std::nullopt, dtype, std::nullopt);
}

Tensor randn(IntArrayRef size, std::optional<ScalarType> dtype) {
  return STRATA_OP(kRandn, "", RandomFactorySig).call(size, std::nullopt, dtype, std::nullopt);
}

}  // namespace strata
