#include "tensor/tensor.h"

#include <sstream>

#include "tensor/dispatch_dtype.h"
#include "tensor/error.h"
#include "tensor/tensor_impl.h"

namespace strata {

std::string shape_string(IntArrayRef sizes) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << ']';
  return out.str();
}

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  // A 0-dim tensor accepts dims 0 and -1, as if it had one dim.
  int64_t bound = rank == 0 ? 1 : rank;
  STRATA_CHECK(dim >= -bound && dim < bound, op, "dim ", dim,
               " is out of range for a tensor of rank ", rank, " (expected a dim in [", -bound,
               ", ", bound - 1, "])");
  return dim < 0 ? dim + bound : dim;
}

namespace {
// Unlike ops that reduce over dim 0 of a 0-dim tensor, a 0-dim tensor has no
// size or stride to read.
int64_t existing_dim(const Tensor& t, int64_t dim, const char* what) {
  STRATA_CHECK(t.dim() > 0, what, "dim ", dim, " is out of range for a 0-dim tensor");
  return wrap_dim(dim, t.dim(), what);
}
}  // namespace

int64_t Tensor::size(int64_t dim) const {
  return sizes()[existing_dim(*this, dim, "Tensor::size")];
}

int64_t Tensor::stride(int64_t dim) const {
  return strides()[existing_dim(*this, dim, "Tensor::stride")];
}

template <class T>
T* Tensor::data_ptr() const {
  STRATA_CHECK(dtype() == scalar_type_of<T>, "Tensor::data_ptr", "requested ",
               to_string(scalar_type_of<T>), " data from a ", to_string(dtype()), " tensor");
  return static_cast<T*>(impl_->data_ptr());
}

namespace {

// The tensor holding t's values (t itself unless t wraps another, see value_source).
Tensor readable_values(const Tensor& t, const char* what) {
  STRATA_CHECK(t.defined(), what, "called on an undefined tensor");
  Tensor source(IntrusivePtr<TensorImpl>(const_cast<TensorImpl*>(t.impl()->value_source())));
  STRATA_CHECK(source.impl()->has_storage(), what, "cannot read the values of a ",
               t.impl()->impl_name(), " (shape ", shape_string(t.sizes()),
               "): it has no storage of its own; read values outside the transform");
  return Tensor(host_readable(*source.impl()));
}

// Visits the elements of t in row-major order, following its strides.
template <class Src, class F>
void for_each_element(const Tensor& t, F&& f) {
  const Src* base = static_cast<const Src*>(t.data_ptr());
  int64_t n = t.numel();
  if (n == 0) return;
  if (t.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) f(base[i]);
    return;
  }
  int64_t rank = t.dim();
  DimVector index(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += index[d] * t.strides()[d];
    f(base[offset]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < t.sizes()[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

namespace {

// Every value of t in row-major order, converted to T; `what` names the caller.
template <class T>
std::vector<T> read_values(const Tensor& t, const char* what) {
  const Tensor source = readable_values(t, what);
  std::vector<T> values;
  values.reserve(static_cast<size_t>(t.numel()));
  STRATA_DISPATCH_ALL_TYPES(t.dtype(), what, [&] {
    for_each_element<scalar_t>(source, [&](scalar_t v) { values.push_back(static_cast<T>(v)); });
  });
  return values;
}

}  // namespace

template <class T>
std::vector<T> Tensor::to_vector() const {
  return read_values<T>(*this, "Tensor::to_vector");
}

template <class T>
T Tensor::item() const {
  STRATA_CHECK(defined(), "Tensor::item", "called on an undefined tensor");
  STRATA_CHECK(numel() == 1, "Tensor::item", "a tensor with ", numel(),
               " elements cannot be converted to a number (shape ", shape_string(sizes()), ")");
  return read_values<T>(*this, "Tensor::item")[0];
}

#define STRATA_INSTANTIATE_ACCESSORS(T)    \
  template T* Tensor::data_ptr<T>() const; \
  template T Tensor::item<T>() const;      \
  template std::vector<T> Tensor::to_vector<T>() const;
STRATA_INSTANTIATE_ACCESSORS(bool)
STRATA_INSTANTIATE_ACCESSORS(int64_t)
STRATA_INSTANTIATE_ACCESSORS(float)
STRATA_INSTANTIATE_ACCESSORS(double)
#undef STRATA_INSTANTIATE_ACCESSORS

}  // namespace strata
