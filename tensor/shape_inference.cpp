#include "tensor/shape_inference.h"

#include <array>
#include <limits>
#include <vector>
#include <optional>

#include "tensor/dispatch_dtype.h"
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
// The dtype a wrapped number of this kind stands for when it decides.
ScalarType wrapped_default(ScalarType t) { return is_floating_point(t) ? kFloat32 : t; }

// Over pointers, so the common two-operand call copies no Tensor handle (each
// copy is an atomic reference-count update).
template <class Pointers>
ScalarType result_type_of(const Pointers& operands) {
  // Per class: the promoted dtype so far, or nothing.
  std::optional<ScalarType> dims, zero_dim, wrapped;
  auto fold = [](std::optional<ScalarType>& acc, ScalarType t) {
    acc = acc ? promote_types(*acc, t) : t;
  };
  for (const Tensor* t : operands) {
    if (!t->defined()) continue;
    if (t->impl()->is_wrapped_number()) {
      fold(wrapped, t->dtype());
    } else if (t->dim() > 0) {
      fold(dims, t->dtype());
    } else {
      fold(zero_dim, t->dtype());
    }
  }
  std::optional<ScalarType> result = dims;
  if (zero_dim && (!result || category(*zero_dim) > category(*result))) result = *zero_dim;
  if (wrapped && (!result || category(*wrapped) > category(*result))) {
    result = result ? wrapped_default(*wrapped) : *wrapped;
  }
  STRATA_CHECK(result.has_value(), "result_type", "no defined tensor among the operands");
  return *result;
}

}  // namespace

ScalarType result_type(ArrayRef<Tensor> operands) {
  std::vector<const Tensor*> pointers;
  pointers.reserve(operands.size());
  for (const Tensor& t : operands) pointers.push_back(&t);
  return result_type_of(pointers);
}

ScalarType result_type(const Tensor& a, const Tensor& b) {
  const std::array<const Tensor*, 2> pointers{&a, &b};
  return result_type_of(pointers);
}

Tensor wrapped_scalar_tensor(const Scalar& value) {
  Tensor t = make_empty_tensor({}, value.kind(), kCPU, "wrapped_scalar_tensor");
  STRATA_DISPATCH_ALL_TYPES(value.kind(), "wrapped_scalar_tensor",
                            [&] { *t.data_ptr<scalar_t>() = value.to<scalar_t>(); });
  t.impl()->set_wrapped_number(true);
  return t;
}

Tensor make_empty_tensor(IntArrayRef sizes, ScalarType dtype, Device device, const char* op) {
  int64_t numel = 1;
  for (int64_t s : sizes) {
    STRATA_CHECK(s >= 0, op, "negative size ", s, " in shape ", shape_string(sizes));
    STRATA_CHECK(s == 0 || numel <= std::numeric_limits<int64_t>::max() / 8 / s, op, "shape ",
                 shape_string(sizes), " has too many elements");
    numel *= s;
  }
  const size_t bytes = static_cast<size_t>(numel * element_size(dtype));
  Storage storage;
  try {
    storage = StorageImpl::allocate(bytes, device);
  } catch (const Error& e) {
    STRATA_FAIL(op, "cannot allocate the result, a ", to_string(dtype), " tensor of shape ",
                shape_string(sizes), " (", bytes, " bytes on ", device, "): ", e.what());
  }
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, sizes));
}

}  // namespace strata
