#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dispatcher/ivalue.h"
#include "dispatcher/kernel_function.h"
#include "dispatcher/view_layout.h"
#include "tensor/small_vector.h"

// Note [One op, one place]
// Every operator is one OpDef row in its family file (ops/<family>.cpp), which
// names each of its facets side by side:
//
//   {.schema = "mul.Tensor(Tensor self, Tensor other) -> Tensor",
//    .cpu = &mul_cpu,                          // kernels, per backend
//    .shape = &shape::pointwise,               // output sizes and dtype from metadata
//    .derivative = autograd::derivative({...}),// reverse and forward formulas
//    .batching = &mul_batched,                 // the vmap rule
//    .flops = &flops::per_output<1>}           // or Absent{"why"}
//
// An OpFamily registers its rows with the dispatcher (the schema, and each kernel
// at its key: cpu at CPU, cuda at CUDA, all_backends at CompositeExplicitAutograd,
// derivative at Autograd, batching at Batched) and keeps them for the program's
// life, so tools read the facets back: find_op_def(op) for fake tensors (shape),
// the FLOP counter (flops) and trace's decomposition table (decomposition).
//
// A row without a backend kernel is defined by its decomposition (registered at
// CompositeImplicitAutograd): its derivative, batching, shape and FLOPs are those
// of the ops it decomposes into, so it needs none of its own. Every other row has
// each facet or says why not (Absent{"integer output"}); the completeness test
// (tests/ops/op_def_completeness_test.cpp) walks the rows and names the op and the
// facet of any that does neither.

namespace strata {

class OperatorHandle;
struct OperatorName;

// Why a row has no value for a facet; the completeness test prints it.
struct Absent {
  const char* reason;
};

// A facet of a row: a value, or the reason there is none. A value may come with a
// reason too (a derivative that declares its op non-differentiable says why).
template <class T>
struct Facet {
  T value{};
  const char* reason = nullptr;

  Facet() = default;
  Facet(Absent absent) : reason(absent.reason) {}
  Facet(T v, const char* why = nullptr) : value(std::move(v)), reason(why) {}
  template <class F>
    requires(std::is_convertible_v<F, T> && !std::is_same_v<std::decay_t<F>, T>)
  Facet(F&& f) : value(std::forward<F>(f)) {}

  bool has_value() const {
    if constexpr (std::is_pointer_v<T>) {
      return value != nullptr;
    } else {
      return value.valid();
    }
  }
  // Has a value or says why not.
  bool accounted_for() const { return has_value() || reason != nullptr; }
};

// A kernel given to a row: a function with the op's C++ signature (boxed
// automatically), or a ready KernelFunction (a derivative, a boxed rule).
struct Kernel {
  KernelFunction function;

  Kernel() = default;
  Kernel(KernelFunction k) : function(std::move(k)) {}
  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, KernelFunction> &&
             !std::is_same_v<std::decay_t<F>, Kernel> && !std::is_same_v<std::decay_t<F>, Absent>)
  Kernel(F&& f) : function(KernelFunction::from_unboxed(std::forward<F>(f))) {}

  bool valid() const { return function.valid(); }
};

// What a shape function says about one output: its sizes and dtype.
struct TensorMeta {
  DimVector sizes;
  ScalarType dtype;
  friend bool operator==(const TensorMeta&, const TensorMeta&) = default;
};
using MetaList = std::vector<TensorMeta>;

// The op's arguments, boxed as the schema lists them (tensors are read for their
// metadata only).
using OpArgs = std::span<const IValue>;
// Output sizes and dtypes from the arguments' metadata alone; throws the op's
// own error for arguments the op rejects.
using ShapeFn = MetaList (*)(OpArgs args);
// Floating-point operations of one call, from the arguments and output metadata
// (a multiply-add counts 2).
using FlopFn = int64_t (*)(OpArgs args, const MetaList& outputs);

struct OpDef {
  // Without a namespace: the family's ("add.Tensor(Tensor self, ...) -> Tensor").
  const char* schema = nullptr;
  Kernel cpu;
  Kernel cuda;
  // One kernel for every backend (views, metadata-only ops).
  Kernel all_backends;
  // Picks the backend of a factory from its arguments (no tensor inputs).
  Kernel backend_select;
  // The op in terms of other ops: the op's definition when it has no backend
  // kernel, otherwise what trace's decomposition table may replace it with.
  Facet<Kernel> decomposition;
  Facet<Kernel> derivative;
  Facet<Kernel> batching;
  Facet<ShapeFn> shape;
  Facet<FlopFn> flops;
  // A view's layout from its argument's (Note [View layouts]): only the views
  // that select or slice give it.
  ViewLayoutFn view_layout = nullptr;

  // Whether the row's decomposition is its definition (no backend kernel).
  bool is_composite() const {
    return decomposition.has_value() && !cpu.valid() && !cuda.valid() && !all_backends.valid();
  }
};

// The rows of one op family, registered for the program's life:
//   const OpFamily kBinaryOps("elementwise_binary", {OpDef{...}, ...});
class OpFamily {
 public:
  OpFamily(const char* family, std::vector<OpDef> rows, const char* ns = "strata");
  OpFamily(const OpFamily&) = delete;
  OpFamily& operator=(const OpFamily&) = delete;
  ~OpFamily();

 private:
  struct Registrations;
  Registrations* registrations_;
};

// One registered row, as the completeness test and tools see it.
struct RegisteredOpDef {
  std::string name;  // "strata::add.Tensor"
  const char* family;
  const OpDef* def;
};
// Every row registered so far, in registration order.
std::vector<RegisteredOpDef> registered_op_defs();
// The row that defined `op`, or null for an op registered without one (a
// user's STRATA_LIBRARY, a test's op).
const OpDef* find_op_def(const OperatorHandle& op);
const OpDef* find_op_def(const OperatorName& name);

}  // namespace strata
