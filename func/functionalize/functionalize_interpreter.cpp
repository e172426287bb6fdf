#include "func/functionalize/functionalize_interpreter.h"

#include <optional>
#include <string>
#include <unordered_map>

#include "dispatcher/dispatch_mode.h"
#include "dispatcher/dispatcher.h"
#include "dispatcher/op_def.h"
#include "ops/ops.h"
#include "ops/shape.h"
#include "tensor/error.h"
#include "transforms/view_tracking.h"

namespace strata::functionalization {
namespace {

// Replaces this level's wrappers among the arguments by their (synced) values.
void unwrap_arguments(Stack& stack, size_t first, int64_t level, Remove remove) {
  auto unwrap = [&](Tensor& t) {
    FunctionalTensorWrapper* w = functional_at_level(t, level);
    const uint64_t serial = w != nullptr ? w->base()->serial : 0;  // 0: from outside the level
    if (w != nullptr) {
      sync(*w, remove);
      t = w->value();
    }
    WriteWatch::note_argument(t, serial, level);
  };
  for_each_tensor_argument(stack, first, unwrap);
}

void wrap_results(Stack& stack, size_t first, int64_t level) {
  for_each_tensor_argument(stack, first, [level](Tensor& t) {
    if (t.defined()) t = make_functional(std::move(t), level);
  });
}

bool same_arguments(const FunctionSchema& a, const FunctionSchema& b) {
  if (a.arguments().size() != b.arguments().size()) return false;
  for (size_t i = 0; i < a.arguments().size(); ++i) {
    if (!(a.arguments()[i].type == b.arguments()[i].type)) return false;
  }
  return true;
}

// add_.Tensor -> add.Tensor: the op of the same name without the trailing '_'
// and the same arguments, if there is one.
std::optional<OperatorHandle> out_of_place_variant(const OperatorHandle& op) {
  thread_local std::unordered_map<const OperatorEntry*, std::optional<OperatorHandle>> cache;
  auto [it, inserted] = cache.try_emplace(&op.entry());
  if (!inserted) return it->second;
  std::string name = op.operator_name().name;
  if (name.empty() || name.back() != '_') return std::nullopt;
  name.pop_back();
  const auto matches = [&](const std::optional<OperatorHandle>& v) {
    return v && !v->entry().returned_argument_index() && same_arguments(v->schema(), op.schema());
  };
  const Dispatcher& dispatcher = Dispatcher::singleton();
  std::optional<OperatorHandle> variant = dispatcher.find_schema({name, op.operator_name().overload_name});
  if (!matches(variant)) {
    // Some pairs differ in overload name, as in PyTorch (pow_.Tensor and
    // pow.Tensor_Tensor): then the overload with the same arguments.
    variant.reset();
    for (const OperatorName& other : dispatcher.registered_operators()) {
      if (other.name != name) continue;
      std::optional<OperatorHandle> candidate = dispatcher.find_schema(other);
      if (matches(candidate)) variant = candidate;
    }
  }
  if (matches(variant)) it->second = variant;
  return it->second;
}

// Whether an in-place op may store a value of dtype `from` into a tensor of
// dtype `to` (PyTorch's rule: no floating value into an integer tensor, nothing
// but Bool into a Bool one).
bool can_store(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  return from == kBool || to != kBool;
}

// Calls `op` boxed on self and `args`; its (single) result.
Tensor call_step(const OperatorHandle& op, Tensor self, const Stack& args, int64_t list_index) {
  Stack stack;
  stack.reserve(args.size() + 1);
  stack.emplace_back(std::move(self));
  stack.insert(stack.end(), args.begin(), args.end());
  op.call_boxed(stack);
  return list_index < 0 ? stack[0].to_tensor()
                        : stack[0].to_tensor_list()[static_cast<size_t>(list_index)];
}

// The value the written argument has after `op` (its arguments unwrapped at
// stack[first...]), computed out of place below the level: copy_ and fill_ by
// what they write, other ops by their out-of-place variant when its result has
// the argument's shape and a dtype the argument can store (it is cast to the
// argument's). Otherwise the in-place op would fail (a broadcast self, a cast it
// refuses): it runs on a copy, which gives eager's error, or eager's value for
// an op without an out-of-place variant.
Tensor new_value(const OperatorHandle& op, const Stack& stack, size_t first, size_t written) {
  BelowTopLayer below;
  const Tensor& old = stack[first + written].to_tensor();
  const std::string& name = op.operator_name().name;
  if (name == "strata::copy_") {
    static const OperatorHandle expand_copy =
        *Dispatcher::singleton().find_schema({"strata::expand_copy", ""});
    return call_step(expand_copy, stack[first + 1].to_tensor().to(old.dtype()),
                     {old.sizes().vec()}, -1);
  }
  if (name == "strata::fill_") return full_like(old, stack[first + 1].to_scalar());
  const auto args_begin = stack.begin() + static_cast<std::ptrdiff_t>(first);
  if (std::optional<OperatorHandle> variant = out_of_place_variant(op)) {
    Stack out(args_begin, stack.end());
    variant->call_boxed(out);
    const Tensor& result = out[0].to_tensor();
    if (result.sizes() == old.sizes() && can_store(result.dtype(), old.dtype())) {
      return result.dtype() == old.dtype() ? result : result.to(old.dtype());
    }
  }
  Stack args(args_begin, stack.end());
  Tensor copy = old.clone();
  args[written] = copy;
  op.call_boxed(args);
  return copy;
}

// The _copy form of a view op (select.int -> select_copy.int), if it has one.
std::optional<OperatorHandle> copy_variant(const OperatorHandle& op) {
  thread_local std::unordered_map<const OperatorEntry*, std::optional<OperatorHandle>> cache;
  auto [it, inserted] = cache.try_emplace(&op.entry());
  if (inserted) {
    it->second = Dispatcher::singleton().find_schema(
        {op.operator_name().name + "_copy", op.operator_name().overload_name});
  }
  return it->second;
}

// The view ops [begin, end) applied to `base`; with MutationsAndViews each by
// its _copy form (select_copy, ...), so that no value below the level aliases another.
Tensor replay(const ViewStep* begin, const ViewStep* end, Tensor base, Remove remove) {
  for (const ViewStep* step = begin; step != end; ++step) {
    if (remove == Remove::Mutations) {
      base = call_step(step->op, std::move(base), step->args, step->list_index);
    } else if (std::optional<OperatorHandle> copy = copy_variant(step->op)) {
      base = call_step(*copy, std::move(base), step->args, step->list_index);
    } else {
      base = call_step(step->op, std::move(base), step->args, step->list_index).clone();
    }
  }
  return base;
}

Tensor replay(const std::vector<ViewStep>& steps, Tensor base, Remove remove) {
  return replay(steps.data(), steps.data() + steps.size(), std::move(base), remove);
}

std::optional<int64_t> optional_int(const IValue& v) {
  return v.is_none() ? std::nullopt : std::optional<int64_t>(v.to_int());
}

// `value` rearranged by the view op `name` (a rearranging view: transpose,
// permute, view), as a view of it or with MutationsAndViews as a _copy op.
Tensor rearrange(const char* name, const char* overload, const Tensor& value, Stack args,
                 Remove remove) {
  const std::string op_name = std::string(name) + (remove == Remove::Mutations ? "" : "_copy");
  const std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema({op_name, overload});
  STRATA_CHECK(op.has_value(), "functionalize", "internal: no operator ", op_name);
  return call_step(*op, value, args, -1);
}

// `value` (of `base`'s number of elements) in `base`'s shape.
Tensor reshaped(const Tensor& value, const Tensor& base, Remove remove) {
  if (remove == Remove::Mutations) return value.reshape(base.sizes().vec());
  const Tensor v = value.is_contiguous() ? value : value.clone();
  return rearrange("strata::view", "", v, {base.sizes().vec()}, remove);
}

// `base` with the part that `step` views replaced by `value` (of the view's
// shape), computed out of place: the step's scatter form, or for a step that
// rearranges every element, the inverse rearrangement of `value`. None for a
// step without either (stop_gradient: see OpFunctionalize's named exception,
// tests/op_table).
std::optional<Tensor> scatter_step(const ViewStep& step, const Tensor& base, const Tensor& value,
                                   Remove remove) {
  const std::string& name = step.op.operator_name().name;
  const Stack& a = step.args;
  if (name == "strata::select") return select_scatter(base, value, a[0].to_int(), a[1].to_int());
  if (name == "strata::slice") {
    return slice_scatter(base, value, a[0].to_int(), optional_int(a[1]), optional_int(a[2]),
                         a[3].to_int());
  }
  if (name == "strata::narrow") {
    const int64_t dim = wrap_dim(a[0].to_int(), base.dim(), "strata::narrow");
    const int64_t start = a[1].to_int() < 0 ? a[1].to_int() + base.sizes()[dim] : a[1].to_int();
    return slice_scatter(base, value, dim, start, start + a[2].to_int(), 1);
  }
  if (name == "strata::diagonal") {
    return diagonal_scatter(base, value, a[0].to_int(), a[1].to_int(), a[2].to_int());
  }
  if (name == "strata::as_strided") {
    return as_strided_scatter(base, value, a[0].to_int_list(), a[1].to_int_list(),
                              optional_int(a[2]));
  }
  if (name == "strata::transpose") return rearrange("strata::transpose", "int", value, a, remove);
  if (name == "strata::t") return rearrange("strata::t", "", value, {}, remove);
  // split's and unbind's steps (recorded with MutationsAndViews, where they run
  // as split_copy and unbind_copy) name their piece by list_index.
  if (name == "strata::split") {
    const int64_t dim = wrap_dim(a[1].to_int(), base.dim(), "strata::split");
    const int64_t start = step.list_index * a[0].to_int();
    return slice_scatter(base, value, dim, start, start + value.sizes()[dim], 1);
  }
  if (name == "strata::unbind") return select_scatter(base, value, a[0].to_int(), step.list_index);
  if (name == "strata::permute") {
    const std::vector<int64_t>& dims = a[0].to_int_list();
    const int64_t rank = base.dim();
    std::vector<int64_t> inverse(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      inverse[static_cast<size_t>(wrap_dim(dims[i], rank, "strata::permute"))] =
          static_cast<int64_t>(i);
    }
    return rearrange("strata::permute", "", value, {inverse}, remove);
  }
  if (name == "strata::view" || name == "strata::unsqueeze" || name == "strata::squeeze") {
    return reshaped(value, base, remove);
  }
  // A write through an expand reaches this only when no two of the view's
  // elements share memory (write() refuses the rest): it adds dims of size 1,
  // or has no elements at all.
  if (name == "strata::expand") {
    return value.numel() == base.numel() ? reshaped(value, base, remove) : base;
  }
  return std::nullopt;
}

// The root's new value once `value` is written into the view `steps` make of
// `root`, built from the view back to the root by scatter_step, so nothing is
// written in place; none if a step has no scatter form.
std::optional<Tensor> scatter_into_root(const std::vector<ViewStep>& steps, const Tensor& root,
                                        Tensor value, Remove remove) {
  std::vector<Tensor> bases{root};
  for (size_t k = 0; k + 1 < steps.size(); ++k) {
    bases.push_back(replay(&steps[k], &steps[k] + 1, bases.back(), remove));
  }
  for (size_t k = steps.size(); k-- > 0;) {
    std::optional<Tensor> up = scatter_step(steps[k], bases[k], value, remove);
    if (!up) return std::nullopt;
    value = remove == Remove::MutationsAndViews &&
                    up->impl()->underlying_storage() == value.impl()->underlying_storage()
                ? up->clone()
                : std::move(*up);
  }
  return value;
}

// Whether the view `op` made of a tensor of `self_numel` elements (`result`, or
// its copy when `copied`) has elements that share memory: for a copy, read
// from the op's arguments (expand, as_strided: view_may_overlap's ops).
bool view_shares_elements(const OperatorHandle& op, const Stack& args, const Tensor& result,
                          bool copied, int64_t self_numel) {
  if (!copied) return may_share_elements(result);
  if (op.operator_name().name == "strata::expand") return result.numel() > self_numel;
  return may_share_elements(args[0].to_int_list(), args[1].to_int_list());
}

// An op defined only by a decomposition (reshape, zero_, to) runs it at the
// level, so that the level sees its parts: whether reshape made a view or a copy,
// whether to() returned self.
bool decomposes(const OperatorEntry& entry) {
  return entry.has_kernel_for(DispatchKey::CompositeImplicitAutograd) &&
         !entry.has_kernel_for(DispatchKey::CompositeExplicitAutograd) &&
         !entry.has_kernel_for(DispatchKey::CPU) && !entry.has_kernel_for(DispatchKey::CUDA);
}

}  // namespace

bool only_layer() { return layer_stack_depth() == 1 && !dispatcher_watched(); }

bool writes_in_place(const FunctionalBase& base) {
  return only_layer() && base.held_only_by_family();
}

FunctionalizeInterpreter::FunctionalizeInterpreter(Remove remove) : remove_(remove) {
  register_typed_kernels();
}

void regenerate(FunctionalTensorWrapper& w, Remove remove) {
  const FunctionalBase& base = *w.base();
  if (!w.is_view()) {
    w.set_value(base.value);
    return;
  }
  // as_strided addresses memory, not elements: on a value laid out unlike the
  // root it was taken from, it would pick other elements.
  STRATA_CHECK(!w.addresses_memory() || w.root_layout_unchanged(), "functionalize",
               "cannot regenerate a view made by as_strided after its base (of shape ",
               shape_string(base.value.sizes()), ") was written at ", describe_layer_stack(),
               ": the written base is laid out with strides ", shape_string(base.value.strides()),
               ", not as when the view was taken; take the view after the write");
  BelowTopLayer below;
  w.set_value(replay(w.steps(), base.value, remove));
}

void sync_from_above(FunctionalTensorWrapper& w) {
  if (!w.is_stale()) return;
  STRATA_CHECK(!layer_stack_empty() && top_layer("functionalize").level >= w.level(),
               "functionalize", "a tensor of functionalize(level ", w.level(),
               ") was read after that transform returned (running: ", describe_layer_stack(), ")");
  const DynamicLayer& top = top_layer("functionalize");
  if (top.level > w.level()) {
    const BelowTopLayer below;
    sync_from_above(w);
    return;
  }
  const auto* interpreter = dynamic_cast<const FunctionalizeInterpreter*>(top.interpreter.get());
  STRATA_CHECK(interpreter != nullptr, "functionalize", "level ", w.level(),
               " is not a functionalize layer (running: ", describe_layer_stack(), ")");
  sync(w, interpreter->remove());
}

void FunctionalizeInterpreter::process(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  // A composite view with a _copy form (t, split, unbind) stays one op when views
  // are removed, so that its _copy form is what runs.
  if (decomposes(op.entry()) &&
      !(remove_ == Remove::MutationsAndViews && op.entry().returns_view() && copy_variant(op))) {
    // An op row's decomposition directly: its Functionalize key may hold its
    // typed kernel (Note [Typed functionalize kernels]), which would come back here.
    const OpDef* def = find_op_def(op);
    if (def != nullptr && def->decomposition.has_value()) {
      def->decomposition.value.function.call_boxed(op, DispatchKeySet(DispatchKey::Functionalize),
                                                   stack);
    } else {
      op.redispatch_boxed(DispatchKeySet(DispatchKey::Functionalize), stack);
    }
    return;
  }
  const int64_t level = top_layer("functionalize").level;
  const size_t first = stack.size() - op.schema().arguments().size();
  if (std::optional<size_t> written = op.entry().returned_argument_index()) {
    const IValue& target = stack[first + *written];
    if (target.is_tensor() && functional_at_level(target.to_tensor(), level)) {
      write(op, stack, first, *written, level);
      return;
    }
    // A write into a tensor from outside the level (a captured tensor) happens
    // as in eager code, and the op returns that tensor.
    unwrap_arguments(stack, first, level, remove_);
    call_below_top_layer(op, argument_keys(op, stack), stack);
    return;
  }
  if (op.entry().returns_view()) {
    if (stack[first].is_tensor() && functional_at_level(stack[first].to_tensor(), level)) {
      view(op, stack, first, level);
      return;
    }
    // A view of a tensor from outside the level (a captured tensor) stays one:
    // a write through it writes the captured tensor, as in eager code.
    call_below_top_layer(op, argument_keys(op, stack), stack);
    return;
  }
  unwrap_arguments(stack, first, level, remove_);
  call_below_top_layer(op, argument_keys(op, stack), stack);
  wrap_results(stack, first, level);
}

void FunctionalizeInterpreter::write(const OperatorHandle& op, Stack& stack, size_t first,
                                     size_t written, int64_t level) {
  const Tensor target_tensor = stack[first + written].to_tensor();
  FunctionalTensorWrapper& target = *as_functional(target_tensor);
  STRATA_CHECK(!target.may_overlap(), op.operator_name().to_string().c_str(),
               "writes into a tensor of shape ", shape_string(target.sizes()), " and strides ",
               shape_string(target.strides()),
               " whose elements share memory (an expanded input, or a view made by expand or "
               "as_strided) at ",
               describe_layer_stack(),
               ": functionalize cannot give it eager's values; write into a clone instead");
  FunctionalBase& base = *target.base();
  WriteWatch::note_write(base);
  // Tested before unwrapping, while the stack holds this level's wrappers and
  // not their values.
  const bool in_place = writes_in_place(base);
  unwrap_arguments(stack, first, level, remove_);
  if (in_place) {
    write_in_place(op, stack, first, written, target);
    stack.resize(first);
    stack.emplace_back(target_tensor);
    return;
  }
  const Tensor updated = new_value(op, stack, first, written);
  if (!target.is_view()) {
    base.value = updated;
    ++base.generation;
    ++base.value_epoch;
    target.set_value(updated);
  } else {
    Tensor root;
    {
      BelowTopLayer below;
      std::optional<Tensor> scattered =
          scatter_into_root(target.steps(), base.value, updated, remove_);
      if (scattered) {
        root = std::move(*scattered);
      } else {
        // No scatter form (stop_gradient): the region is written in a copy of the root.
        root = base.value.clone();
        replay_view(target.steps(), root).copy_(updated);
      }
    }
    base.value = std::move(root);
    ++base.generation;
    ++base.value_epoch;
    sync(target, remove_);
  }
  stack.resize(first);
  stack.emplace_back(target_tensor);
}

void FunctionalizeInterpreter::write_in_place(const OperatorHandle& op, Stack& stack,
                                              size_t first, size_t written,
                                              FunctionalTensorWrapper& target) {
  FunctionalBase& base = *target.base();
  IValue& self = stack[first + written];
  // The synced value of a view is a view of the root's memory, unless views
  // are removed (then it is a copy): the op writes through the view itself.
  const bool over_root =
      self.to_tensor().impl()->storage().get() == base.value.impl()->storage().get();
  if (!over_root) {
    BelowTopLayer below;
    self = replay_view(target.steps(), base.value);
  }
  const Tensor written_value = self.to_tensor();
  call_below_top_layer(op, argument_keys(op, stack), stack);
  ++base.generation;
  if (over_root) target.set_value(written_value);
}

void FunctionalizeInterpreter::view(const OperatorHandle& op, Stack& stack, size_t first,
                                    int64_t level) {
  const Tensor self_tensor = stack[first].to_tensor();
  const FunctionalTensorWrapper& self = *as_functional(self_tensor);
  unwrap_arguments(stack, first, level, remove_);
  Stack args(stack.begin() + static_cast<std::ptrdiff_t>(first) + 1, stack.end());
  // With MutationsAndViews the op's _copy form makes the value; whether the
  // view's elements would share memory follows from its arguments.
  const std::optional<OperatorHandle> copy =
      remove_ == Remove::MutationsAndViews ? copy_variant(op) : std::nullopt;
  const int64_t self_numel = stack[first].to_tensor().numel();
  call_below_top_layer(copy ? *copy : op, argument_keys(op, stack), stack);
  const bool one_result = stack.size() == first + 1 && stack[first].is_tensor();
  auto wrap = [&](Tensor& t, int64_t list_index) {
    if (!t.defined()) return;
    const bool shares_elements =
        view_may_overlap(op) && view_shares_elements(op, args, t, copy.has_value(), self_numel);
    if (remove_ == Remove::MutationsAndViews && !copy) {
      BelowTopLayer below;
      t = t.clone();
    }
    // A single result takes the arguments; each of several results copies them.
    ViewStep step{op, one_result ? std::move(args) : Stack(args), list_index};
    t = make_functional_view(std::move(t), self, std::move(step), level, shares_elements);
  };
  for (size_t i = first; i < stack.size(); ++i) {
    IValue& result = stack[i];
    if (result.is_tensor()) {
      wrap(result.to_tensor(), -1);
    } else if (result.is_tensor_list()) {
      std::vector<Tensor>& outs = result.to_tensor_list();
      for (size_t k = 0; k < outs.size(); ++k) wrap(outs[k], static_cast<int64_t>(k));
    }
  }
}

}  // namespace strata::functionalization
