#pragma once

#include <cstdint>

namespace strata {

// Note [No grad inside a transform]
// NoGradGuard stops recording for the grad (and vjp) levels that exist when it is
// made: inside a function under grad, the ops in its scope are constants to that
// grad, and to any grad around it. A grad started inside the guard's scope has a
// higher level than any that existed, so it records as usual: a guard outside a
// transform does not disable the transform. Forward mode (jvp) is unaffected, as
// tangents are not recorded. Guards nest, each restoring the previous limit.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  int64_t previous_;
};

namespace autograd {
// Grad levels at or below this one record nothing on this thread (0: none).
int64_t no_grad_through_level();
}  // namespace autograd

}  // namespace strata
