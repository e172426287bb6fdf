#include "tensor/shape_inference.h"

#include <limits>

#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata {

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  const size_t rank = std::max(a.size(), b.size());
  DimVector out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    STRATA_CHECK(da == db || da == 1 || db == 1, op, "shapes ", shape_string(a), " and ",
                 shape_string(b), " cannot be broadcast together (dim ", i, ": ", da, " vs ", db,
                 ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {
int category(ScalarType t) {
  return is_floating_point(t) ? 2 : (t == ScalarType::Bool ? 0 : 1);
}
}  // namespace

ScalarType result_type(const Tensor& a, const Tensor& b) {
  const bool a_dims = a.dim() > 0;
  const bool b_dims = b.dim() > 0;
  if (a_dims == b_dims) return promote_types(a.dtype(), b.dtype());
  ScalarType with_dims = a_dims ? a.dtype() : b.dtype();
  ScalarType zero_dim = a_dims ? b.dtype() : a.dtype();
  return category(zero_dim) > category(with_dims) ? zero_dim : with_dims;
}

Tensor make_empty_tensor(IntArrayRef sizes, ScalarType dtype, Device device, const char* op) {
  int64_t numel = 1;
  for (int64_t s : sizes) {
    STRATA_CHECK(s >= 0, op, "negative size ", s, " in shape ", shape_string(sizes));
    STRATA_CHECK(s == 0 || numel <= std::numeric_limits<int64_t>::max() / 8 / s, op, "shape ",
                 shape_string(sizes), " has too many elements");
    numel *= s;
  }
  Storage storage = StorageImpl::allocate(static_cast<size_t>(numel * element_size(dtype)), device);
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, sizes));
}

}  // namespace strata
