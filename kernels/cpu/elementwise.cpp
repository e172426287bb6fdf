#include "kernels/cpu/elementwise.h"

#include "kernels/cpu/parallel.h"
#include "tensor/dispatch_dtype.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::cpu {

ElementwiseLayout make_elementwise_layout(const Tensor& out,
                                          std::initializer_list<const Tensor*> inputs) {
  ElementwiseLayout layout;
  layout.num_operands = 1 + static_cast<int>(inputs.size());
  layout.numel = out.numel();
  const int64_t rank = out.dim();
  std::array<const Tensor*, kMaxOperands> operands{&out};
  int n = 1;
  for (const Tensor* t : inputs) operands[n++] = t;

  // Fast path: every operand contiguous over out's shape, or a single element
  // (broadcast with stride 0): one row of numel elements.
  bool flat = out.is_contiguous();
  for (int op = 1; flat && op < layout.num_operands; ++op) {
    const Tensor& t = *operands[op];
    flat = t.numel() == 1 || (t.is_contiguous() && t.sizes() == out.sizes());
  }
  if (flat) {
    if (layout.numel != 1) layout.shape.push_back(layout.numel);
    for (int op = 0; op < layout.num_operands; ++op) {
      const Tensor& t = *operands[op];
      layout.data[op] = static_cast<char*>(t.data_ptr());
      if (layout.numel != 1) {
        layout.strides[op].push_back(t.numel() == 1 ? 0 : element_size(t.dtype()));
      }
    }
    return layout;
  }

  // Strides in bytes over out's shape; broadcast dims of inputs get stride 0.
  std::array<DimVector, kMaxOperands> strides;
  for (int op = 0; op < layout.num_operands; ++op) {
    const Tensor& t = *operands[op];
    const int64_t esize = element_size(t.dtype());
    const int64_t offset = rank - t.dim();
    strides[op].resize(static_cast<size_t>(rank), 0);
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (t.sizes()[d] != 1) strides[op][d + offset] = t.strides()[d] * esize;
    }
    layout.data[op] = static_cast<char*>(t.data_ptr());
  }

  // Merge dim d into the running dim when every operand steps through both as one.
  DimVector shape;
  std::array<DimVector, kMaxOperands> merged;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = out.sizes()[d];
    if (size == 1) continue;
    bool can_merge = !shape.empty();
    for (int op = 0; can_merge && op < layout.num_operands; ++op) {
      can_merge = merged[op].back() == strides[op][d] * size;
    }
    if (can_merge) {
      shape.back() *= size;
      for (int op = 0; op < layout.num_operands; ++op) merged[op].back() = strides[op][d];
    } else {
      shape.push_back(size);
      for (int op = 0; op < layout.num_operands; ++op) merged[op].push_back(strides[op][d]);
    }
  }
  layout.shape = shape;
  layout.strides = merged;
  return layout;
}

namespace {

// Runs the linear element range [begin, end) of the layout, row by row.
void run_range(const ElementwiseLayout& layout, int64_t begin, int64_t end, RowFn fn, void* ctx) {
  const int nops = layout.num_operands;
  const int64_t ndim = static_cast<int64_t>(layout.shape.size());
  std::array<char*, kMaxOperands> ptrs = layout.data;
  std::array<int64_t, kMaxOperands> inner{};
  if (ndim == 0) {
    fn(ctx, ptrs.data(), inner.data(), 1);
    return;
  }
  for (int op = 0; op < nops; ++op) inner[op] = layout.strides[op][ndim - 1];
  DimVector index(static_cast<size_t>(ndim), 0);
  int64_t remainder = begin;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    index[d] = remainder % layout.shape[d];
    remainder /= layout.shape[d];
  }
  const int64_t row_size = layout.shape[ndim - 1];
  while (begin < end) {
    for (int op = 0; op < nops; ++op) {
      char* p = layout.data[op];
      for (int64_t d = 0; d < ndim; ++d) p += index[d] * layout.strides[op][d];
      ptrs[op] = p;
    }
    const int64_t n = std::min(row_size - index[ndim - 1], end - begin);
    fn(ctx, ptrs.data(), inner.data(), n);
    begin += n;
    index[ndim - 1] += n;
    for (int64_t d = ndim - 1; d > 0 && index[d] == layout.shape[d]; --d) {
      index[d] = 0;
      ++index[d - 1];
    }
  }
}

template <class T, class Op>
void binary_row(char** data, const int64_t* strides, int64_t n, Op op) {
  T* out = reinterpret_cast<T*>(data[0]);
  const T* a = reinterpret_cast<const T*>(data[1]);
  const T* b = reinterpret_cast<const T*>(data[2]);
  constexpr int64_t s = sizeof(T);
  if (strides[0] == s && strides[1] == s && strides[2] == s) {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i]);
  } else if (strides[0] == s && strides[1] == s && strides[2] == 0) {
    const T bv = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], bv);
  } else if (strides[0] == s && strides[1] == 0 && strides[2] == s) {
    const T av = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = op(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<T*>(data[0] + i * strides[0]) =
          op(*reinterpret_cast<const T*>(data[1] + i * strides[1]),
             *reinterpret_cast<const T*>(data[2] + i * strides[2]));
    }
  }
}

// Adapts a capturing row lambda to RowFn.
template <class Row>
void run_row_lambda(const ElementwiseLayout& layout, Row& row) {
  run_elementwise(
      layout,
      [](void* ctx, char** data, const int64_t* strides, int64_t n) {
        (*static_cast<Row*>(ctx))(data, strides, n);
      },
      &row);
}

void check_same_dtype(const Tensor& out, const Tensor& a, const Tensor& b, const char* op) {
  STRATA_CHECK(a.dtype() == out.dtype() && b.dtype() == out.dtype(), op,
               "kernel expects inputs of the output's dtype ", out.dtype(), ", got ", a.dtype(),
               " and ", b.dtype());
}

}  // namespace

void run_elementwise(const ElementwiseLayout& layout, RowFn fn, void* ctx) {
  if (layout.numel == 0) return;
  parallel_for(0, layout.numel, kElementwiseGrain,
               [&](int64_t begin, int64_t end) { run_range(layout, begin, end, fn, ctx); });
}

void add_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_same_dtype(out, a, b, "strata::add");
  ElementwiseLayout layout = make_elementwise_layout(out, {&a, &b});
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::add", [&] {
    const scalar_t k = alpha.to<scalar_t>();
    auto row = [k](char** data, const int64_t* strides, int64_t n) {
      if constexpr (std::is_same_v<scalar_t, bool>) {
        binary_row<scalar_t>(data, strides, n, [k](bool x, bool y) { return x || (k && y); });
      } else if (k == scalar_t(1)) {
        binary_row<scalar_t>(data, strides, n, [](scalar_t x, scalar_t y) { return x + y; });
      } else {
        binary_row<scalar_t>(data, strides, n, [k](scalar_t x, scalar_t y) { return x + k * y; });
      }
    };
    run_row_lambda(layout, row);
  });
}

void mul_kernel(const Tensor& out, const Tensor& a, const Tensor& b) {
  check_same_dtype(out, a, b, "strata::mul");
  ElementwiseLayout layout = make_elementwise_layout(out, {&a, &b});
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::mul", [&] {
    auto row = [](char** data, const int64_t* strides, int64_t n) {
      if constexpr (std::is_same_v<scalar_t, bool>) {
        binary_row<scalar_t>(data, strides, n, [](bool x, bool y) { return x && y; });
      } else {
        binary_row<scalar_t>(data, strides, n, [](scalar_t x, scalar_t y) { return x * y; });
      }
    };
    run_row_lambda(layout, row);
  });
}

void fill_kernel(const Tensor& out, const Scalar& value) {
  ElementwiseLayout layout = make_elementwise_layout(out, {});
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::fill_", [&] {
    const scalar_t v = value.to<scalar_t>();
    auto row = [v](char** data, const int64_t* strides, int64_t n) {
      if (strides[0] == sizeof(scalar_t)) {
        scalar_t* out = reinterpret_cast<scalar_t*>(data[0]);
        for (int64_t i = 0; i < n; ++i) out[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<scalar_t*>(data[0] + i * strides[0]) = v;
      }
    };
    run_row_lambda(layout, row);
  });
}

void copy_kernel(const Tensor& out, const Tensor& src) {
  ElementwiseLayout layout = make_elementwise_layout(out, {&src});
  STRATA_DISPATCH_ALL_TYPES(out.dtype(), "strata::copy_", [&] {
    using out_t = scalar_t;
    STRATA_DISPATCH_ALL_TYPES(src.dtype(), "strata::copy_", [&] {
      using src_t = scalar_t;
      auto row = [](char** data, const int64_t* strides, int64_t n) {
        if (strides[0] == sizeof(out_t) && strides[1] == sizeof(src_t)) {
          out_t* o = reinterpret_cast<out_t*>(data[0]);
          const src_t* s = reinterpret_cast<const src_t*>(data[1]);
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<out_t>(s[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) {
            *reinterpret_cast<out_t*>(data[0] + i * strides[0]) =
                static_cast<out_t>(*reinterpret_cast<const src_t*>(data[1] + i * strides[1]));
          }
        }
      };
      run_row_lambda(layout, row);
    });
  });
}

}  // namespace strata::cpu
