#include "tensor/overlap.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "tensor/error.h"
#include "tensor/small_vector.h"

namespace strata {
namespace {

// Byte offsets (into the storage) of the first and one past the last byte t reaches.
std::pair<int64_t, int64_t> byte_range(const Tensor& t) {
  const int64_t size = static_cast<int64_t>(element_size(t.dtype()));
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.sizes()[d] - 1) * t.strides()[d];
  return {t.storage_offset() * size, (last + 1) * size};
}

// The byte offsets of every element of t, sorted.
std::vector<int64_t> element_bytes(const Tensor& t) {
  const int64_t size = static_cast<int64_t>(element_size(t.dtype()));
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t.numel()));
  DimVector index(static_cast<size_t>(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t offset = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) offset += index[d] * t.strides()[d];
    out.push_back(offset * size);
    for (int64_t d = t.dim() - 1; d >= 0 && ++index[d] == t.sizes()[d]; --d) index[d] = 0;
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage_offset() == b.storage_offset() && a.sizes() == b.sizes() &&
         a.strides() == b.strides() && a.dtype() == b.dtype();
}

}  // namespace

bool has_internal_overlap(const Tensor& t) {
  if (!t.impl()->has_storage() || t.is_contiguous()) return false;
  // Sorted by stride, each dim must step past everything the smaller ones span.
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims with size > 1
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 0) return false;
    if (t.sizes()[d] > 1) dims.emplace_back(t.strides()[d], t.sizes()[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 0;  // the largest offset the smaller dims reach
  for (const auto& [stride, size] : dims) {
    if (stride <= span) return true;
    span += (size - 1) * stride;
  }
  return false;
}

bool overlaps(const Tensor& written, const Tensor& input) {
  const TensorImpl& w = *written.impl();
  const TensorImpl& i = *input.impl();
  if (!w.has_storage() || !i.has_storage() || w.storage().get() != i.storage().get()) return false;
  if (written.numel() == 0 || input.numel() == 0) return false;
  const auto [w_begin, w_end] = byte_range(written);
  const auto [i_begin, i_end] = byte_range(input);
  if (w_end <= i_begin || i_end <= w_begin) return false;
  if (written.dtype() != input.dtype()) return true;
  // The ranges meet: compare the elements (only aliasing calls get here).
  const std::vector<int64_t> a = element_bytes(written);
  const std::vector<int64_t> b = element_bytes(input);
  for (size_t x = 0, y = 0; x < a.size() && y < b.size();) {
    if (a[x] == b[y]) return true;
    a[x] < b[y] ? ++x : ++y;
  }
  return false;
}

bool partially_overlaps(const Tensor& written, const Tensor& input) {
  return !same_view(written, input) && overlaps(written, input);
}

void check_no_overlap(const Tensor& written, const Tensor& input, const char* op) {
  STRATA_CHECK(!overlaps(written, input), op, "unsupported operation: the written tensor (shape ",
               shape_string(written.sizes()), ") and an input (shape ", shape_string(input.sizes()),
               ") share memory, and this op reads its inputs in another order than it writes; "
               "call .clone() on the input first");
}

void detail::check_no_internal_overlap_strided(const Tensor& written, const char* op) {
  STRATA_CHECK(!has_internal_overlap(written), op,
               "unsupported operation: more than one element of the written tensor (shape ",
               shape_string(written.sizes()), ", strides ", shape_string(written.strides()),
               ") refers to a single memory location, e.g. an expanded tensor; call .clone() "
               "before writing into it");
}

void detail::check_no_partial_overlap_shared(const Tensor& written, const Tensor& input,
                                             const char* op) {
  STRATA_CHECK(!partially_overlaps(written, input), op,
               "unsupported operation: the written tensor (shape ", shape_string(written.sizes()),
               ", strides ", shape_string(written.strides()), ") and an input (shape ",
               shape_string(input.sizes()), ", strides ", shape_string(input.strides()),
               ") share part of their memory; call .clone() on the input first");
}

}  // namespace strata
