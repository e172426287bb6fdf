#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <tuple>
#include <vector>

#include "tensor/array_ref.h"
#include "tensor/intrusive_ptr.h"
#include "tensor/scalar.h"
#include "tensor/tensor_impl.h"

namespace strata {

// A cheap ref-counted handle to a TensorImpl. Copying a Tensor shares the data;
// `clone()` copies it. Methods that compute (add, mul, fill_, ...) call operators
// through the dispatcher; they are defined with their operator under ops/.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(IntrusivePtr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const IntrusivePtr<TensorImpl>& impl_ptr() const { return impl_; }

  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  // Negative dims count from the end; out-of-range dims throw.
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  ScalarType dtype() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  DispatchKeySet key_set() const { return impl_->key_set(); }
  uint32_t version() const { return impl_->version(); }

  void* data_ptr() const { return impl_->data_ptr(); }
  // Typed pointer to element 0; throws if T does not match the dtype.
  template <class T>
  T* data_ptr() const;

  // The value of a one-element tensor, converted to T.
  template <class T>
  T item() const;
  // All values in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;

  // ---- operators: each is defined with its operator family under ops/ ----
  // Out-of-place ops return a new tensor; in-place ops (trailing _) write into
  // *this, bump its version and return it. Scalars (`x * 2.0`) take part as
  // "wrapped numbers": they promote like a Python number (see result_type).

  // ops/elementwise_unary.cpp
  Tensor neg() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor exp() const;
  Tensor expm1() const;
  Tensor log() const;
  Tensor log1p() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu() const;
  Tensor silu() const;  // x * sigmoid(x)
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;  // halves to even
  Tensor softplus(const Scalar& beta = 1, const Scalar& threshold = 20) const;
  Tensor square() const;
  Tensor pow(const Scalar& exponent) const;
  Tensor logical_not() const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  const Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;

  // ops/elementwise_unary_inplace.cpp
  const Tensor& neg_() const;
  const Tensor& abs_() const;
  const Tensor& sign_() const;
  const Tensor& square_() const;
  const Tensor& relu_() const;
  const Tensor& floor_() const;
  const Tensor& ceil_() const;
  const Tensor& round_() const;
  const Tensor& exp_() const;
  const Tensor& expm1_() const;
  const Tensor& log_() const;
  const Tensor& log1p_() const;
  const Tensor& sqrt_() const;
  const Tensor& rsqrt_() const;
  const Tensor& reciprocal_() const;
  const Tensor& sin_() const;
  const Tensor& cos_() const;
  const Tensor& tanh_() const;
  const Tensor& sigmoid_() const;
  const Tensor& silu_() const;

  // ops/elementwise_binary.cpp
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor atan2(const Tensor& other) const;  // the angle of (other, self), as std::atan2
  Tensor eq(const Tensor& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  const Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  const Tensor& mul_(const Tensor& other) const;
  const Tensor& div_(const Tensor& other) const;
  const Tensor& pow_(const Tensor& exponent) const;
  const Tensor& atan2_(const Tensor& other) const;

  // ops/fill_copy.cpp
  const Tensor& fill_(const Scalar& value) const;
  const Tensor& zero_() const;
  const Tensor& copy_(const Tensor& src) const;
  // A copy converted to dtype (the tensor itself if it already has it).
  Tensor to(ScalarType dtype) const;
  // A copy on `device` (the tensor itself if it is there already): host <-> GPU.
  Tensor to(Device device) const;
  Tensor clone() const;
  // Itself if contiguous, else a contiguous copy.
  Tensor contiguous() const;

  // ops/reduction_*.cpp — an empty `dim` list reduces over every dim.
  Tensor sum() const;
  Tensor sum(IntArrayRef dim, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(IntArrayRef dim, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;  // values, indices
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  Tensor var(IntArrayRef dim = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(IntArrayRef dim = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2, IntArrayRef dim = {}, bool keepdim = false) const;

  // ops/scan_sort.cpp — along one dim. Integer and Bool cumsums are Int64. sort is
  // stable (ties keep their order) and puts NaN last ascending, first descending;
  // topk's ties go to the lower index. Both return values and Int64 indices.
  Tensor cumsum(int64_t dim) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true) const;

  // ops/linalg.cpp
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor dot(const Tensor& other) const;
  Tensor outer(const Tensor& other) const;

  // ops/shape.cpp — views share storage with *this.
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;  // a view when the strides allow, else a copy
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor expand(IntArrayRef sizes) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor movedim(int64_t source, int64_t destination) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;

  // ops/indexing.cpp
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha = 1) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  const Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
  const Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                           const Scalar& alpha = 1) const;
  const Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;

  // ops/index_put.cpp — x[i0, i1, ...] of PyTorch: Int64 indices broadcast
  // together, a Bool mask stands for the dims it covers (its nonzero positions),
  // an undefined Tensor() is a full slice (x[:, i] is x.index({Tensor(), i})).
  // Adjacent indices put their positions where their dims were; indices a slice
  // separates put them first (ops/index_slices.cpp). index_put writes values
  // there (accumulate: adds, repeats included); masked_select is x[mask] after
  // broadcasting x and mask, as 1-D.
  Tensor index(const std::vector<Tensor>& indices) const;
  Tensor index_put(const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate = false) const;
  const Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values,
                           bool accumulate = false) const;
  Tensor masked_select(const Tensor& mask) const;

  // ops/softmax.cpp
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;

 private:
  IntrusivePtr<TensorImpl> impl_;
};

// Prints like NumPy: nested brackets, aligned columns, "..." past 1000 elements.
std::ostream& operator<<(std::ostream& out, const Tensor& t);

// "[2, 3]" for messages.
std::string shape_string(IntArrayRef sizes);

// Wraps a negative dim and checks it against rank; `op` names the caller in errors.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);

}  // namespace strata
