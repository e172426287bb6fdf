#include "transforms/layer_stack.h"

#include <sstream>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "tensor/error.h"

namespace strata {

namespace {

// initial-exec: every op inside a transform reads the stack several times, and
// the library is linked, not dlopen'ed (see Note [Thread-local key sets]).
thread_local std::vector<DynamicLayer> tls_layers __attribute__((tls_model("initial-exec")));
thread_local int64_t tls_last_level __attribute__((tls_model("initial-exec"))) = 0;

constexpr DispatchKeySet kFront{DispatchKey::DynamicLayerFront};
constexpr DispatchKeySet kBack{DispatchKey::DynamicLayerBack};

// Takes the top layer off the stack for the duration of a call that goes on to
// the layers below, and puts it back (with the key sets it had) afterwards,
// also when the call throws.
class PoppedLayer {
 public:
  PoppedLayer() : layer_(std::move(tls_layers.back())), restore_(local_dispatch_key_set()) {
    tls_layers.pop_back();
    local_dispatch_key_set() = layer_.saved_key_sets;
  }
  ~PoppedLayer() {
    tls_layers.push_back(std::move(layer_));
    local_dispatch_key_set() = restore_;
  }
  PoppedLayer(const PoppedLayer&) = delete;
  PoppedLayer& operator=(const PoppedLayer&) = delete;

 private:
  DynamicLayer layer_;
  LocalDispatchKeySet restore_;
};

void front_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  tls_layers.back().interpreter->process(op, keys, stack);
}

void back_fallback(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  tls_layers.back().interpreter->send_to_next(op, stack);
}

STRATA_LIBRARY_IMPL(_, DynamicLayerFront, m) {
  m.fallback(KernelFunction::from_boxed(&front_fallback));
}
STRATA_LIBRARY_IMPL(_, DynamicLayerBack, m) {
  m.fallback(KernelFunction::from_boxed(&back_fallback));
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
  LocalDispatchKeySet& local = local_dispatch_key_set();
  const DispatchKeySet hidden = (kAllTransformKeys - this->keys()) | kFront;
  local.excluded = local.excluded | hidden;
  local.included = local.included | kBack;
  op.redispatch_boxed((keys | kBack) - hidden, stack);
}

void Interpreter::send_to_next(const OperatorHandle& op, Stack& stack) {
  call_below_top_layer(op, argument_keys(op, stack), stack);
}

void call_below_top_layer(const OperatorHandle& op, DispatchKeySet tensor_keys, Stack& stack) {
  PoppedLayer popped;
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

bool layer_stack_empty() { return tls_layers.empty(); }

const DynamicLayer& top_layer(const char* what) {
  STRATA_CHECK(!tls_layers.empty(), what, "no transform is running on this thread");
  return tls_layers.back();
}

std::string describe_layer_stack() {
  std::ostringstream out;
  for (size_t i = tls_layers.size(); i-- > 0;) {
    out << to_string(tls_layers[i].interpreter->kind()) << "(level " << tls_layers[i].level << ")";
    if (i > 0) out << " > ";
  }
  return out.str();
}

LayerScope::LayerScope(std::shared_ptr<Interpreter> interpreter)
    : level_(++tls_last_level), depth_(tls_layers.size()) {
  tls_layers.push_back({level_, std::move(interpreter), local_dispatch_key_set()});
  local_dispatch_key_set().included |= kFront;
}

LayerScope::~LayerScope() { pop(); }

void LayerScope::pop() {
  if (popped_) return;
  popped_ = true;
  // Scopes nest, so the layers above this one are already gone; resizing (rather
  // than popping one) keeps the stack right even if one was left behind.
  if (tls_layers.size() <= depth_) return;
  local_dispatch_key_set() = tls_layers[depth_].saved_key_sets;
  tls_layers.resize(depth_);
}

}  // namespace strata
