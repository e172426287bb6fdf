// The argument checks of indexing_internal.h, shared by the indexing operator files.
#include "kernels/cpu/indexing.h"
#include "kernels/cuda/indexing.h"
#include "ops/device_choice.h"
#include "ops/indexing_internal.h"
#include "tensor/error.h"

namespace strata::indexing_detail {

void check_index_tensor(const Tensor& self, const Tensor& index, const char* op) {
  STRATA_CHECK(index.dtype() == kInt64, op, "index must be an Int64 tensor, got ", index.dtype(),
               " (shape ", shape_string(index.sizes()), ")");
  STRATA_CHECK(index.device() == self.device(), op, "index is on ", index.device(),
               " but self is on ", self.device());
}

void check_index_list(const Tensor& self, const Tensor& index, const char* op) {
  check_index_tensor(self, index, op);
  STRATA_CHECK(index.dim() <= 1, op, "index must be 0-dim or 1-D, got shape ",
               shape_string(index.sizes()));
}

void check_index_within(const Tensor& index, const Tensor& other, const char* other_name,
                        std::optional<int64_t> free_dim, const char* op) {
  STRATA_CHECK(index.dim() == other.dim(), op, "index of shape ", shape_string(index.sizes()),
               " must have as many dims as ", other_name, " of shape ",
               shape_string(other.sizes()));
  for (int64_t k = 0; k < index.dim(); ++k) {
    STRATA_CHECK(k == free_dim || index.sizes()[k] <= other.sizes()[k], op, "index of shape ",
                 shape_string(index.sizes()), " is larger than ", other_name, " of shape ",
                 shape_string(other.sizes()), " at dim ", k);
  }
}

void check_index_values(const Tensor& self, int64_t d, const Tensor& index, const char* op) {
  (on_device::is_cuda(index) ? gpu::check_index_range : cpu::check_index_range)(
      index, size_at(self, d), d, op);
}

}  // namespace strata::indexing_detail
