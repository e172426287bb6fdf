#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace strata {

// Note [Custom functions]
// A custom function is a forward plus whichever rules the user gives, each a
// std::function over flat lists in argument order:
//   forward(inputs) -> outputs
//   vjp(inputs, outputs, cotangents) -> one gradient per input (undefined: none)
//   jvp(inputs, tangents) -> one tangent per output
//   vmap(inputs, in_dims) -> {outputs, out_dims}   (std::nullopt: not batched)
// A call is handled one transform level at a time, from the top of the layer
// stack down, as an operator's kernels would be: at a grad level the inputs are
// unwrapped, the rest of the stack handles the call, and a backward node that
// calls `vjp` becomes the outputs' grad_fn; at a jvp level the outputs' tangents
// come from `jvp`; at a vmap level `vmap` gets the unwrapped values and their
// batch dims. The rules run with ordinary ops at the level below, so every outer
// level transforms them (grad of a vjp rule is a second derivative).
//
// A rule left out is derived:
//   no vmap: the function applied to the unwrapped values is another custom
//     function whose forward and rules are the vmapped forward and rules (batch
//     dim 0 out; gradients of unbatched inputs summed over the batch);
//   no jvp: J·t from the vjp rule by linearity: vjp is linear in its
//     cotangents, so the vjp of ct -> vjp(x, y, ct) at the tangents is J·t;
//   no vjp (and no jvp for jvp levels): the forward's own ops are differentiated.
// Other transforms (functionalize, trace) see the forward's ops.
using CustomForward = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;
using CustomVjp = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs,
                                                    const std::vector<Tensor>& outputs,
                                                    const std::vector<Tensor>& cotangents)>;
using CustomJvp = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs,
                                                    const std::vector<Tensor>& tangents)>;
using BatchDims = std::vector<std::optional<int64_t>>;
using CustomVmap = std::function<std::pair<std::vector<Tensor>, BatchDims>(
    const std::vector<Tensor>& inputs, const BatchDims& in_dims)>;

struct CustomFunctionRules {
  CustomVjp vjp = {};
  CustomJvp jvp = {};
  CustomVmap vmap = {};
  // Names the function in errors.
  std::string name = "custom_function";
};

namespace custom {
struct FunctionImpl;
}

class CustomFunction {
 public:
  CustomFunction(CustomForward forward, CustomFunctionRules rules);
  explicit CustomFunction(std::shared_ptr<const custom::FunctionImpl> impl)
      : impl_(std::move(impl)) {}

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  const std::string& name() const;

 private:
  std::shared_ptr<const custom::FunctionImpl> impl_;
};

CustomFunction custom_function(CustomForward forward, CustomFunctionRules rules = {});

}  // namespace strata
