#include "func/call_nesting.h"

#include <algorithm>

#include "dispatcher/dispatcher.h"
#include "dispatcher/op_def.h"
#include "transforms/layer_stack.h"

namespace strata {
namespace {

constexpr size_t kBitsPerLayer = 4;
constexpr size_t kPackedLayers = 14;

// The first defined tensor argument (or list element), or null.
const TensorImpl* first_tensor(const Stack& stack, size_t first) {
  for (size_t i = first; i < stack.size(); ++i) {
    const IValue& a = stack[i];
    if (a.is_tensor() && a.to_tensor().defined()) return a.to_tensor().impl();
    if (a.is_tensor_list()) {
      for (const Tensor& t : a.to_tensor_list()) {
        if (t.defined()) return t.impl();
      }
    }
  }
  return nullptr;
}

bool has_transform_tensor(const Stack& stack, size_t first) {
  auto is_transform = [](const Tensor& t) {
    return t.defined() && !(t.key_set() & kAllTransformKeys).empty();
  };
  for (size_t i = first; i < stack.size(); ++i) {
    const IValue& a = stack[i];
    if (a.is_tensor() && is_transform(a.to_tensor())) return true;
    if (a.is_tensor_list()) {
      for (const Tensor& t : a.to_tensor_list()) {
        if (is_transform(t)) return true;
      }
    }
  }
  return false;
}

void add_metas(const IValue& v, MetaList& out) {
  if (v.is_tensor()) {
    const Tensor& t = v.to_tensor();
    if (t.defined()) out.push_back({DimVector(t.sizes()), t.dtype()});
  } else if (v.is_tensor_list()) {
    for (const Tensor& t : v.to_tensor_list()) out.push_back({DimVector(t.sizes()), t.dtype()});
  }
}

}  // namespace

LayerPath LayerPath::current() {
  LayerPath path;
  path.depth_ = layer_stack_depth();
  for (size_t i = 0; i < path.depth_ && i < kPackedLayers; ++i) {
    const auto kind = static_cast<uint64_t>(layer_kind(i)) + 1;
    path.bits_ |= kind << (kBitsPerLayer * i);
  }
  return path;
}

std::string LayerPath::to_string() const {
  if (depth_ == 0) return "none";
  std::string out;
  for (size_t i = 0; i < depth_; ++i) {
    if (i > 0) out += "/";
    if (i >= kPackedLayers) {
      out += "...";
      break;
    }
    const uint64_t kind = (bits_ >> (kBitsPerLayer * i)) & ((1u << kBitsPerLayer) - 1);
    out += strata::to_string(static_cast<TransformKind>(kind - 1));
  }
  return out;
}

void CallNesting::enter(const OperatorHandle& op, const OpDef* def, const Stack& stack) {
  const size_t first = stack.size() - op.schema().arguments().size();
  Frame frame{&op.entry(),
              first_tensor(stack, first),
              def,
              first,
              has_transform_tensor(stack, first),
              frames_.empty() ? LayerPath::current() : frames_.front().issued_at,
              {}};
  if (def != nullptr && !def->is_composite() && def->flops.has_value()) {
    frame.args.assign(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());
  }
  if (!frames_.empty()) {
    Frame& parent = frames_.back();
    parent.saw_inner = true;
    parent.reentered = parent.reentered || (parent.op == frame.op && parent.first == frame.first);
  }
  frames_.push_back(std::move(frame));
}

CallNesting::Left CallNesting::leave(const Stack& stack) {
  const Frame done = std::move(frames_.back());
  frames_.pop_back();
  Left left{.inner_flops = done.inner_flops, .issued_at = done.issued_at};
  const bool composite = done.def != nullptr && done.def->is_composite();
  left.counted = !composite && !done.reentered && !(done.on_transform_tensors && done.saw_inner);
  if (left.counted && done.def != nullptr && done.def->flops.has_value()) {
    MetaList outputs;
    for (size_t i = done.first_arg; i < stack.size(); ++i) add_metas(stack[i], outputs);
    left.flops = std::max<int64_t>(0, done.def->flops.value(done.args, outputs) - done.inner_flops);
  }
  if (!frames_.empty()) frames_.back().inner_flops += done.inner_flops + left.flops;
  return left;
}

}  // namespace strata
