#include "transforms/layer_stack.h"

#include <atomic>
#include <sstream>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "tensor/error.h"

namespace strata {

namespace {

// Levels are counted process-wide, not per thread: a tensor that one thread's
// live transform leaks to another thread then carries a level no layer of that
// thread has, instead of being taken for a layer of its own.
std::atomic<int64_t> g_last_level{0};

// A layer popped for a call that went below it, with the key sets to restore.
struct PoppedLayerState {
  DynamicLayer layer;
  LocalDispatchKeySet restore;
};

// The calling thread's stack, the layers popped for calls below them, and the
// key sets from before each unboxed front call.
struct LayerStackState {
  std::vector<DynamicLayer> layers;
  std::vector<PoppedLayerState> popped;
  std::vector<LocalDispatchKeySet> front_saved;
};

// A thread_local with a destructor is reached through a guard in the
// general-dynamic TLS model (a __tls_get_addr call on every access); the hot
// path instead reads a plain initial-exec pointer to it, set on first use.
thread_local LayerStackState tls_state_owner;
thread_local LayerStackState* tls_state __attribute__((tls_model("initial-exec"))) = nullptr;

LayerStackState& state() {
  if (__builtin_expect(tls_state == nullptr, 0)) tls_state = &tls_state_owner;
  return *tls_state;
}

constexpr DispatchKeySet kFront{DispatchKey::DynamicLayerFront};
constexpr DispatchKeySet kBack{DispatchKey::DynamicLayerBack};

void pop_top_layer() {
  LayerStackState& s = state();
  s.popped.push_back({std::move(s.layers.back()), local_dispatch_key_set()});
  s.layers.pop_back();
  local_dispatch_key_set() = s.popped.back().layer.saved_key_sets;
}

void restore_top_layer() noexcept {
  LayerStackState& s = state();
  PoppedLayerState& popped = s.popped.back();
  s.layers.push_back(std::move(popped.layer));
  local_dispatch_key_set() = popped.restore;
  s.popped.pop_back();
}

}  // namespace

DispatchKeySet enter_top_layer(DispatchKeySet keys) {
  const DispatchKeySet hidden = state().layers.back().hidden_keys;
  LocalDispatchKeySet& local = local_dispatch_key_set();
  local.excluded = local.excluded | hidden;
  local.included = local.included | kBack;
  return (keys | kBack) - hidden;
}

namespace {

PassThrough::Next front_enter(const OperatorHandle& op, DispatchKeySet keys, DispatchKeySet& next) {
  const Interpreter& top = *state().layers.back().interpreter;
  if (!top.default_process(op)) return PassThrough::Next::Decline;
  state().front_saved.push_back(local_dispatch_key_set());
  next = enter_top_layer(keys) | top.default_process_keys();
  return PassThrough::Next::WithKeys;
}

void front_leave() noexcept {
  local_dispatch_key_set() = state().front_saved.back();
  state().front_saved.pop_back();
}

PassThrough::Next back_enter(const OperatorHandle&, DispatchKeySet, DispatchKeySet&) {
  if (!state().layers.back().interpreter->default_send_to_next()) return PassThrough::Next::Decline;
  pop_top_layer();
  return PassThrough::Next::RecomputeKeys;
}

void front_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  state().layers.back().interpreter->process(op, keys, stack);
}

void back_fallback(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  state().layers.back().interpreter->send_to_next(op, stack);
}

STRATA_LIBRARY_IMPL(_, DynamicLayerFront, m) {
  m.fallback(
      KernelFunction::from_boxed_with_pass_through(&front_fallback, {&front_enter, &front_leave}));
}
STRATA_LIBRARY_IMPL(_, DynamicLayerBack, m) {
  m.fallback(KernelFunction::from_boxed_with_pass_through(&back_fallback,
                                                          {&back_enter, &restore_top_layer}));
}

const bool kTraceContextInstalled = (set_dispatch_trace_context(&describe_layer_stack), true);

}  // namespace

const char* to_string(TransformKind kind) {
  switch (kind) {
    case TransformKind::Grad: return "grad";
    case TransformKind::Jvp: return "jvp";
    case TransformKind::Vmap: return "vmap";
    case TransformKind::Functionalize: return "functionalize";
    case TransformKind::Trace: return "trace";
  }
  return "?";
}

void Interpreter::process(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  LocalDispatchKeySetRestorer restore;
  op.redispatch_boxed(enter_top_layer(keys), stack);
}

void Interpreter::send_to_next(const OperatorHandle& op, Stack& stack) {
  call_below_top_layer(op, argument_keys(op, stack), stack);
}

BeforeFrontEntered::BeforeFrontEntered() : entered_(local_dispatch_key_set()) {
  STRATA_CHECK(!state().front_saved.empty(), "transforms",
               "internal: no typed call entered the top layer");
  local_dispatch_key_set() = state().front_saved.back();
}
BeforeFrontEntered::~BeforeFrontEntered() { local_dispatch_key_set() = entered_; }

BelowTopLayer::BelowTopLayer() { pop_top_layer(); }
BelowTopLayer::~BelowTopLayer() { restore_top_layer(); }

void call_below_top_layer(const OperatorHandle& op, DispatchKeySet tensor_keys, Stack& stack) {
  BelowTopLayer below;
  op.redispatch_boxed(compute_dispatch_keys(tensor_keys, op.entry()), stack);
}

DispatchKeySet argument_keys(const OperatorHandle& op, const Stack& stack) {
  DispatchKeySet keys;
  const size_t first = stack.size() - op.schema().arguments().size();
  for (size_t i = first; i < stack.size(); ++i) {
    const IValue& arg = stack[i];
    if (arg.is_tensor()) {
      if (arg.to_tensor().defined()) keys |= arg.to_tensor().key_set();
    } else if (arg.is_tensor_list()) {
      for (const Tensor& t : arg.to_tensor_list()) {
        if (t.defined()) keys |= t.key_set();
      }
    }
  }
  return keys;
}

bool layer_stack_empty() { return state().layers.empty(); }

size_t layer_stack_depth() { return state().layers.size(); }

TransformKind layer_kind(size_t i) { return state().layers.at(i).interpreter->kind(); }

const DynamicLayer& top_layer(const char* what) {
  STRATA_CHECK(!state().layers.empty(), what, "no transform is running on this thread");
  return state().layers.back();
}

std::string describe_layer_stack() {
  std::ostringstream out;
  for (size_t i = state().layers.size(); i-- > 0;) {
    out << to_string(state().layers[i].interpreter->kind()) << "(level " << state().layers[i].level
        << ")";
    if (i > 0) out << " > ";
  }
  return out.str();
}

void rethrow_in_transform(const Error& e, const char* transform, const std::string& note) {
  std::string message = e.what();
  if (layer_stack_empty()) throw e;
  const DynamicLayer& top = state().layers.back();
  const std::string top_name =
      std::string(to_string(top.interpreter->kind())) + "(level " + std::to_string(top.level) + ")";
  if (message.find(top_name) != std::string::npos) throw e;
  message += std::string(" [raised inside ") + transform + " (layers: " + describe_layer_stack() +
             ")" + (note.empty() ? "" : "; " + note) + "]";
  throw Error(message);
}

LayerScope::LayerScope(std::shared_ptr<Interpreter> interpreter)
    : level_(g_last_level.fetch_add(1, std::memory_order_relaxed) + 1),
      depth_(state().layers.size()) {
  const DispatchKeySet hidden = (kAllTransformKeys - interpreter->keys()) | kFront;
  state().layers.push_back({level_, std::move(interpreter), local_dispatch_key_set(), hidden});
  local_dispatch_key_set().included |= kFront;
}

LayerScope::~LayerScope() { pop(); }

void LayerScope::pop() {
  if (popped_) return;
  popped_ = true;
  // Scopes nest, so the layers above this one are already gone; resizing (rather
  // than popping one) keeps the stack right even if one was left behind.
  if (state().layers.size() <= depth_) return;
  local_dispatch_key_set() = state().layers[depth_].saved_key_sets;
  state().layers.resize(depth_);
}

}  // namespace strata
