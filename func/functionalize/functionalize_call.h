#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "func/functionalize/functionalize_interpreter.h"
#include "tensor/tensor.h"
#include "transforms/layer_stack.h"

namespace strata::functionalization {

// The non-template part of one functionalize call: pushes the layer, wraps the
// inputs, unwraps the outputs, and writes the inputs that the function wrote
// back into them, once each, after the layer is gone.
class FunctionalizeCall {
 public:
  explicit FunctionalizeCall(Remove remove);
  ~FunctionalizeCall();
  FunctionalizeCall(const FunctionalizeCall&) = delete;
  FunctionalizeCall& operator=(const FunctionalizeCall&) = delete;

  Tensor wrap(const Tensor& input);
  // An output's value (the layer still on top); a tensor not of the level is
  // returned as it is.
  Tensor unwrap_output(const Tensor& output) const;
  // Pops the layer and writes back the inputs.
  void finish();

 private:
  struct Input {
    Tensor original;
    Tensor wrapper;
  };
  Remove remove_;
  std::unique_ptr<LayerScope> scope_;
  std::vector<Input> inputs_;
};

}  // namespace strata::functionalization
