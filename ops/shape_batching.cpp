// Batching rules (Note [Batching rules]) of the primitive views of shape_views.cpp
// and shape_slicing.cpp; the composite views (reshape, t, movedim, flatten,
// unflatten, narrow, split, chunk, unbind) reach only these.
//
// A view of every sample is one view of the batched value: each rule calls the
// same op on the value with the sample's dims turned into the value's, so the
// result aliases the value and in-place writes through it reach the base. The
// batch dim stays where it is unless the view needs it elsewhere.
#include <initializer_list>
#include <vector>

#include "dispatcher/library.h"
#include "dispatcher/local_dispatch_key_set.h"
#include "ops/ops.h"
#include "ops/shape_internal.h"
#include "tensor/error.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using batching::BatchedArg;
using IntList = std::vector<int64_t>;

// A tensor batched at this vmap level, as a view's rule sees it.
struct BatchedView {
  const Tensor& sample;    // the batched tensor: its sizes are one sample's
  const BatchedArg& self;  // its value and batch dim
  const char* op;

  const Tensor& value() const { return self.value; }
  int64_t bdim() const { return *self.bdim; }
  int64_t batch_size() const { return value().sizes()[bdim()]; }
  int64_t rank() const { return self.logical_dim(); }

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
    int64_t moved = 0;
    for (int64_t d : removed) moved += d < bdim() ? 1 : 0;
    return bdim() - moved;
  }
  // Whether a sample is 0-dim, for which transpose and squeeze take dims 0 and -1
  // and leave it as it is.
  bool scalar_sample(std::initializer_list<int64_t> dims) const {
    if (rank() != 0) return false;
    for (int64_t d : dims) wrap_dim(d, 0, op);
    return true;
  }
};

// A view of the value and where the batch dim is in it.
struct ValueView {
  Tensor view;
  int64_t bdim;
};

// The rule of the view op described by `View`: its name, its Tensor method, and
// take(), which views the value as the op views every sample.
template <class View, class Take = decltype(&View::take)>
struct ViewRule;
template <class View, class... Args>
struct ViewRule<View, ValueView (*)(const BatchedView&, Args...)> {
  static Tensor call(const Tensor& self, Args... args) {
    const int64_t level = batching::current_vmap_level(View::name).level;
    const BatchedArg x = batching::unwrap(self, level);
    // The ops below act on values, which are not batched at this level: they go
    // straight to the layers below instead of back to this level's rules.
    const ExcludeDispatchKeyGuard below(DispatchKey::Batched);
    if (!x.batched()) return (self.*View::method)(args...);
    ValueView v = View::take(BatchedView{self, x, View::name}, args...);
    return batching::make_batched(std::move(v.view), v.bdim, level);
  }
};

// The batch dim goes to the front, or stays last; the sample's shape is viewed
// around it, which is possible exactly when a sample alone could be viewed.
struct View {
  static constexpr const char* name = "strata::view";
  static constexpr auto method = &Tensor::view;
  static ValueView take(const BatchedView& v, IntArrayRef size) {
    const DimVector shape =
        shape_detail::infer_size(size, v.sample.numel(), v.sample.sizes(), v.op);
    const bool batch_last = v.bdim() != 0 && v.bdim() == v.value().dim() - 1;
    IntList sizes(shape.begin(), shape.end());
    sizes.insert(batch_last ? sizes.end() : sizes.begin(), v.batch_size());
    if (batch_last) return {v.value().view(sizes), static_cast<int64_t>(shape.size())};
    return {batching::batch_first(v.self).view(sizes), 0};
  }
};

// Sample b of the value starts at the value's storage offset plus b times the
// batch stride, and a sample's own storage offset reads as 0 (BatchedTensorImpl),
// so a storage_offset given inside vmap counts from the start of each sample.
struct AsStrided {
  static constexpr const char* name = "strata::as_strided";
  static constexpr auto method = &Tensor::as_strided;
  static ValueView take(const BatchedView& v, IntArrayRef size, IntArrayRef stride,
                        std::optional<int64_t> storage_offset) {
    const int64_t offset = storage_offset.value_or(0);
    STRATA_CHECK(offset >= 0, v.op, "storage offset must be non-negative, got ", offset);
    IntList sizes{v.batch_size()};
    sizes.insert(sizes.end(), size.begin(), size.end());
    IntList strides{v.value().strides()[v.bdim()]};
    strides.insert(strides.end(), stride.begin(), stride.end());
    return {v.value().as_strided(sizes, strides, v.value().storage_offset() + offset), 0};
  }
};

struct Permute {
  static constexpr const char* name = "strata::permute";
  static constexpr auto method = &Tensor::permute;
  static ValueView take(const BatchedView& v, IntArrayRef dims) {
    STRATA_CHECK(static_cast<int64_t>(dims.size()) == v.rank(), v.op, "got ", dims.size(), " dims ",
                 shape_string(dims), " for a tensor of rank ", v.rank(), " (shape ",
                 shape_string(v.sample.sizes()), ")");
    IntList order;
    order.reserve(dims.size() + 1);
    std::vector<bool> seen(static_cast<size_t>(v.rank() + 1), false);
    for (int64_t d : dims) {
      if (static_cast<int64_t>(order.size()) == v.bdim()) order.push_back(v.bdim());
      const int64_t p = v.value_dim(d);
      STRATA_CHECK(!seen[p], v.op, "dim ", d, " appears twice in ", shape_string(dims));
      seen[p] = true;
      order.push_back(p);
    }
    if (static_cast<int64_t>(order.size()) == v.bdim()) order.push_back(v.bdim());
    return {v.value().permute(order), v.bdim()};
  }
};

struct Transpose {
  static constexpr const char* name = "strata::transpose";
  static constexpr auto method = &Tensor::transpose;
  static ValueView take(const BatchedView& v, int64_t dim0, int64_t dim1) {
    if (v.scalar_sample({dim0, dim1})) return {v.value(), v.bdim()};
    return {v.value().transpose(v.value_dim(dim0), v.value_dim(dim1)), v.bdim()};
  }
};

struct Unsqueeze {
  static constexpr const char* name = "strata::unsqueeze";
  static constexpr auto method = &Tensor::unsqueeze;
  static ValueView take(const BatchedView& v, int64_t dim) {
    const int64_t d = shape_detail::wrap_insert_dim(dim, v.rank(), v.op);
    if (d < v.bdim()) return {v.value().unsqueeze(d), v.bdim() + 1};
    return {v.value().unsqueeze(d + 1), v.bdim()};
  }
};

// squeeze() would drop a batch of size 1 too: view the value without the
// samples' size-1 dims instead.
struct Squeeze {
  static constexpr const char* name = "strata::squeeze";
  static constexpr Tensor (Tensor::*method)() const = &Tensor::squeeze;
  static ValueView take(const BatchedView& v) {
    IntList sizes;
    int64_t bdim = 0;
    for (int64_t d = 0; d < v.value().dim(); ++d) {
      if (d == v.bdim()) bdim = static_cast<int64_t>(sizes.size());
      if (d == v.bdim() || v.value().sizes()[d] != 1) sizes.push_back(v.value().sizes()[d]);
    }
    if (static_cast<int64_t>(sizes.size()) == v.value().dim()) return {v.value(), v.bdim()};
    return {v.value().view(sizes), bdim};
  }
};

struct SqueezeDim {
  static constexpr const char* name = "strata::squeeze";
  static constexpr Tensor (Tensor::*method)(int64_t) const = &Tensor::squeeze;
  static ValueView take(const BatchedView& v, int64_t dim) {
    if (v.scalar_sample({dim})) return {v.value(), v.bdim()};
    const int64_t d = v.value_dim(dim);
    if (v.value().sizes()[d] != 1) return {v.value(), v.bdim()};
    return {v.value().squeeze(d), v.bdim_without({d})};
  }
};

// New leading dims go in front of the value, whatever its batch dim.
struct Expand {
  static constexpr const char* name = "strata::expand";
  static constexpr auto method = &Tensor::expand;
  static ValueView take(const BatchedView& v, IntArrayRef size) {
    const int64_t leading = static_cast<int64_t>(size.size()) - v.rank();
    STRATA_CHECK(leading >= 0, v.op, "the target shape ", shape_string(size), " has fewer dims (",
                 size.size(), ") than the tensor's shape ", shape_string(v.sample.sizes()));
    const int64_t bdim = leading + v.bdim();
    IntList sizes(size.begin(), size.end());
    sizes.insert(sizes.begin() + bdim, v.batch_size());
    return {v.value().expand(sizes), bdim};
  }
};

struct Diagonal {
  static constexpr const char* name = "strata::diagonal";
  static constexpr auto method = &Tensor::diagonal;
  static ValueView take(const BatchedView& v, int64_t offset, int64_t dim1, int64_t dim2) {
    STRATA_CHECK(v.rank() >= 2, v.op, "expects a tensor with at least 2 dims, got shape ",
                 shape_string(v.sample.sizes()));
    const int64_t d1 = v.value_dim(dim1);
    const int64_t d2 = v.value_dim(dim2);
    return {v.value().diagonal(offset, d1, d2), v.bdim_without({d1, d2})};
  }
};

struct Select {
  static constexpr const char* name = "strata::select";
  static constexpr auto method = &Tensor::select;
  static ValueView take(const BatchedView& v, int64_t dim, int64_t index) {
    const int64_t d = v.value_dim(dim);
    return {v.value().select(d, index), v.bdim_without({d})};
  }
};

struct Slice {
  static constexpr const char* name = "strata::slice";
  static constexpr auto method = &Tensor::slice;
  static ValueView take(const BatchedView& v, int64_t dim, std::optional<int64_t> start,
                        std::optional<int64_t> end, int64_t step) {
    return {v.value().slice(v.value_dim(dim), start, end, step), v.bdim()};
  }
};

STRATA_LIBRARY_IMPL(strata, Batched, m) {
  m.impl("view", &ViewRule<View>::call);
  m.impl("as_strided", &ViewRule<AsStrided>::call);
  m.impl("permute", &ViewRule<Permute>::call);
  m.impl("transpose.int", &ViewRule<Transpose>::call);
  m.impl("unsqueeze", &ViewRule<Unsqueeze>::call);
  m.impl("squeeze", &ViewRule<Squeeze>::call);
  m.impl("squeeze.dim", &ViewRule<SqueezeDim>::call);
  m.impl("expand", &ViewRule<Expand>::call);
  m.impl("diagonal", &ViewRule<Diagonal>::call);
  m.impl("select.int", &ViewRule<Select>::call);
  m.impl("slice.Tensor", &ViewRule<Slice>::call);
}

}  // namespace
}  // namespace strata
