#include "func/jvp/jvp_call.h"

#include "ops/creation.h"
#include "tensor/error.h"
#include "transforms/jvp/jvp_interpreter.h"
#include "transforms/tensor_wrapper.h"
#include "transforms/view_tracking.h"

namespace strata::forward {

JvpCall::JvpCall(const char* transform)
    : scope_(std::make_shared<JvpInterpreter>()), transform_(transform) {}

void JvpCall::end(const std::vector<Tensor>& outputs) {
  if (!layer_stack_empty() && top_layer("end").level == level()) refresh_stale_views(outputs, level());
  scope_.pop();
}

Tensor JvpCall::enter(const Tensor& primal, const Tensor& tangent, size_t argnum) {
  STRATA_CHECK(primal.defined(), transform_, "primal argument ", argnum,
               " holds an undefined tensor");
  STRATA_CHECK(tangent.defined(), transform_, "the tangent of primal argument ", argnum,
               " is undefined");
  STRATA_CHECK(is_floating_point(primal.dtype()), transform_, "primal argument ", argnum,
               " (shape ", shape_string(primal.sizes()), ") has dtype ", to_string(primal.dtype()),
               "; only floating-point tensors have tangents (level ", level(), ")");
  STRATA_CHECK(tangent.sizes() == primal.sizes() && tangent.dtype() == primal.dtype(), transform_,
               "the tangent of primal argument ", argnum, " has shape ",
               shape_string(tangent.sizes()), " and dtype ", to_string(tangent.dtype()),
               ", but the primal has shape ", shape_string(primal.sizes()), " and dtype ",
               to_string(primal.dtype()), " (level ", level(), ")");
  Tensor wrapped = wrap_at_level(primal, level());
  static_cast<TensorWrapper*>(wrapped.impl())->autograd().tangent = tangent;
  return wrapped;
}

void JvpCall::check_leaf_count(size_t argnum, size_t primal_leaves, size_t tangent_leaves) const {
  STRATA_CHECK(primal_leaves == tangent_leaves, transform_, "primal argument ", argnum, " holds ",
               primal_leaves, " tensors but its tangent holds ", tangent_leaves,
               "; primals and tangents must have the same tree shape");
}

Tensor JvpCall::primal(const Tensor& out) const { return unwrap_at_level(out, level()); }

Tensor JvpCall::tangent(const Tensor& out) const {
  const TensorWrapper* w = wrapper_at_level(out, level());
  if (w != nullptr && w->autograd().tangent.defined()) return w->autograd().tangent;
  return zeros_like(primal(out));
}

void check_tangents(const char* transform, const std::vector<Tensor>& primals,
                    const std::vector<Tensor>& tangents) {
  STRATA_CHECK(primals.size() == tangents.size(), transform, "expected ", primals.size(),
               " tangent tensors (one per primal), got ", tangents.size());
  for (size_t i = 0; i < primals.size(); ++i) {
    const Tensor& p = primals[i];
    const Tensor& t = tangents[i];
    STRATA_CHECK(t.defined(), transform, "tangent ", i, " is undefined");
    STRATA_CHECK(t.sizes() == p.sizes() && t.dtype() == p.dtype(), transform, "tangent ", i,
                 " has shape ", shape_string(t.sizes()), " and dtype ", to_string(t.dtype()),
                 ", but primal ", i, " has shape ", shape_string(p.sizes()), " and dtype ",
                 to_string(p.dtype()));
  }
}

}  // namespace strata::forward
