// View operators that take part of a tensor: select, slice, narrow, and the list
// views split, chunk and unbind. select and slice are the primitives
// (CompositeExplicitAutograd, metadata only); the rest are compositions of them.
#include <algorithm>
#include <optional>
#include <vector>

#include "ops/op_handle.h"
#include "ops/ops.h"
#include "ops/shape_internal.h"

namespace strata {
namespace {

using shape_detail::BatchedView;
using shape_detail::copy_op;
using shape_detail::embed;
using shape_detail::layout_view_op;
using shape_detail::LayoutView;
using shape_detail::ValueView;
using shape_detail::view_derivative;
using shape_detail::ViewRule;
using shape_detail::wrap_checked_dim;

// The dim of a tensor of `rank` dims that must have one: 0-dim tensors have
// nothing to take from.
int64_t existing_dim(int64_t rank, int64_t dim, const char* op) {
  STRATA_CHECK(rank > 0, op, "dim ", dim,
               " is out of range for a tensor of rank 0: a 0-dim tensor has no dim to index");
  return wrap_dim(dim, rank, op);
}
int64_t existing_dim(const Tensor& self, int64_t dim, const char* op) {
  return existing_dim(self.dim(), dim, op);
}
int64_t existing_dim(const ViewLayout& layout, int64_t dim, const char* op) {
  return existing_dim(static_cast<int64_t>(layout.sizes.size()), dim, op);
}

// ---- the views' layouts (Note [View layouts]) and batching rules
// (shape_internal.h): select and slice are primitives (LayoutView makes their
// kernels); narrow is a slice, by its decomposition.

struct Select {
  static constexpr const char* name = "strata::select";
  static constexpr auto method = &Tensor::select;
  static void layout(ViewLayout& v, int64_t dim, int64_t index) {
    const int64_t d = existing_dim(v, dim, name);
    const int64_t size = v.sizes[d];
    STRATA_CHECK(index >= -size && index < size, name, "index ", index,
                 " is out of range for dim ", dim, " of size ", size, " (shape ",
                 shape_string(v.sizes), ")");
    if (index < 0) index += size;
    v.offset += index * v.strides[d];
    v.sizes.erase(static_cast<size_t>(d));
    v.strides.erase(static_cast<size_t>(d));
  }
  static ValueView take(const BatchedView& v, int64_t dim, int64_t index) {
    const int64_t d = v.value_dim(dim);
    return {v.value().select(d, index), v.bdim_without({d})};
  }
};

// Python slicing: negative bounds count from the end, out-of-range bounds clamp,
// and an end before the start gives an empty slice.
struct Slice {
  static constexpr const char* name = "strata::slice";
  static constexpr auto method = &Tensor::slice;
  static void layout(ViewLayout& v, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
    const int64_t d = existing_dim(v, dim, name);
    STRATA_CHECK(step >= 1, name, "step must be positive, got ", step);
    const int64_t size = v.sizes[d];
    auto clamp_bound = [size](int64_t bound) {
      if (bound < 0) bound += size;
      return std::clamp<int64_t>(bound, 0, size);
    };
    const int64_t first = clamp_bound(start.value_or(0));
    const int64_t last = std::max(first, clamp_bound(end.value_or(size)));
    v.offset += first * v.strides[d];
    // ceil((last - first) / step); the stride is scaled only where it is used (a
    // step past the end leaves one element), so a huge step cannot overflow either.
    v.sizes[d] = (last - first) / step + ((last - first) % step != 0);
    if (v.sizes[d] > 1) v.strides[d] *= step;
  }
  static ValueView take(const BatchedView& v, int64_t dim, std::optional<int64_t> start,
                        std::optional<int64_t> end, int64_t step) {
    return {v.value().slice(v.value_dim(dim), start, end, step), v.bdim()};
  }
};

// narrow(dim, start, length) is slice(dim, start, start + length), with start
// and length checked rather than clamped.
struct Narrow {
  static constexpr const char* name = "strata::narrow";
  // `start`, made non-negative, after the checks.
  static int64_t checked_start(IntArrayRef sizes, int64_t d, int64_t dim, int64_t start,
                               int64_t length) {
    const int64_t size = sizes[d];
    STRATA_CHECK(length >= 0, name, "length must be non-negative, got ", length);
    STRATA_CHECK(start >= -size && start <= size, name, "start ", start,
                 " is out of range for dim ", dim, " of size ", size, " (shape ",
                 shape_string(sizes), ")");
    if (start < 0) start += size;
    STRATA_CHECK(length <= size - start, name, "start (", start, ") + length (", length,
                 ") exceeds the size ", size, " of dim ", dim, " (shape ", shape_string(sizes),
                 ")");
    return start;
  }
  static void layout(ViewLayout& v, int64_t dim, int64_t start, int64_t length) {
    const int64_t d = existing_dim(v, dim, name);
    start = checked_start(v.sizes, d, dim, start, length);
    Slice::layout(v, d, start, start + length, 1);
  }
  static Tensor decomposition(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
    const int64_t d = existing_dim(self, dim, name);
    start = checked_start(self.sizes(), d, dim, start, length);
    return self.slice(d, start, start + length, 1);
  }
};

// Where the pieces of split_size along dim start (the last one shorter when the
// size does not divide); `op` names split or split_copy in errors.
struct SplitPieces {
  int64_t dim, size, split_size, count;
  int64_t length(int64_t i) const { return std::min(split_size, size - i * split_size); }
};

SplitPieces split_pieces(const Tensor& self, int64_t split_size, int64_t dim, const char* op) {
  const int64_t d = existing_dim(self, dim, op);
  const int64_t size = self.sizes()[d];
  STRATA_CHECK(split_size > 0 || (split_size == 0 && size == 0), op, "split_size must be positive",
               " (or 0 for a dim of size 0), got ", split_size, " for dim ", dim, " of size ",
               size);
  // ceil(size / split_size), without size + split_size - 1 overflowing for a huge split_size.
  const int64_t count =
      split_size == 0 ? 1 : std::max<int64_t>(size / split_size + (size % split_size != 0), 1);
  return {d, size, split_size, count};
}

std::vector<Tensor> split_composite(const Tensor& self, int64_t split_size, int64_t dim) {
  const SplitPieces p = split_pieces(self, split_size, dim, "strata::split");
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(p.count));
  for (int64_t i = 0; i < p.count; ++i) {
    out.push_back(self.narrow(p.dim, i * split_size, p.length(i)));
  }
  return out;
}

// split_copy and unbind_copy (what functionalize(f, Remove::MutationsAndViews)
// records for split and unbind): each piece by the _copy form of its view, so
// a trace of them holds no view op, and every facet is those forms'.
std::vector<Tensor> split_copy_composite(const Tensor& self, int64_t split_size, int64_t dim) {
  const SplitPieces p = split_pieces(self, split_size, dim, "strata::split_copy");
  const auto& slice_copy = STRATA_OP(
      "strata::slice_copy", "Tensor",
      Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>, int64_t));
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(p.count));
  for (int64_t i = 0; i < p.count; ++i) {
    const int64_t start = i * split_size;
    out.push_back(slice_copy.call(self, p.dim, start, start + p.length(i), 1));
  }
  return out;
}

// At most `chunks` pieces of equal size (the last may be smaller, and there may be
// fewer), as in PyTorch; a dim of size 0 gives `chunks` empty pieces, as PyTorch
// does, up to a bound: chunks = INT64_MAX would never return.
std::vector<Tensor> chunk_composite(const Tensor& self, int64_t chunks, int64_t dim) {
  const char* op = "strata::chunk";
  STRATA_CHECK(chunks > 0, op, "chunks must be positive, got ", chunks);
  const int64_t d = existing_dim(self, dim, op);
  const int64_t size = self.sizes()[d];
  if (size == 0) {
    constexpr int64_t kMaxEmptyPieces = int64_t{1} << 16;
    STRATA_CHECK(chunks <= kMaxEmptyPieces, op, "dim ", d, " of a tensor of shape ",
                 shape_string(self.sizes()), " has size 0, so chunks = ", chunks,
                 " would make that many empty pieces (at most ", kMaxEmptyPieces, ")");
    return std::vector<Tensor>(static_cast<size_t>(chunks), self.narrow(d, 0, 0));
  }
  // ceil(size / chunks), without size + chunks - 1 overflowing for a huge chunks.
  return self.split(size / chunks + (size % chunks != 0), d);
}

std::vector<Tensor> unbind_composite(const Tensor& self, int64_t dim) {
  const int64_t d = existing_dim(self, dim, "strata::unbind");
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(self.sizes()[d]));
  for (int64_t i = 0; i < self.sizes()[d]; ++i) out.push_back(self.select(d, i));
  return out;
}

std::vector<Tensor> unbind_copy_composite(const Tensor& self, int64_t dim) {
  const int64_t d = existing_dim(self, dim, "strata::unbind_copy");
  const auto& select_copy =
      STRATA_OP("strata::select_copy", "int", Tensor(const Tensor&, int64_t, int64_t));
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(self.sizes()[d]));
  for (int64_t i = 0; i < self.sizes()[d]; ++i) out.push_back(select_copy.call(self, d, i));
  return out;
}

// ---- derivatives (shape_internal.h) ----

using autograd::BackwardContext;

void select_backward(BackwardContext& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const int64_t dim = wrap_checked_dim(c.int_arg(1), static_cast<int64_t>(sizes.size()));
  const int64_t index = wrap_checked_dim(c.int_arg(2), sizes[dim]);
  c.set_grad(0, embed(c.grad().unsqueeze(dim), dim, sizes[dim], index, 1));
}

void slice_backward(BackwardContext& c) {
  const IntArrayRef sizes = c.input_sizes(0);
  const int64_t dim = wrap_checked_dim(c.int_arg(1), static_cast<int64_t>(sizes.size()));
  const int64_t size = sizes[dim];
  // The first index the slice took, clamped as the kernel clamps it.
  const IValue& start = c.arg(2);
  const int64_t first =
      start.is_none() ? 0 : std::clamp<int64_t>(wrap_checked_dim(start.to_int(), size), 0, size);
  c.set_grad(0, embed(c.grad(), dim, size, first, c.int_arg(4)));
}

// ---- the rows (Note [One op, one place]) ----

const OpFamily kSlicingOps("shape_slicing", {
    layout_view_op<Select>("select.int(Tensor(a) self, int dim, int index) -> Tensor(a)",
                           view_derivative(&select_backward)),
    layout_view_op<Slice>(
        "slice.Tensor(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1) -> "
        "Tensor(a)",
        view_derivative(&slice_backward)),
    copy_op<&LayoutView<Select>::kernel, Select>(
        "select_copy.int(Tensor self, int dim, int index) -> Tensor",
        view_derivative(&select_backward)),
    copy_op<&LayoutView<Slice>::kernel, Slice>(
        "slice_copy.Tensor(Tensor self, int dim=0, int? start=None, int? end=None, int step=1) -> "
        "Tensor",
        view_derivative(&slice_backward)),
    {.schema = "narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)",
     .decomposition = &Narrow::decomposition,
     .view_layout = &LayoutView<Narrow>::from_ints},
    {.schema = "split.Tensor(Tensor(a) self, int split_size, int dim=0) -> Tensor(a)[]",
     .decomposition = &split_composite},
    {.schema = "split_copy.Tensor(Tensor self, int split_size, int dim=0) -> Tensor[]",
     .decomposition = &split_copy_composite},
    {.schema = "chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]",
     .decomposition = &chunk_composite},
    {.schema = "unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]",
     .decomposition = &unbind_composite},
    {.schema = "unbind_copy.int(Tensor self, int dim=0) -> Tensor[]",
     .decomposition = &unbind_copy_composite},
});

}  // namespace

Tensor Tensor::select(int64_t dim, int64_t index) const {
  return STRATA_OP("strata::select", "int", Tensor(const Tensor&, int64_t, int64_t))
      .call(*this, dim, index);
}

Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                     int64_t step) const {
  return STRATA_OP("strata::slice", "Tensor",
                   Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>,
                          int64_t))
      .call(*this, dim, start, end, step);
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return STRATA_OP("strata::narrow", "", Tensor(const Tensor&, int64_t, int64_t, int64_t))
      .call(*this, dim, start, length);
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  return STRATA_OP("strata::split", "Tensor", std::vector<Tensor>(const Tensor&, int64_t, int64_t))
      .call(*this, split_size, dim);
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  return STRATA_OP("strata::chunk", "", std::vector<Tensor>(const Tensor&, int64_t, int64_t))
      .call(*this, chunks, dim);
}

std::vector<Tensor> Tensor::unbind(int64_t dim) const {
  return STRATA_OP("strata::unbind", "int", std::vector<Tensor>(const Tensor&, int64_t))
      .call(*this, dim);
}

}  // namespace strata
