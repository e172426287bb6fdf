#include "func/control_flow/lanes.h"

#include "func/functionalize/functionalize_interpreter.h"
#include "ops/elementwise.h"
#include "tensor/error.h"
#include "tensor/small_vector.h"
#include "tensor/storage.h"
#include "transforms/functionalize/functional_tensor.h"
#include "transforms/tensor_wrapper.h"
#include "transforms/vmap/batched_tensor.h"

namespace strata::control_flow {

namespace {

// The current value under a functionalize level's wrapper: one written
// through a view since it was last read (stale) is regenerated first, as any
// op reading it would (the view write's value, never the old one).
const Tensor& functional_value(functionalization::FunctionalTensorWrapper& f) {
  functionalization::sync_from_above(f);
  return f.value();
}

// The plain tensor under every grad, jvp, functionalize and vmap level of t:
// every lane of every vmap level is there, as a physical dim.
Tensor below_all_levels(const Tensor& t) {
  Tensor current = t;
  while (true) {
    if (const TensorWrapper* w = as_wrapper(current)) {
      current = w->value();
    } else if (const batching::BatchedTensorImpl* b = batching::as_batched(current)) {
      current = b->value();
    } else if (auto* f = functionalization::as_functional(current)) {
      current = functional_value(*f);
    } else {
      return current;
    }
  }
}

// t with its vmap and functionalize levels kept and its grad and jvp levels
// dropped: a constant to every grad and jvp level. nullopt when t has no grad
// or jvp level.
std::optional<Tensor> without_autodiff_levels(const Tensor& t) {
  if (const TensorWrapper* w = as_wrapper(t)) {
    return without_autodiff_levels(w->value()).value_or(w->value());
  }
  if (const batching::BatchedTensorImpl* b = batching::as_batched(t)) {
    std::optional<Tensor> inner = without_autodiff_levels(b->value());
    if (!inner) return std::nullopt;
    return batching::make_batched(*inner, b->bdim(), b->level());
  }
  if (auto* f = functionalization::as_functional(t)) {
    std::optional<Tensor> inner = without_autodiff_levels(functional_value(*f));
    if (!inner) return std::nullopt;
    return functionalization::make_functional(*inner, f->level());
  }
  return std::nullopt;
}

}  // namespace

bool batched_at_any_level(const Tensor& t) {
  Tensor current = t;
  while (true) {
    if (const TensorWrapper* w = as_wrapper(current)) {
      current = w->value();
    } else if (auto* f = functionalization::as_functional(current)) {
      current = functional_value(*f);
    } else {
      return batching::as_batched(current) != nullptr;
    }
  }
}

void check_predicate(const Tensor& pred, const char* op, const char* what) {
  STRATA_CHECK(pred.defined(), op, what, " is an undefined tensor");
  STRATA_CHECK(pred.dtype() == kBool && pred.dim() == 0, op, what,
               " must be a 0-dim Bool tensor, got shape ", shape_string(pred.sizes()),
               " and dtype ", to_string(pred.dtype()));
}

Tensor predicate_of(const char* op, const std::vector<Tensor>& cond_out) {
  STRATA_CHECK(cond_out.size() == 1, op, "cond_fn must return one tensor, got ", cond_out.size());
  check_predicate(cond_out.front(), op, "cond_fn's result");
  return cond_out.front();
}

std::optional<bool> concrete_predicate(const Tensor& pred) {
  if (batched_at_any_level(pred)) return std::nullopt;
  return below_all_levels(pred).item<bool>();
}

bool any_lane(const Tensor& pred) {
  for (bool lane : below_all_levels(pred).to_vector<bool>()) {
    if (lane) return true;
  }
  return false;
}

std::vector<Tensor> mask_untaken_lanes(const Tensor& pred, bool taken_when,
                                       const std::vector<Tensor>& operands) {
  std::vector<Tensor> masked;
  masked.reserve(operands.size());
  for (const Tensor& x : operands) {
    std::optional<Tensor> constant =
        is_floating_point(x.dtype()) ? without_autodiff_levels(x) : std::nullopt;
    if (!constant) {
      masked.push_back(x);
    } else {
      masked.push_back(taken_when ? where(pred, x, *constant) : where(pred, *constant, x));
    }
  }
  return masked;
}

std::vector<Tensor> select_lanes(const Tensor& pred, const std::vector<Tensor>& a,
                                 const std::vector<Tensor>& b) {
  std::vector<Tensor> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) out.push_back(where(pred, a[i], b[i]));
  return out;
}

namespace {

// Moves when t's memory is written. A functionalize level's write reaches no
// memory anyone else can read (at most its root's own, Note [Writing the root's
// memory]), so it does not count; with `functional` it does (a functional
// wrapper's generation moves with every write to it or its views).
uint64_t memory_version(const Tensor& t, bool functional) {
  if (!t.defined()) return 0;
  if (const auto* f = functionalization::as_functional(t); f != nullptr) {
    return functional ? f->base()->generation : 0;
  }
  const StorageImpl* storage = t.impl()->underlying_storage();
  return storage ? storage->version() : 0;
}

}  // namespace

std::vector<Tensor> call_without_writes(const char* op, const char* fn_name, const FlatFn& fn,
                                        const std::vector<Tensor>& args, const ArgNames& names,
                                        bool functionalized_too) {
  SmallVector<uint64_t, 8> before;
  for (const Tensor& t : args) before.push_back(memory_version(t, functionalized_too));
  std::vector<Tensor> out = fn(args);
  for (size_t i = 0; i < args.size(); ++i) {
    if (memory_version(args[i], functionalized_too) != before[i]) {
      fail_input_write(op, fn_name, names, i, args[i], "");
    }
  }
  return out;
}

void fail_input_write(const char* op, const char* fn_name, const ArgNames& names, size_t index,
                      const Tensor& arg, const std::string& how) {
  const bool first = index < names.first_count;
  STRATA_FAIL(op, fn_name, " writes its argument ", first ? names.first : names.rest, " leaf ",
              first ? index : index - names.first_count, " in place (",
              how.empty() ? std::string() : how + " on ", "shape ", shape_string(arg.sizes()), ", ",
              to_string(arg.dtype()),
              "), or memory that argument shares; a control-flow function must not write its "
              "inputs: compute a new tensor out of place, or call the operator under "
              "functionalize, which turns the write into a new value (not where the predicate "
              "differs per lane: each lane's function runs on a masked copy)");
}

void check_same_leaves(const char* op, const char* what, const char* expected_name,
                       const std::vector<Tensor>& expected, const char* got_name,
                       const std::vector<Tensor>& got) {
  STRATA_CHECK(expected.size() == got.size(), op, what, " differ in structure: ", expected_name,
               " has ", expected.size(), " tensor leaves, ", got_name, " has ", got.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor& e = expected[i];
    const Tensor& g = got[i];
    STRATA_CHECK(e.defined() && g.defined(), op, what, ": leaf ", i, " is undefined in ",
                 e.defined() ? got_name : expected_name);
    STRATA_CHECK(e.sizes() == g.sizes(), op, what, ": leaf ", i, " differs in shape: ",
                 expected_name, " has ", shape_string(e.sizes()), ", ", got_name, " has ",
                 shape_string(g.sizes()));
    STRATA_CHECK(e.dtype() == g.dtype(), op, what, ": leaf ", i, " differs in dtype: ",
                 expected_name, " has ", to_string(e.dtype()), ", ", got_name, " has ",
                 to_string(g.dtype()));
  }
}

}  // namespace strata::control_flow
