#include "func/functionalize/functionalize_call.h"

#include "ops/ops.h"
#include "tensor/error.h"

namespace strata::functionalization {

FunctionalizeCall::FunctionalizeCall(Remove remove)
    : remove_(remove),
      scope_(std::make_unique<LayerScope>(std::make_shared<FunctionalizeInterpreter>(remove))) {}

FunctionalizeCall::~FunctionalizeCall() = default;

Tensor FunctionalizeCall::wrap(const Tensor& input) {
  if (!input.defined()) return input;
  Tensor wrapped = make_functional(input, scope_->level());
  inputs_.push_back({input, wrapped});
  return wrapped;
}

Tensor FunctionalizeCall::unwrap_output(const Tensor& output) const {
  FunctionalTensorWrapper* w = functional_at_level(output, scope_->level());
  if (w == nullptr) return output;
  sync(*w, remove_);
  if (remove_ == Remove::MutationsAndViews) {
    // A view made as one (Note [Views removed, seen by no one]) gets memory of
    // its own, as a _copy op gives it.
    const Tensor& root = w->base()->value;
    if (w->is_view() && w->value().impl()->underlying_storage() != nullptr &&
        w->value().impl()->underlying_storage() == root.impl()->underlying_storage()) {
      BelowTopLayer below;
      return w->value().clone();
    }
    // An op that may return its input itself (contiguous, to) leaves the value
    // an input's: the output gets memory of its own, as a _copy op gives it.
    for (const Input& input : inputs_) {
      if (input.original.defined() && w->value().defined() &&
          input.original.impl()->underlying_storage() == w->value().impl()->underlying_storage()) {
        BelowTopLayer below;
        return w->value().clone();
      }
    }
  }
  return w->value();
}

void FunctionalizeCall::finish() {
  std::vector<std::pair<Tensor, Tensor>> writes;
  for (const Input& input : inputs_) {
    const FunctionalBase& base = *as_functional(input.wrapper)->base();
    if (base.generation == 0) continue;
    // Eager code writing one input would change every input sharing its
    // memory; the function saw them as unrelated tensors.
    for (const Input& other : inputs_) {
      STRATA_CHECK(&other == &input || other.original.impl()->underlying_storage() !=
                                           input.original.impl()->underlying_storage(),
                   "functionalize", "the function writes into an input of shape ",
                   shape_string(input.original.sizes()),
                   " that shares memory with another input (of shape ",
                   shape_string(other.original.sizes()),
                   "); functionalize cannot give eager's values: pass separate tensors");
    }
    writes.emplace_back(input.original, base.value);
  }
  scope_.reset();
  for (const auto& [original, value] : writes) original.copy_(value);
}

}  // namespace strata::functionalization
