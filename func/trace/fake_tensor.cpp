#include "func/trace/fake_tensor.h"

#include "dispatcher/op_def.h"
#include "tensor/dataless_storage.h"
#include "tensor/error.h"

namespace strata {
namespace {

class FakeTensorImpl final : public TensorImpl {
 public:
  FakeTensorImpl(ScalarType dtype, Device device, IntArrayRef sizes, IntArrayRef strides,
                 int64_t offset, size_t storage_nbytes)
      : TensorImpl(DispatchKeySet(backend_key(device.type)), dtype, device),
        storage_nbytes_(storage_nbytes) {
    set_sizes_and_strides(sizes, strides, offset);
  }
  const char* impl_name() const override { return "fake tensor (TraceMode::Fake, needs real data)"; }
  // The size of the storage the tensor would view: a view's bounds check needs it.
  size_t storage_nbytes() const { return storage_nbytes_; }

 private:
  size_t storage_nbytes_;
};

// A fake tensor with t's geometry over a storage of storage_nbytes.
Tensor fake_like_geometry(const Tensor& t, size_t storage_nbytes) {
  return Tensor(make_intrusive<FakeTensorImpl>(t.dtype(), t.device(), t.sizes(), t.strides(),
                                               t.storage_offset(), storage_nbytes));
}

// A tensor with fake's geometry over a storage of its size with no data, for a
// view kernel, which computes geometry only, to read.
Tensor stand_in(const Tensor& fake) {
  STRATA_CHECK(fake.device().is_cpu(), "trace", "fake views of ", fake.device(),
               " tensors are not supported");
  const size_t nbytes = static_cast<const FakeTensorImpl*>(fake.impl())->storage_nbytes();
  return Tensor(make_intrusive<TensorImpl>(dataless_storage(nbytes), fake.dtype(), fake.sizes(),
                                           fake.strides(), fake.storage_offset()));
}

void run_view(const OperatorHandle& op, Stack& stack, size_t first) {
  for (size_t i = first; i < stack.size(); ++i) {
    if (stack[i].is_tensor() && is_fake(stack[i].to_tensor())) {
      stack[i] = stand_in(stack[i].to_tensor());
    }
  }
  op.redispatch_boxed(replay_keys(Device()), stack);
  const size_t results = op.schema().returns().size();
  const auto fake = [](const Tensor& view) {
    return fake_like_geometry(view, view.impl()->storage()->nbytes());
  };
  for (size_t i = stack.size() - results; i < stack.size(); ++i) {
    if (stack[i].is_tensor()) {
      stack[i] = fake(stack[i].to_tensor());
    } else if (stack[i].is_tensor_list()) {
      for (Tensor& t : stack[i].to_tensor_list()) t = fake(t);
    }
  }
}

}  // namespace

Tensor make_fake(const ValueType& type) {
  const size_t nbytes = static_cast<size_t>(checked_numel(type.sizes) * element_size(type.dtype));
  return Tensor(make_intrusive<FakeTensorImpl>(type.dtype, type.device, type.sizes,
                                               contiguous_strides(type.sizes), 0, nbytes));
}

bool is_fake(const Tensor& t) { return dynamic_cast<const FakeTensorImpl*>(t.impl()) != nullptr; }

Tensor alias_of(const Tensor& t) {
  return Tensor(make_intrusive<TensorImpl>(t.impl()->storage(), t.dtype(), t.sizes(), t.strides(),
                                           t.storage_offset()));
}

bool fake_runs_whole(const OperatorHandle& op) {
  const OpDef* def = find_op_def(op);
  if (def == nullptr || !def->is_composite()) return true;
  // A composite that returns a view may copy instead (reshape of a transposed
  // tensor): its parts run fake, so the copy never reads the stand-in's storage.
  return !op.entry().returns_view() && def->shape.has_value();
}

void run_fake(const OperatorHandle& op, Stack& stack) {
  const FunctionSchema& schema = op.schema();
  const size_t first = stack.size() - schema.arguments().size();
  const std::string name = op.operator_name().to_string();
  if (op.entry().returns_view()) {
    run_view(op, stack, first);
    return;
  }
  const OpDef* def = find_op_def(op);
  STRATA_CHECK(def != nullptr && def->shape.has_value(), "trace", name,
               " has no shape function",
               def != nullptr && def->shape.reason ? std::string(" (") + def->shape.reason + ")" : "",
               ", so fake mode cannot run it: it needs real data");
  const Stack args(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());
  const MetaList metas = def->shape.value(OpArgs(args.data(), args.size()));
  stack.resize(first);
  size_t next = 0;
  for (const Return& ret : schema.returns()) {
    if (ret.alias && ret.alias->is_write) {
      // An in-place or out= op returns the argument it writes.
      for (size_t a = 0; a < schema.arguments().size(); ++a) {
        const Argument& arg = schema.arguments()[a];
        if (arg.alias && arg.alias->sets == ret.alias->sets) {
          stack.push_back(args[a]);
          break;
        }
      }
      ++next;
      continue;
    }
    Device device;
    any_tensor_argument(args, 0, [&](const Tensor& t) {
      if (t.defined()) device = t.device();
      return t.defined();
    });
    if (ret.type.is_list) {
      std::vector<Tensor> list;
      for (; next < metas.size(); ++next) {
        list.push_back(make_fake(ValueType{metas[next].dtype, metas[next].sizes, device}));
      }
      stack.push_back(std::move(list));
    } else {
      STRATA_CHECK(next < metas.size(), "trace", name, "'s shape function gave too few outputs");
      stack.push_back(make_fake(ValueType{metas[next].dtype, metas[next].sizes, device}));
      ++next;
    }
  }
}

}  // namespace strata
