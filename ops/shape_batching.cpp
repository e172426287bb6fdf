// Batching rules (Note [Batching rules]) of the primitive views of shape_views.cpp
// and shape_slicing.cpp; the composite views (reshape, t, movedim, flatten,
// unflatten, narrow, split, chunk, unbind) reach only these.
//
// A view of every sample is one view of the batched value: each rule calls the
// same op on the value, below this vmap layer, with the sample's dims turned into
// the value's. The result aliases the value, so in-place writes through it reach
// the base. The batch dim stays where it is unless the view needs it elsewhere.
#include <initializer_list>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "ops/ops.h"
#include "ops/shape_internal.h"
#include "tensor/error.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using batching::BatchedArg;
using IntList = std::vector<int64_t>;

// One call of a view op on a tensor batched at this level.
struct BatchedView {
  const Tensor& sample;    // the batched tensor: its sizes are one sample's
  const BatchedArg& self;  // its value and batch dim
  IValue* args;            // the op's arguments; args[0] is what the op is called on
  const char* op;

  int64_t bdim() const { return *self.bdim; }
  int64_t batch_size() const { return self.value.sizes()[bdim()]; }
  int64_t rank() const { return self.logical_dim(); }
  int64_t int_arg(size_t i) const { return args[i].to_int(); }

  // Where dim `dim` of a sample is in the value: the sample's dims keep their
  // order around the batch dim.
  int64_t value_dim(int64_t dim) const {
    STRATA_CHECK(rank() > 0, op, "dim ", dim,
                 " is out of range for a tensor of rank 0: a 0-dim tensor has no dim to index");
    const int64_t d = wrap_dim(dim, rank(), op);
    return d < bdim() ? d : d + 1;
  }
  // The batch dim once the value's dims `removed` (other dims) are gone.
  int64_t bdim_without(std::initializer_list<int64_t> removed) const {
    int64_t bdim = this->bdim();
    for (int64_t d : removed) bdim -= d < this->bdim() ? 1 : 0;
    return bdim;
  }
  // Replaces the dim argument at `i` by the value's dim.
  int64_t rewrite_dim(size_t i) {
    const int64_t d = value_dim(int_arg(i));
    args[i] = d;
    return d;
  }
};

// How a rule takes the view of the value: `result` when it computes it (a view
// that leaves every sample as it is returns the value itself), otherwise the op
// is called on the rewritten arguments; `bdim` is the batch dim of the result.
struct ValueView {
  int64_t bdim;
  Tensor result;
};
using TakeView = ValueView (*)(BatchedView&);

template <TakeView take>
void view_rule(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  const char* name = op.operator_name().name.c_str();
  const batching::VmapLevel at = batching::current_vmap_level(name);
  const size_t first = stack.size() - op.schema().arguments().size();
  const Tensor sample = stack[first].to_tensor();
  const BatchedArg self = batching::unwrap(sample, at.level);
  if (!self.batched()) {
    batching::call_below(op, stack);
    return;
  }
  stack[first] = self.value;
  BatchedView call{sample, self, &stack[first], name};
  ValueView view = take(call);
  if (view.result.defined()) {
    stack.resize(first);
    stack.emplace_back(std::move(view.result));
  } else {
    batching::call_below(op, stack);
  }
  Tensor& out = stack[first].to_tensor();
  out = batching::make_batched(std::move(out), view.bdim, at.level);
}

// The batch dim goes to the front, or stays last; the sample's shape is viewed
// around it, which is possible exactly when a sample alone could be viewed.
ValueView view_of_value(BatchedView& v) {
  const DimVector shape =
      shape_detail::infer_size(v.args[1].to_int_list(), v.sample.numel(), v.sample.sizes(), v.op);
  const bool batch_last = v.bdim() != 0 && v.bdim() == v.self.value.dim() - 1;
  IntList sizes(shape.begin(), shape.end());
  sizes.insert(batch_last ? sizes.end() : sizes.begin(), v.batch_size());
  if (!batch_last) v.args[0] = batching::batch_first(v.self);
  v.args[1] = std::move(sizes);
  return {batch_last ? static_cast<int64_t>(shape.size()) : 0, {}};
}

ValueView permute_of_value(BatchedView& v) {
  const IntList& dims = v.args[1].to_int_list();
  STRATA_CHECK(static_cast<int64_t>(dims.size()) == v.rank(), v.op, "got ", dims.size(), " dims ",
               shape_string(dims), " for a tensor of rank ", v.rank(), " (shape ",
               shape_string(v.sample.sizes()), ")");
  IntList order;
  order.reserve(dims.size() + 1);
  for (int64_t d : dims) {
    if (static_cast<int64_t>(order.size()) == v.bdim()) order.push_back(v.bdim());
    order.push_back(v.value_dim(d));
  }
  if (static_cast<int64_t>(order.size()) == v.bdim()) order.push_back(v.bdim());
  v.args[1] = std::move(order);
  return {v.bdim(), {}};
}

// A 0-dim sample has dims 0 and -1 for transpose and squeeze, which leave it as it is.
bool is_scalar_sample(const BatchedView& v, std::initializer_list<size_t> dim_args) {
  if (v.rank() != 0) return false;
  for (size_t i : dim_args) wrap_dim(v.int_arg(i), 0, v.op);
  return true;
}

ValueView transpose_of_value(BatchedView& v) {
  if (is_scalar_sample(v, {1, 2})) return {v.bdim(), v.self.value};
  v.rewrite_dim(1);
  v.rewrite_dim(2);
  return {v.bdim(), {}};
}

ValueView unsqueeze_of_value(BatchedView& v) {
  const int64_t d = shape_detail::wrap_insert_dim(v.int_arg(1), v.rank(), v.op);
  const bool before_batch = d < v.bdim();
  v.args[1] = before_batch ? d : d + 1;
  return {before_batch ? v.bdim() + 1 : v.bdim(), {}};
}

// squeeze() would drop a batch of size 1 too: view the value without the
// samples' size-1 dims instead.
ValueView squeeze_of_value(BatchedView& v) {
  const Tensor& value = v.self.value;
  IntList sizes;
  int64_t bdim = 0;
  for (int64_t d = 0; d < value.dim(); ++d) {
    if (d == v.bdim()) bdim = static_cast<int64_t>(sizes.size());
    if (d == v.bdim() || value.sizes()[d] != 1) sizes.push_back(value.sizes()[d]);
  }
  if (static_cast<int64_t>(sizes.size()) == value.dim()) return {v.bdim(), value};
  return {bdim, value.view(sizes)};
}

ValueView squeeze_dim_of_value(BatchedView& v) {
  if (is_scalar_sample(v, {1})) return {v.bdim(), v.self.value};
  const int64_t d = v.rewrite_dim(1);
  if (v.self.value.sizes()[d] != 1) return {v.bdim(), v.self.value};
  return {v.bdim_without({d}), {}};
}

// New leading dims go in front of the value, whatever its batch dim.
ValueView expand_of_value(BatchedView& v) {
  IntList size = v.args[1].to_int_list();
  const int64_t leading = static_cast<int64_t>(size.size()) - v.rank();
  STRATA_CHECK(leading >= 0, v.op, "the target shape ", shape_string(size), " has fewer dims (",
               size.size(), ") than the tensor's shape ", shape_string(v.sample.sizes()));
  const int64_t bdim = leading + v.bdim();
  size.insert(size.begin() + bdim, v.batch_size());
  v.args[1] = std::move(size);
  return {bdim, {}};
}

ValueView diagonal_of_value(BatchedView& v) {
  STRATA_CHECK(v.rank() >= 2, v.op, "expects a tensor with at least 2 dims, got shape ",
               shape_string(v.sample.sizes()));
  const int64_t d1 = v.rewrite_dim(2);
  const int64_t d2 = v.rewrite_dim(3);
  return {v.bdim_without({d1, d2}), {}};
}

// Sample b of the value starts at the value's storage offset plus b times the
// batch stride, and a sample's own storage offset reads as 0 (BatchedTensorImpl),
// so a storage_offset given inside vmap counts from the start of each sample.
ValueView as_strided_of_value(BatchedView& v) {
  IntList sizes = v.args[1].to_int_list();
  IntList strides = v.args[2].to_int_list();
  const int64_t offset = v.args[3].is_none() ? 0 : v.int_arg(3);
  STRATA_CHECK(offset >= 0, v.op, "storage offset must be non-negative, got ", offset);
  sizes.insert(sizes.begin(), v.batch_size());
  strides.insert(strides.begin(), v.self.value.strides()[v.bdim()]);
  v.args[1] = std::move(sizes);
  v.args[2] = std::move(strides);
  v.args[3] = v.self.value.storage_offset() + offset;
  return {0, {}};
}

ValueView select_of_value(BatchedView& v) {
  const int64_t d = v.rewrite_dim(1);
  return {v.bdim_without({d}), {}};
}

ValueView slice_of_value(BatchedView& v) {
  v.rewrite_dim(1);
  return {v.bdim(), {}};
}

STRATA_LIBRARY_IMPL(strata, Batched, m) {
  m.impl("view", KernelFunction::from_boxed(&view_rule<&view_of_value>));
  m.impl("as_strided", KernelFunction::from_boxed(&view_rule<&as_strided_of_value>));
  m.impl("permute", KernelFunction::from_boxed(&view_rule<&permute_of_value>));
  m.impl("transpose.int", KernelFunction::from_boxed(&view_rule<&transpose_of_value>));
  m.impl("unsqueeze", KernelFunction::from_boxed(&view_rule<&unsqueeze_of_value>));
  m.impl("squeeze", KernelFunction::from_boxed(&view_rule<&squeeze_of_value>));
  m.impl("squeeze.dim", KernelFunction::from_boxed(&view_rule<&squeeze_dim_of_value>));
  m.impl("expand", KernelFunction::from_boxed(&view_rule<&expand_of_value>));
  m.impl("diagonal", KernelFunction::from_boxed(&view_rule<&diagonal_of_value>));
  m.impl("select.int", KernelFunction::from_boxed(&view_rule<&select_of_value>));
  m.impl("slice.Tensor", KernelFunction::from_boxed(&view_rule<&slice_of_value>));
}

}  // namespace
}  // namespace strata
