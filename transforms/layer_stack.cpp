#include "transforms/layer_stack.h"

#include <atomic>
#include <deque>
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

// A layer of the calling thread's stack. A layer popped for a call that went
// below it stays where it is, marked popped, with the key sets to restore: a
// pop and its restore (once per call a layer passes on) then move nothing.
struct LayerEntry {
  DynamicLayer layer;
  size_t index = 0;  // in LayerStackState::entries
  LocalDispatchKeySet restore;
  // Whether the layer is entered directly (Note [Layers entered directly]), and
  // how its push changed the key sets it started from: the keys it added to
  // the include and exclude sets, and its own keys it took out of the exclude set.
  bool direct = false;
  LocalDispatchKeySet direct_added{{}, {}};
  DispatchKeySet direct_unexcluded;
  bool popped = false;
  // The layer popped before this one (restores come in the reverse order of pops).
  LayerEntry* previous_popped = nullptr;
};

// The calling thread's layers, popped or not, the live (not popped) ones
// forming the stack; and the key sets from before each unboxed front call.
// Pops and restores nest with the layers' scopes: every layer pushed while one
// is popped is removed before that one is restored, so the layer restored lies
// above every live one.
// A deque: pushing or removing a layer at the end moves none of the others, so
// the pointers below, and a reference to a layer (top_layer()) held across a
// call that starts a transform, stay valid.
struct LayerStackState {
  std::deque<LayerEntry> entries;
  LayerEntry* top = nullptr;  // the top live layer; null: none live
  LayerEntry* last_popped = nullptr;
  std::vector<LocalDispatchKeySet> front_saved;

  DynamicLayer& top_layer() { return top->layer; }
  // Sets the top live layer and how many are live (mirrored in tls_live_layers).
  void set_top(LayerEntry* entry, size_t live) {
    top = entry;
    detail::tls_live_layers = {entry != nullptr ? &entry->layer : nullptr, live};
  }
  static size_t live() { return detail::tls_live_layers.depth; }
  // The top live layer below index `end`, or null.
  LayerEntry* live_top_below(size_t end) {
    while (end > 0 && entries[end - 1].popped) --end;
    return end > 0 ? &entries[end - 1] : nullptr;
  }
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
  LayerEntry& entry = *s.top;
  LocalDispatchKeySet& local = local_dispatch_key_set();
  entry.restore = local;
  entry.popped = true;
  entry.previous_popped = s.last_popped;
  s.last_popped = &entry;
  local = entry.layer.saved_key_sets;
  s.set_top(s.live_top_below(entry.index), s.live() - 1);
}

void restore_top_layer() noexcept {
  LayerStackState& s = state();
  LayerEntry& entry = *s.last_popped;
  entry.popped = false;
  s.last_popped = entry.previous_popped;
  local_dispatch_key_set() = entry.restore;
  s.set_top(&entry, s.live() + 1);
}

DispatchKeySet enter_layer(const DynamicLayer& layer, DispatchKeySet keys) {
  LocalDispatchKeySet& local = local_dispatch_key_set();
  local.excluded = local.excluded | layer.hidden_keys;
  local.included = local.included | kBack;
  return (keys | kBack) - layer.hidden_keys;
}

PassThrough::Next front_enter(const OperatorHandle& op, DispatchKeySet keys, DispatchKeySet& next) {
  LayerStackState& s = state();
  const DynamicLayer& layer = s.top_layer();
  const Interpreter& top = *layer.interpreter;
  if (!top.default_process(op)) return PassThrough::Next::Decline;
  s.front_saved.push_back(local_dispatch_key_set());
  next = enter_layer(layer, keys);
  return PassThrough::Next::WithKeys;
}

void front_leave() noexcept {
  LayerStackState& s = state();
  local_dispatch_key_set() = s.front_saved.back();
  s.front_saved.pop_back();
}

PassThrough::Next back_enter(const OperatorHandle&, DispatchKeySet, DispatchKeySet&) {
  if (!state().top_layer().interpreter->default_send_to_next()) return PassThrough::Next::Decline;
  pop_top_layer();
  return PassThrough::Next::RecomputeKeys;
}

void front_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  state().top_layer().interpreter->process(op, keys, stack);
}

void back_fallback(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  state().top_layer().interpreter->send_to_next(op, stack);
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

DispatchKeySet enter_top_layer(DispatchKeySet keys) {
  return enter_layer(state().top_layer(), keys);
}

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

TransformKind layer_kind(size_t i) {
  size_t seen = 0;
  for (const LayerEntry& entry : state().entries) {
    if (!entry.popped && seen++ == i) return entry.layer.interpreter->kind();
  }
  STRATA_FAIL("transforms", "internal: no layer ", i, " in a stack of ", seen);
}

namespace detail {
thread_local constinit LiveLayers tls_live_layers;

void fail_no_layer(const char* what) {
  STRATA_FAIL(what, "no transform is running on this thread");
}
}  // namespace detail

std::string describe_layer_stack() {
  std::ostringstream out;
  bool first = true;
  for (size_t i = state().entries.size(); i-- > 0;) {
    const LayerEntry& entry = state().entries[i];
    if (entry.popped) continue;
    if (!first) out << " > ";
    first = false;
    out << to_string(entry.layer.interpreter->kind()) << "(level " << entry.layer.level << ")";
  }
  return out.str();
}

void rethrow_in_transform(const Error& e, const char* transform, const std::string& note) {
  std::string message = e.what();
  if (layer_stack_empty()) throw e;
  const DynamicLayer& top = state().top_layer();
  const std::string top_name =
      std::string(to_string(top.interpreter->kind())) + "(level " + std::to_string(top.level) + ")";
  if (message.find(top_name) != std::string::npos) throw e;
  message += std::string(" [raised inside ") + transform + " (layers: " + describe_layer_stack() +
             ")" + (note.empty() ? "" : "; " + note) + "]";
  throw Error(message);
}

LayerScope::LayerScope(std::shared_ptr<Interpreter> interpreter)
    : level_(g_last_level.fetch_add(1, std::memory_order_relaxed) + 1),
      depth_(state().entries.size()) {
  const DispatchKeySet keys = interpreter->keys();
  const DispatchKeySet hidden = (kAllTransformKeys - keys) | kFront;
  const bool direct = interpreter->enters_directly();
  LayerStackState& s = state();
  LocalDispatchKeySet& local = local_dispatch_key_set();
  // The key sets this layer starts from: without the adjustments of a layer
  // entered directly below it (Note [Layers entered directly]).
  LocalDispatchKeySet start = local;
  if (s.top != nullptr && s.top->direct) {
    const LayerEntry& below = *s.top;
    start.included = start.included - below.direct_added.included;
    start.excluded = (start.excluded - below.direct_added.excluded) | below.direct_unexcluded;
  }
  s.entries.push_back({{level_, std::move(interpreter), local, hidden}, depth_, {}});
  LayerEntry& entry = s.entries.back();
  s.set_top(&entry, s.live() + 1);
  if (direct) {
    const DispatchKeySet excluded =
        (start.excluded | (hidden - kFront) | DispatchKeySet(DispatchKey::Mode)) - keys;
    entry.direct = true;
    entry.direct_added = {keys - start.included, excluded - start.excluded};
    entry.direct_unexcluded = start.excluded & keys;
    local.included = (start.included - kFront) | keys;
    local.excluded = excluded;
  } else {
    local.included = start.included | kFront;
    local.excluded = start.excluded;
  }
}

LayerScope::~LayerScope() { pop(); }

void LayerScope::pop() {
  if (popped_) return;
  popped_ = true;
  // Scopes nest, so the layers above this one are already gone; resizing (rather
  // than popping one) keeps the stack right even if one was left behind.
  LayerStackState& s = state();
  if (s.entries.size() <= depth_) return;
  local_dispatch_key_set() = s.entries[depth_].layer.saved_key_sets;
  size_t live = s.live();
  for (size_t i = depth_; i < s.entries.size(); ++i) {
    if (!s.entries[i].popped) --live;
  }
  while (s.last_popped != nullptr && s.last_popped->index >= depth_) {
    s.last_popped = s.last_popped->previous_popped;
  }
  s.entries.resize(depth_);
  s.set_top(s.live_top_below(depth_), live);
}

}  // namespace strata
