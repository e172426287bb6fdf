#pragma once

#include <cstdint>

#include "transforms/functionalize/functional_tensor.h"
#include "transforms/layer_stack.h"

namespace strata {

// What functionalize removes (DESIGN.md: the public API).
enum class Remove : uint8_t {
  Mutations,          // in-place ops become out-of-place ones
  MutationsAndViews,  // and view ops return fresh tensors (view_copy semantics)
};

namespace functionalization {

// The interpreter of a functionalize layer (Note [Functional tensors]): every
// call that reaches it runs one level down on the wrappers' values, its outputs
// wrapped at the level; an in-place op on a wrapper computes the new value out
// of place and points the wrapper (and the views of its root) at it, or, when
// no one else can see the root's memory, writes it there (Note [Writing the
// root's memory]).
class FunctionalizeInterpreter final : public Interpreter {
 public:
  explicit FunctionalizeInterpreter(Remove remove);

  TransformKind kind() const override { return TransformKind::Functionalize; }
  DispatchKeySet keys() const override { return DispatchKeySet(DispatchKey::Functionalize); }
  void process(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) override;
  // Calls reach the Functionalize key's kernels directly (Note [Typed
  // functionalize kernels]).
  bool enters_directly() const override { return true; }

  Remove remove() const { return remove_; }

 private:
  void write(const OperatorHandle& op, Stack& stack, size_t first, size_t written, int64_t level);
  // The write of write() into the root's memory; the arguments are unwrapped.
  void write_in_place(const OperatorHandle& op, Stack& stack, size_t first, size_t written,
                      FunctionalTensorWrapper& target);
  void view(const OperatorHandle& op, Stack& stack, size_t first, int64_t level);

  Remove remove_;
};

// Brings a stale wrapper up to date with its root (the level's layer on top).
void regenerate(FunctionalTensorWrapper& w, Remove remove);
inline void sync(FunctionalTensorWrapper& w, Remove remove) {
  if (w.is_stale()) regenerate(w, remove);
}
// The same from code running above the wrapper's level (a control-flow
// operator under a transform that functionalize runs beneath): the layers
// above that level are off the stack while the view steps replay. Throws if
// the level is not running.
void sync_from_above(FunctionalTensorWrapper& w);

// Whether the level's layer is the only one and no dispatch mode watches: then
// nothing but kernels sees the ops it runs below itself.
bool only_layer();

// Whether a write into `base` may go in place into its memory (Note [Writing
// the root's memory]): only_layer(), and only the family holds the memory.
bool writes_in_place(const FunctionalBase& base);

// Note [Views removed, seen by no one]
// With Remove::MutationsAndViews no value below the level may alias another,
// so that what runs below holds no view op and no output aliases an input or
// another output. While only_layer() holds, nothing below sees the ops, so a
// view op's value is made as a view all the same (the typed kernels: cheap,
// and written through in place like any view); the output then gets memory of
// its own (FunctionalizeCall::unwrap_output). With a layer or mode below, the
// _copy op makes it.

// Registers the typed functionalize kernels, once (functionalize_typed.cpp).
void register_typed_kernels();

}  // namespace functionalization
}  // namespace strata
