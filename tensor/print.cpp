// operator<<(std::ostream&, const Tensor&): NumPy's layout with PyTorch's
// "tensor(..., dtype=...)" wrapper.
//
// Printing runs in two passes. The first walks the tensor through its strides and
// collects the elements that will be shown (all of them, or the corners of each dim
// when the tensor is large). Those alone decide the number format and the column
// width, so a huge hidden value cannot widen a short printout. The second pass lays
// the formatted cells out in nested brackets; it needs only the shape.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/dispatch_dtype.h"
#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace strata {
namespace {

constexpr int64_t kSummarizeAbove = 1000;  // numel beyond which dims are elided
constexpr int64_t kEdgeItems = 3;          // entries kept at each end of an elided dim
constexpr int64_t kGap = -1;               // marks the "..." among shown indices
constexpr std::string_view kPrefix = "tensor(";

// The indices of a dim that are printed, with kGap where entries are left out.
std::vector<int64_t> shown_indices(int64_t size, bool summarize) {
  std::vector<int64_t> idx;
  if (summarize && size > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
    idx.push_back(kGap);
    for (int64_t i = size - kEdgeItems; i < size; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < size; ++i) idx.push_back(i);
  }
  return idx;
}

// Appends the shown elements of the sub-tensor at `base`, in row-major order.
template <class T>
void collect(const T* base, const Tensor& t, int64_t dim, bool summarize, std::vector<T>& out) {
  if (dim == t.dim()) {
    out.push_back(*base);
    return;
  }
  for (int64_t i : shown_indices(t.sizes()[dim], summarize)) {
    if (i != kGap) collect(base + i * t.strides()[dim], t, dim + 1, summarize, out);
  }
}

std::string format(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

// One format for all floating cells, chosen from the finite values as NumPy does:
// integers print as "2.", a wide range of magnitudes as scientific.
template <class T>
std::vector<std::string> format_floats(const std::vector<T>& values) {
  bool all_integral = true;
  double max_abs = 0;
  double min_nonzero_abs = INFINITY;
  for (T v : values) {
    if (!std::isfinite(v)) continue;
    double a = std::fabs(static_cast<double>(v));
    all_integral = all_integral && std::floor(a) == a;
    max_abs = std::max(max_abs, a);
    if (a != 0) min_nonzero_abs = std::min(min_nonzero_abs, a);
  }
  const char* spec = "%.4f";
  if (max_abs >= 1e8 || min_nonzero_abs < 1e-4) {
    spec = "%.4e";
  } else if (all_integral) {
    spec = "%.0f.";
  }
  std::vector<std::string> cells;
  for (T v : values) {
    if (std::isnan(v)) {
      cells.push_back("nan");
    } else if (std::isinf(v)) {
      cells.push_back(v > 0 ? "inf" : "-inf");
    } else {
      cells.push_back(format(spec, static_cast<double>(v)));
    }
  }
  return cells;
}

template <class T>
std::vector<std::string> format_cells(const std::vector<T>& values) {
  if constexpr (std::is_floating_point_v<T>) {
    return format_floats(values);
  } else {
    std::vector<std::string> cells;
    for (T v : values) {
      if constexpr (std::is_same_v<T, bool>) {
        cells.push_back(v ? "True" : "False");
      } else {
        cells.push_back(std::to_string(v));
      }
    }
    return cells;
  }
}

// Writes the formatted cells in nested brackets, each right-aligned to `width`.
class Layout {
 public:
  Layout(std::ostream& out, IntArrayRef sizes, bool summarize, std::vector<std::string> cells)
      : out_(out), sizes_(sizes), summarize_(summarize), cells_(std::move(cells)) {
    for (const std::string& c : cells_) width_ = std::max(width_, c.size());
  }

  void write(size_t dim = 0) {
    if (dim == sizes_.size()) {
      const std::string& cell = cells_[next_++];
      out_ << std::string(width_ - cell.size(), ' ') << cell;
      return;
    }
    // Sub-arrays go on new lines under the first element of their parent; each dim
    // further out adds a blank line between blocks, as NumPy does.
    const size_t rows_below = sizes_.size() - dim - 1;
    std::string separator = ",";
    if (rows_below == 0) {
      separator += ' ';
    } else {
      separator.append(rows_below, '\n');
      separator.append(kPrefix.size() + dim + 1, ' ');
    }
    out_ << '[';
    bool first = true;
    for (int64_t i : shown_indices(sizes_[dim], summarize_)) {
      if (!first) out_ << separator;
      first = false;
      if (i == kGap) {
        out_ << "...";
      } else {
        write(dim + 1);
      }
    }
    out_ << ']';
  }

 private:
  std::ostream& out_;
  IntArrayRef sizes_;
  bool summarize_;
  std::vector<std::string> cells_;
  size_t width_ = 0;
  size_t next_ = 0;
};

// For tensors whose values cannot (or need not) be read: a placeholder and the metadata.
std::ostream& describe(std::ostream& out, const Tensor& t, const std::string& placeholder) {
  out << kPrefix << placeholder << ", size=" << shape_string(t.sizes())
      << ", dtype=" << to_string(t.dtype());
  if (!t.device().is_cpu()) out << ", device=" << t.device();
  return out << ')';
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  if (!t.defined()) return out << kPrefix << "undefined)";
  if (const TensorImpl* source = t.impl()->value_source(); source != t.impl()) {
    return out << Tensor(IntrusivePtr<TensorImpl>(const_cast<TensorImpl*>(source)));
  }
  if (!t.impl()->has_storage()) {
    std::string placeholder = "<";
    placeholder += t.impl()->impl_name();
    placeholder += " without storage>";
    return describe(out, t, placeholder);
  }
  if (t.numel() == 0) return describe(out, t, "[]");
  const Tensor host(host_readable(*t.impl()));

  const bool summarize = t.numel() > kSummarizeAbove;
  std::vector<std::string> cells = STRATA_DISPATCH_ALL_TYPES(t.dtype(), "print", [&] {
    std::vector<scalar_t> values;
    collect(static_cast<const scalar_t*>(host.data_ptr()), host, 0, summarize, values);
    return format_cells(values);
  });
  out << kPrefix;
  Layout(out, t.sizes(), summarize, std::move(cells)).write();
  out << ", dtype=" << to_string(t.dtype());
  if (!t.device().is_cpu()) out << ", device=" << t.device();
  return out << ')';
}

}  // namespace strata
