#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "func/custom/custom_function.h"

namespace strata::custom {

// A custom function's forward and rules, shared by its copies, by the backward
// nodes of its calls and by the vmapped functions derived from it.
struct FunctionImpl {
  CustomForward forward;
  CustomFunctionRules rules;

  // The function that stands for this one one vmap level down, for arguments
  // batched along `in_dims`: the vmapped forward and rules (see Note [Custom
  // functions]); made once per distinct in_dims and kept with this function.
  std::shared_ptr<const FunctionImpl> vmapped(const BatchDims& in_dims) const;

 private:
  mutable std::mutex mutex_;
  mutable std::map<BatchDims, std::shared_ptr<const FunctionImpl>> vmapped_;
};

// Handles a call of `f` at the top layer of the stack and, through it, below.
std::vector<Tensor> call(const std::shared_ptr<const FunctionImpl>& f,
                         const std::vector<Tensor>& inputs);

// Checks that a vjp rule gave one gradient per input, each (where defined) with
// its input's shape and dtype; throws naming the function and the input.
void check_gradients(const FunctionImpl& f, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& grads);

// One tangent per output from the vjp rule, by linearity (Note [Custom functions]).
std::vector<Tensor> jvp_from_vjp(const FunctionImpl& f, const std::vector<Tensor>& primals,
                                 const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& tangents);

}  // namespace strata::custom
