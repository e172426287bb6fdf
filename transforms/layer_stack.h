#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "dispatcher/ivalue.h"
#include "dispatcher/local_dispatch_key_set.h"
#include "tensor/error.h"

namespace strata {

class OperatorHandle;

// Note [The dynamic layer stack]
// Each running transform is a layer {level, interpreter}. While the stack is not
// empty every call carries DynamicLayerFront (thread-local include; but see Note
// [Layers entered directly]), whose boxed
// fallback hands the call to the top layer's interpreter. The interpreter runs
// its own keys' kernels (Autograd for grad, Batched for vmap) with the other
// transforms' keys excluded, and everything not handled there reaches the
// DynamicLayerBack fallback: it unwraps this level's TensorWrappers, pops the
// layer while the call goes on to the next layer (or the backend), and wraps
// the results at this level. Levels are unique process-wide and increase: a
// newer layer has a higher level than every layer below it, and a level is never
// reused, so a tensor from a finished transform, or from another thread's, can
// never be mistaken for one of the calling thread's live layers.
//
// Note [Layers entered directly]
// The front fallback exists because the top layer must see a call first,
// whatever the priority of its key among the tensors' keys. A layer whose
// interpreter enters_directly() makes that true by the key sets instead: while
// it is on top the thread includes its own keys, not DynamicLayerFront, and
// excludes the other transforms' keys and Mode, so its key is the highest of
// every call and its kernels are reached by one lookup, without the front
// fallback's pass-through and second lookup. Its kernels then do everything the
// front fallback would (a boxed fallback at its key calls process()). A layer
// pushed on top starts from the key sets as they were before the direct
// layer's adjustments, plus DynamicLayerFront; popping a layer for a call
// restores the key sets from before it was pushed, as for any layer.

enum class TransformKind : uint8_t { Grad, Jvp, Vmap, Functionalize, Trace };
const char* to_string(TransformKind kind);

// What a transform does with the calls that reach its layer. A new transform is
// a new Interpreter, not a change to the stack.
class Interpreter {
 public:
  virtual ~Interpreter() = default;
  virtual TransformKind kind() const = 0;
  // The dispatch keys this transform's kernels live at (excluded while another
  // transform's layer is processing a call).
  virtual DispatchKeySet keys() const = 0;
  // Called by the front fallback with this layer on top. The default runs the
  // call with this interpreter's keys enabled and the other transforms' disabled.
  virtual void process(const OperatorHandle& op, DispatchKeySet keys, Stack& stack);
  // Whether process() is the default for `op`: then typed calls skip it and
  // its boxing (Note [Pass-through kernels]). An interpreter that overrides
  // process() says here for which ops.
  virtual bool default_process(const OperatorHandle&) const { return true; }
  // Whether calls reach this layer's keys directly while it is on top (Note
  // [Layers entered directly]): every op then has a kernel at its keys, or
  // their backend fallback calls process().
  virtual bool enters_directly() const { return false; }
  // Called by the back fallback with this layer on top: passes the call on to
  // the layers below. The default pops the layer for the call (see call_below_top_layer).
  virtual void send_to_next(const OperatorHandle& op, Stack& stack);
  // Whether send_to_next() is the default (the arguments go below unchanged),
  // so typed calls may pop the layer without boxing.
  virtual bool default_send_to_next() const { return true; }
};

struct DynamicLayer {
  int64_t level = 0;
  std::shared_ptr<Interpreter> interpreter;
  // The thread-local key sets from before the layer was pushed; restored while
  // the layer is popped for a call and when it is removed.
  LocalDispatchKeySet saved_key_sets;
  // The keys hidden while this layer processes a call: the other transforms'
  // keys and DynamicLayerFront.
  DispatchKeySet hidden_keys;
};

// The keys every transform kernel lives at.
inline constexpr DispatchKeySet kAllTransformKeys{DispatchKey::AutogradCPU,
                                                  DispatchKey::AutogradCUDA, DispatchKey::Batched,
                                                  DispatchKey::Functionalize};

// Takes the top layer off the stack for a scope, with the key sets from before
// it was pushed, and puts it back (with the key sets it had) afterwards, also
// when the scope throws. Code computing on a level's unwrapped values (a
// forward-mode formula) runs under it, so its ops go straight to the layers below.
class BelowTopLayer {
 public:
  BelowTopLayer();
  ~BelowTopLayer();
  BelowTopLayer(const BelowTopLayer&) = delete;
  BelowTopLayer& operator=(const BelowTopLayer&) = delete;
};

// Runs `op` on the stack's arguments with the top layer popped and the key sets
// from before it was pushed, dispatching on `tensor_keys` (the keys of the
// arguments as they are now); the layer is back when it returns or throws.
void call_below_top_layer(const OperatorHandle& op, DispatchKeySet tensor_keys, Stack& stack);
// Enables the top layer's keys for a call it processes (excludes the other
// transforms' keys and DynamicLayerFront, includes DynamicLayerBack); returns
// the keys to redispatch with. The caller restores the key sets afterwards.
DispatchKeySet enter_top_layer(DispatchKeySet keys);
// The keys of the tensor arguments at the top of the stack.
DispatchKeySet argument_keys(const OperatorHandle& op, const Stack& stack);

namespace detail {
// The calling thread's top live layer and how many layers are live: read on
// every call of a layer entered directly, so a plain initial-exec thread_local
// (no guard, no __tls_get_addr), kept by the stack's pushes and pops.
struct LiveLayers {
  const DynamicLayer* top = nullptr;
  size_t depth = 0;
};
extern thread_local constinit LiveLayers tls_live_layers __attribute__((tls_model("initial-exec")));
[[noreturn]] void fail_no_layer(const char* what);
}  // namespace detail

// Layer stack of the calling thread.
inline bool layer_stack_empty() { return detail::tls_live_layers.depth == 0; }
// The top layer, or null when no transform runs.
inline const DynamicLayer* top_layer_or_null() { return detail::tls_live_layers.top; }
// The top layer; throws when the stack is empty (`what` names the caller).
inline const DynamicLayer& top_layer(const char* what) {
  const DynamicLayer* top = detail::tls_live_layers.top;
  if (__builtin_expect(top == nullptr, 0)) detail::fail_no_layer(what);
  return *top;
}
// The number of layers running on this thread, and the kind of the i-th from the
// bottom (outermost first), for tools that report where a call ran.
inline size_t layer_stack_depth() { return detail::tls_live_layers.depth; }
TransformKind layer_kind(size_t i);
// "grad(level 3) > vmap(level 2)" for errors and the dispatch trace.
std::string describe_layer_stack();

// Rethrows e with the transform and the running layers appended ("... [raised
// inside vmap (layers: vmap(level 2) > grad(level 1)); note]"), unless its
// message names the top layer already (an inner transform added it, or it is
// the transform's own message).
[[noreturn]] void rethrow_in_transform(const Error& e, const char* transform,
                                       const std::string& note);

// Calls f() (the user's function under `transform`'s layer); an error it
// raises names the transform, the layers and note() (built only then).
template <class F, class Note>
decltype(auto) call_in_transform(const char* transform, F&& f, Note&& note) {
  try {
    return f();
  } catch (const Error& e) {
    rethrow_in_transform(e, transform, note());
  }
}
template <class F>
decltype(auto) call_in_transform(const char* transform, F&& f) {
  return call_in_transform(transform, std::forward<F>(f), [] { return std::string(); });
}

// Pushes a layer for a transform and pops it on destruction, restoring the stack
// and the thread-local key sets also when an exception unwinds through it.
class LayerScope {
 public:
  explicit LayerScope(std::shared_ptr<Interpreter> interpreter);
  ~LayerScope();
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

  int64_t level() const { return level_; }
  // Ends the layer early (before the scope ends); idempotent.
  void pop();

 private:
  int64_t level_;
  size_t depth_;
  bool popped_ = false;
};

}  // namespace strata
