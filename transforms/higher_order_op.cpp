#include "transforms/higher_order_op.h"

#include <map>
#include <mutex>

#include "dispatcher/dispatch_mode.h"
#include "tensor/error.h"
#include "transforms/layer_stack.h"

namespace strata {

namespace {
struct Registry {
  std::mutex mutex;
  std::map<std::string, const HigherOrderOperator*> ops;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

const char* to_string(HopKey key) {
  switch (key) {
    case HopKey::Backend: return "Backend";
    case HopKey::Grad: return "Grad";
    case HopKey::Jvp: return "Jvp";
    case HopKey::Vmap: return "Vmap";
    case HopKey::Functionalize: return "Functionalize";
    case HopKey::Trace: return "Trace";
    case HopKey::Fake: return "Fake";
  }
  return "?";
}

HigherOrderOperator::HigherOrderOperator(std::string name) : name_(std::move(name)) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  STRATA_CHECK(r.ops.emplace(name_, this).second, name_.c_str(),
               "a higher-order operator of this name is already registered");
}

HigherOrderOperator::~HigherOrderOperator() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.ops.erase(name_);
}

HigherOrderOperator& HigherOrderOperator::impl(HopKey key, Impl fn) {
  STRATA_CHECK(fn != nullptr, name_.c_str(), "the implementation for key ", to_string(key), " is empty");
  STRATA_CHECK(!has_impl(key), name_.c_str(), "an implementation for key ", to_string(key),
               " is already registered");
  impls_[index(key)] = std::move(fn);
  return *this;
}

HigherOrderOperator& HigherOrderOperator::impl(std::initializer_list<HopKey> keys,
                                               const Impl& fn) {
  for (HopKey key : keys) impl(key, fn);
  return *this;
}

std::vector<Tensor> HigherOrderOperator::operator()(const HopArgs& args) const {
  return call(current_hop_key(), args);
}

std::vector<Tensor> HigherOrderOperator::call(HopKey key, const HopArgs& args) const {
  const Impl& fn = impls_[index(key)];
  if (!fn) {
    std::string registered;
    for (size_t k = 0; k < kNumHopKeys; ++k) {
      if (!impls_[k]) continue;
      registered += registered.empty() ? "" : ", ";
      registered += to_string(static_cast<HopKey>(k));
    }
    STRATA_FAIL(name_.c_str(), "no implementation for key ", to_string(key), " (layer stack: ",
                layer_stack_empty() ? std::string("empty") : describe_layer_stack(),
                "); implementations exist for: ", registered.empty() ? "none" : registered);
  }
  return fn(*this, args);
}

HopKey current_hop_key() {
  // A recording mode sits below every transform, but inline rules above it
  // would still hand it the ops of one branch: it decides first.
  if (!modes_allow_inline_higher_order_ops()) return HopKey::Trace;
  return inline_hop_key();
}

HopKey inline_hop_key() {
  if (layer_stack_empty()) return HopKey::Backend;
  switch (top_layer("higher-order operator").interpreter->kind()) {
    case TransformKind::Grad: return HopKey::Grad;
    case TransformKind::Jvp: return HopKey::Jvp;
    case TransformKind::Vmap: return HopKey::Vmap;
    case TransformKind::Functionalize: return HopKey::Functionalize;
    case TransformKind::Trace: return HopKey::Trace;
  }
  return HopKey::Backend;
}

const HigherOrderOperator* find_higher_order_op(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : it->second;
}

}  // namespace strata
