#include "transforms/functionalize/functional_tensor.h"

#include "transforms/view_tracking.h"

namespace strata::functionalization {
namespace {

// Some dim of size > 1 with stride 0: two indices name one element.
bool has_overlap(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.strides()[static_cast<size_t>(d)] == 0 && t.sizes()[static_cast<size_t>(d)] > 1) {
      return true;
    }
  }
  return false;
}

}  // namespace

FunctionalTensorWrapper::FunctionalTensorWrapper(Tensor value, int64_t level)
    : FunctionalTensorWrapper(value, level, std::make_shared<FunctionalBase>(), {}, false) {
  base_->overlapping = has_overlap(value);
  base_->storage = value.impl()->underlying_storage();
  base_->value = std::move(value);
}

FunctionalTensorWrapper::FunctionalTensorWrapper(Tensor value, int64_t level,
                                                 std::shared_ptr<FunctionalBase> base,
                                                 std::vector<ViewStep> steps, bool may_overlap)
    : TensorImpl(DispatchKeySet(DispatchKey::Functionalize), value.dtype(), value.device()),
      level_(level),
      base_(std::move(base)),
      steps_(std::move(steps)),
      may_overlap_(may_overlap),
      generation_(base_->generation),
      root_strides_(base_->value.defined() ? base_->value.strides() : IntArrayRef()),
      root_offset_(base_->value.defined() ? base_->value.storage_offset() : 0) {
  set_value(std::move(value));
}

void FunctionalTensorWrapper::set_value(Tensor value) {
  value_ = std::move(value);
  copy_shape_from(*value_.impl());
  generation_ = base_->generation;
}

bool FunctionalTensorWrapper::root_layout_unchanged() const {
  return base_->value.strides() == IntArrayRef(root_strides_) &&
         base_->value.storage_offset() == root_offset_;
}

Tensor make_functional(Tensor value, int64_t level) {
  return Tensor(IntrusivePtr<TensorImpl>::adopt_new(new FunctionalTensorWrapper(std::move(value), level)));
}

Tensor make_functional_view(Tensor value, const FunctionalTensorWrapper& base, ViewStep step,
                            int64_t level) {
  std::vector<ViewStep> steps = base.steps();
  const bool overlap = base.may_overlap() || view_may_overlap(step.op);
  steps.push_back(std::move(step));
  return Tensor(IntrusivePtr<TensorImpl>::adopt_new(new FunctionalTensorWrapper(
      std::move(value), level, base.base(), std::move(steps), overlap)));
}

}  // namespace strata::functionalization
