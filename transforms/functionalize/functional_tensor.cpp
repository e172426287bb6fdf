#include "transforms/functionalize/functional_tensor.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "tensor/allocator.h"
#include "tensor/error.h"
#include "tensor/small_vector.h"
#include "transforms/view_tracking.h"

namespace strata::functionalization {
bool may_share_elements(IntArrayRef sizes, IntArrayRef strides) {
  if (checked_numel(sizes) <= 1) return false;
  // Dims of size > 1 from the smallest stride up: each must step past every
  // element the smaller ones reach.
  DimVector order;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1) order.push_back(static_cast<int64_t>(d));
  }
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return strides[a] < strides[b]; });
  int64_t reach = 0;  // the largest offset the smaller-stride dims reach
  for (int64_t d : order) {
    if (strides[d] <= reach) return true;
    reach += (sizes[d] - 1) * strides[d];
  }
  return false;
}

// A contiguous layout (most values) has none, without sorting its dims.
bool may_share_elements(const Tensor& t) {
  return !t.is_contiguous() && may_share_elements(t.sizes(), t.strides());
}

namespace {
// The watch epoch: a base's serial is the epoch it was made in, and a watch
// begins a new one, so a base made before a watch has a smaller serial. Making
// a base only reads it (no locked add per result).
std::atomic<uint64_t> epoch{1};
}  // namespace

thread_local constinit WriteWatch* WriteWatch::tls_watch_ = nullptr;

WriteWatch::WriteWatch(int64_t level)
    : first_serial_(epoch.fetch_add(1, std::memory_order_relaxed) + 1),
      level_(level),
      outer_(tls_watch_) {
  tls_watch_ = this;
}

WriteWatch::~WriteWatch() { tls_watch_ = outer_; }

void WriteWatch::note_write(const FunctionalBase& base) {
  if (tls_watch_ != nullptr && base.serial < tls_watch_->first_serial_) tls_watch_->wrote_earlier_ = true;
}

void WriteWatch::argument(Tensor& value, uint64_t serial, int64_t level) {
  if (level != level_ || serial >= first_serial_ || !value.defined()) return;
  tls_watch_ = nullptr;  // the replacement's own calls are not the function's
  try {
    earlier_argument(value);
  } catch (...) {
    tls_watch_ = this;
    throw;
  }
  tls_watch_ = this;
}

void* FunctionalBase::operator new(size_t nbytes) { return cached_host_allocate(nbytes); }

void FunctionalBase::operator delete(void* ptr, size_t nbytes) {
  cached_host_deallocate(ptr, nbytes);
}

FunctionalTensorWrapper::FunctionalTensorWrapper(Tensor value, int64_t level)
    : TensorImpl(DispatchKeySet(DispatchKey::Functionalize), value.dtype(), value.device()),
      level_(level),
      base_(nullptr),
      view_(false),
      may_overlap_(false),
      generation_(0) {
  // Owned here until the wrapper joins it.
  auto base = std::make_unique<FunctionalBase>();
  base->serial = epoch.load(std::memory_order_relaxed);
  base->overlapping = may_share_elements(value);
  base->storage = Storage(const_cast<StorageImpl*>(value.impl()->underlying_storage()));
  base->value = std::move(value);
  copy_shape_from(*base->value.impl());
  over_root_memory_ = base->value.impl()->has_storage();
  base_ = base.release();
  join_members();
}

FunctionalTensorWrapper::FunctionalTensorWrapper(Tensor value, int64_t level,
                                                 const FunctionalTensorWrapper& parent,
                                                 std::vector<ViewStep> steps, bool may_overlap,
                                                 bool addresses_memory)
    : TensorImpl(DispatchKeySet(DispatchKey::Functionalize), value.dtype(), value.device()),
      level_(level),
      base_(parent.base_),
      steps_(std::move(steps)),
      view_(true),
      may_overlap_(may_overlap),
      generation_(base_->generation) {
  if (addresses_memory) record_root_layout();
  set_value(std::move(value));
  join_members();
}

FunctionalTensorWrapper::FunctionalTensorWrapper(Tensor value, int64_t level,
                                                 const FunctionalTensorWrapper& parent,
                                                 const OperatorHandle& op, const ViewIntArgs& args)
    : TensorImpl(DispatchKeySet(DispatchKey::Functionalize), value.dtype(), value.device()),
      value_(std::move(value)),
      level_(level),
      base_(parent.base_),
      last_step_(std::in_place, op, args),
      view_(true),
      may_overlap_(parent.may_overlap_),
      generation_(base_->generation),
      value_epoch_(base_->value_epoch) {
  if (parent.view_) steps_ = parent.steps();
  if (parent.addresses_memory()) record_root_layout();
  copy_shape_from(*value_.impl());
  over_root_memory_ = over_root_memory(value_);
  join_members();
}

void FunctionalTensorWrapper::record_root_layout() {
  root_layout_ = std::make_unique<const RootLayout>(
      RootLayout{DimVector(base_->value.strides()), base_->value.storage_offset()});
}

bool FunctionalTensorWrapper::over_root_memory(const Tensor& value) const {
  const Tensor& root = base_->value;
  return root.defined() && value.impl()->has_storage() && root.impl()->has_storage() &&
         value.impl()->storage().get() == root.impl()->storage().get();
}

void FunctionalTensorWrapper::join_members() {
  next_member_ = base_->members;
  if (next_member_ != nullptr) next_member_->prev_member_ = this;
  base_->members = this;
}

FunctionalTensorWrapper::~FunctionalTensorWrapper() {
  if (prev_member_ != nullptr) {
    prev_member_->next_member_ = next_member_;
  } else {
    base_->members = next_member_;
  }
  if (next_member_ != nullptr) {
    next_member_->prev_member_ = prev_member_;
  }
  if (base_->members == nullptr) delete base_;
}

// The root's value is held by the base alone (Note [A root's value]); each
// view wrapper's value is a tensor of its own over the same memory, held by
// that wrapper alone; the memory is also held by `storage` while it is the
// first value's. Any other holder raises a count past these.
bool FunctionalBase::held_only_by_family() const {
  const TensorImpl* root = value.impl();
  if (!root->has_storage()) return false;
  const StorageImpl* memory = root->storage().get();
  uint32_t root_holders = 1;
  uint32_t memory_holders = storage.get() == memory ? 2 : 1;
  for (const FunctionalTensorWrapper* w = members; w != nullptr; w = w->next_member()) {
    if (!w->is_view()) continue;
    const TensorImpl* v = w->value().impl();
    if (v == nullptr) continue;
    if (v == root) {
      ++root_holders;
    } else if (v->has_storage() && v->storage().get() == memory) {
      if (v->use_count() != 1) return false;
      ++memory_holders;
    }
  }
  return root->use_count() == root_holders && memory->use_count() == memory_holders;
}

void FunctionalTensorWrapper::set_value(Tensor value) {
  const Tensor& root = base_->value;
  generation_ = base_->generation;
  value_epoch_ = base_->value_epoch;
  if (!view_) {
    STRATA_CHECK(value.impl() == root.impl(), "functionalize",
                 "internal: a root wrapper was given a value other than its base's");
    copy_shape_from(*root.impl());
    over_root_memory_ = root.impl()->has_storage();
    return;
  }
  value_ = std::move(value);
  copy_shape_from(*value_.impl());
  over_root_memory_ = over_root_memory(value_);
}

bool FunctionalTensorWrapper::root_layout_unchanged() const {
  return base_->value.strides() == IntArrayRef(root_layout_->strides) &&
         base_->value.storage_offset() == root_layout_->offset;
}

Tensor make_functional(Tensor value, int64_t level) {
  return Tensor(
      IntrusivePtr<TensorImpl>::adopt_new(new FunctionalTensorWrapper(std::move(value), level)));
}

Tensor make_functional_view(Tensor value, const FunctionalTensorWrapper& base, ViewStep step,
                            int64_t level, bool shares_elements) {
  std::vector<ViewStep> steps;
  steps.reserve(base.steps().size() + 1);
  steps.insert(steps.end(), base.steps().begin(), base.steps().end());
  const bool addresses_memory =
      base.addresses_memory() || step.op.operator_name().name == "strata::as_strided";
  steps.push_back(std::move(step));
  const bool overlap = base.may_overlap() || shares_elements;
  return Tensor(IntrusivePtr<TensorImpl>::adopt_new(new FunctionalTensorWrapper(
      std::move(value), level, base, std::move(steps), overlap, addresses_memory)));
}

// The one step a typed kernel leaves unboxed is never as_strided (whose view
// may overlap: it has no typed kernel), so the view addresses memory only
// where its parent does.
Tensor make_functional_view(Tensor value, const FunctionalTensorWrapper& base,
                            const OperatorHandle& op, const ViewIntArgs& args, int64_t level) {
  return Tensor(IntrusivePtr<TensorImpl>::adopt_new(
      new FunctionalTensorWrapper(std::move(value), level, base, op, args)));
}

void FunctionalTensorWrapper::box_last_step() const {
  Stack args;
  args.reserve(last_step_->args.size);
  for (uint8_t i = 0; i < last_step_->args.size; ++i) {
    if (last_step_->args.is_none(i)) {
      args.emplace_back();
    } else {
      args.emplace_back(last_step_->args.values[i]);
    }
  }
  steps_.push_back(ViewStep{last_step_->op, std::move(args), -1});
  last_step_.reset();
}

}  // namespace strata::functionalization
