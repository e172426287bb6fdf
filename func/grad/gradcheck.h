#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace strata::testing {

// A function of a list of tensors returning a list of tensors: what gradcheck
// differentiates. Floating-point inputs are differentiated; the others (indices,
// masks) are passed through as constants. Non-floating outputs are ignored.
using TensorListFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct GradcheckOptions {
  double eps = 1e-6;  // at least 1e-3 where an output is Float32 (see gradcheck)
  double atol = 1e-5;
  double rtol = 1e-3;
  // Inputs x outputs elements above which the full Jacobian is replaced by
  // random-direction checks <u, J v> = <J^T u, v>.
  int64_t max_jacobian_entries = 4096;
  int random_directions = 3;
  uint64_t seed = 0;
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // what differed, where, by how much
  explicit operator bool() const { return ok; }
};

// Reverse mode against central finite differences, in Float64 (inputs of other
// floating dtypes are converted first): the Jacobian grad computes through vjp
// must match the numerical one.
GradcheckResult gradcheck(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

// Forward mode against central finite differences, in Float64: the Jacobian-vector
// products jvp computes (columns of J, or random directions for large J) must
// match the numerical ones.
GradcheckResult jvpcheck(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                         const GradcheckOptions& options = {});

// Second order: gradcheck of x, u -> J(x)^T u, i.e. of the backward pass itself.
GradcheckResult gradgradcheck(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});

// Forward over reverse: jvpcheck of x, u -> J(x)^T u, i.e. the forward formulas
// of the ops the backward pass calls (what hessian = jacfwd(jacrev) runs).
GradcheckResult jvpgradcheck(const TensorListFunction& f, const std::vector<Tensor>& inputs,
                             const GradcheckOptions& options = {});

}  // namespace strata::testing
