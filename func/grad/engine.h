#pragma once

#include <vector>

#include "tensor/tensor.h"
#include "transforms/grad/node.h"

namespace strata::autograd {

// Runs the backward pass from `roots` (seeded with `root_grads`) in topological
// order, adding up gradients that meet, and returns what reaches each sink
// (undefined where nothing does).
std::vector<Tensor> run_backward(const std::vector<Edge>& roots,
                                 const std::vector<Tensor>& root_grads,
                                 const std::vector<const Node*>& sinks);

}  // namespace strata::autograd
