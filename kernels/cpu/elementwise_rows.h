#pragma once

// The row functions of Note [Elementwise loops], shared by the elementwise kernel
// files. Pulls in Eigen: include it from kernels/cpu/*.cpp only.

#include <Eigen/Core>
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <utility>

#include "kernels/cpu/elementwise.h"
#include "kernels/int_pow.h"
#include "kernels/cpu/parallel.h"
#include "tensor/error.h"
#include "tensor/scalar_type.h"
#include "tensor/tensor.h"

namespace strata::cpu {

template <class T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class T>
T& element(char* row, int64_t stride, int64_t i) {
  return *reinterpret_cast<T*>(row + i * stride);
}

// Calls f(T{}) for the T among Ts that matches dtype; any other dtype is an error
// naming `op`. Only the listed types are instantiated.
template <class... Ts, class F>
void dispatch_among(ScalarType dtype, const char* op, F&& f) {
  const bool found = ((dtype == scalar_type_of<Ts> ? (f(Ts{}), true) : false) || ...);
  STRATA_CHECK(found, op, "the CPU kernel does not support dtype ", dtype);
}

template <class F>
void dispatch_floating(ScalarType dtype, const char* op, F&& f) {
  dispatch_among<float, double>(dtype, op, std::forward<F>(f));
}
template <class F>
void dispatch_numeric(ScalarType dtype, const char* op, F&& f) {
  dispatch_among<int64_t, float, double>(dtype, op, std::forward<F>(f));
}
template <class F>
void dispatch_all(ScalarType dtype, const char* op, F&& f) {
  dispatch_among<bool, int64_t, float, double>(dtype, op, std::forward<F>(f));
}

// Runs row(data, strides, n) over every row of the layout.
template <class Row>
void run_rows(const ElementwiseLayout& layout, const Row& row) {
  run_elementwise(
      layout,
      [](void* ctx, char** data, const int64_t* strides, int64_t n) {
        (*static_cast<const Row*>(ctx))(data, strides, n);
      },
      const_cast<Row*>(&row));
}

// Whether out and its inputs run as one row: out contiguous, each input
// contiguous over out's shape or a single element (broadcast with stride 0).
// Inline: every small elementwise call asks.
inline bool is_single_row(const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  if (!out.is_contiguous()) return false;
  for (const Tensor* t : inputs) {
    if (t->numel() != 1 && !(t->is_contiguous() && t->sizes() == out.sizes())) return false;
  }
  return true;
}

// Runs row(data, strides, n) over out and its inputs (Note [Elementwise loops]).
// The common small call (out contiguous, each input contiguous over out's shape
// or a single element, too few elements to split across threads) is one row
// called directly: building the layout's dim vectors costs more than the row
// itself for the scalars and short vectors that nested transforms work on.
template <class Row>
void run_rows(const Tensor& out, std::initializer_list<const Tensor*> inputs, const Row& row) {
  const int64_t n = out.numel();
  if (n == 0 || n > kElementwiseGrain || !is_single_row(out, inputs)) {
    ElementwiseLayout layout = make_elementwise_layout(out, inputs);
    layout.stream_output = output_streams(layout, element_size(out.dtype()));
    run_rows(layout, row);
    return;
  }
  std::array<char*, kMaxOperands> data{static_cast<char*>(out.data_ptr())};
  std::array<int64_t, kMaxOperands> strides{element_size(out.dtype())};
  size_t k = 0;
  for (const Tensor* t : inputs) {
    ++k;
    data[k] = static_cast<char*>(t->data_ptr());
    strides[k] = t->numel() == 1 ? 0 : element_size(t->dtype());
  }
  row(data.data(), strides.data(), n);
}

// An op with an Eigen array expression for whole contiguous rows.
template <class Op, class In>
concept HasArrayForm = requires(const Op& op, const ConstArrayMap<In>& x) {
  op.array(x);
};

// Note [One code path per element]
// Eigen's SIMD form of a function (pexp, plogistic, psin for float, ...) and its
// scalar std:: form differ in the last bit for some inputs. Eigen's loop over a
// dynamic-size Map runs the scalar form on the elements before the first aligned
// address and after the last whole packet, and where the driver cuts a row into
// chunks depends on TBB's thread count: an element's bits would depend on the
// thread count and on the tensor's offset. So an op with an array form computes
// every element with the packet form: whole packets in place (fixed-size maps,
// which Eigen does not peel for alignment), a contiguous row's ragged end as the
// row's last whole packet, strided rows and rows shorter than a packet gathered
// into one, a broadcast value as one packet. An element's result depends only on
// its input.
template <class In>
inline constexpr int64_t kPacketSize = Eigen::internal::packet_traits<In>::size;

template <class Out, class In, class Op>
void packet_form_row(char** data, const int64_t* strides, int64_t n, const Op& op) {
  constexpr int64_t P = kPacketSize<In>;
  using InPacket = Eigen::Array<In, P, 1>;
  using OutPacket = Eigen::Array<Out, P, 1>;
  Out* out = reinterpret_cast<Out*>(data[0]);
  const In* in = reinterpret_cast<const In*>(data[1]);
  if (strides[0] == sizeof(Out) && strides[1] == 0) {
    const OutPacket value = op.array(InPacket::Constant(*in));
    std::fill_n(out, n, value[0]);
    return;
  }
  int64_t i = 0;
  if (strides[0] == sizeof(Out) && strides[1] == sizeof(In) && n >= P) {
    // The ragged end as the row's last whole packet, read before any write (out
    // may be in): a packet gathered from scattered stores stalls the load.
    const OutPacket last = op.array(Eigen::Map<const InPacket>(in + n - P));
    for (; i + P <= n; i += P) {
      Eigen::Map<OutPacket>(out + i) = op.array(Eigen::Map<const InPacket>(in + i));
    }
    std::copy(last.data() + (i - (n - P)), last.data() + P, out + i);
    return;
  }
  for (; i < n; i += P) {
    const int64_t m = std::min(P, n - i);
    // Lanes past m hold zeros: every array form is defined there (or gives inf/NaN,
    // which never traps), and they are not written back.
    InPacket x = InPacket::Zero();
    for (int64_t k = 0; k < m; ++k) x[k] = element<const In>(data[1], strides[1], i + k);
    const OutPacket y = op.array(x);
    for (int64_t k = 0; k < m; ++k) element<Out>(data[0], strides[0], i + k) = y[k];
  }
}

// out = op(in): op(x) per element, or op.array on packets when it has an array
// form (Note [One code path per element]).
template <class Out, class In, class Op>
void unary_row(char** data, const int64_t* strides, int64_t n, const Op& op) {
  if constexpr (HasArrayForm<Op, In>) {
    packet_form_row<Out, In>(data, strides, n, op);
  } else {
    Out* out = reinterpret_cast<Out*>(data[0]);
    const In* in = reinterpret_cast<const In*>(data[1]);
    if (strides[0] == sizeof(Out) && strides[1] == sizeof(In)) {
      for (int64_t i = 0; i < n; ++i) out[i] = op(in[i]);
    } else if (strides[0] == sizeof(Out) && strides[1] == 0) {
      std::fill_n(out, n, op(*in));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        element<Out>(data[0], strides[0], i) = op(element<const In>(data[1], strides[1], i));
      }
    }
  }
}

// out = op(a, b), with the broadcast value hoisted when a or b has stride 0.
template <class Out, class In, class Op>
void binary_row(char** data, const int64_t* strides, int64_t n, const Op& op) {
  Out* out = reinterpret_cast<Out*>(data[0]);
  const In* a = reinterpret_cast<const In*>(data[1]);
  const In* b = reinterpret_cast<const In*>(data[2]);
  constexpr int64_t so = sizeof(Out);
  constexpr int64_t si = sizeof(In);
  if (strides[0] == so && strides[1] == si && strides[2] == si) {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i]);
  } else if (strides[0] == so && strides[1] == si && strides[2] == 0) {
    const In bv = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], bv);
  } else if (strides[0] == so && strides[1] == 0 && strides[2] == si) {
    const In av = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = op(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      element<Out>(data[0], strides[0], i) =
          op(element<const In>(data[1], strides[1], i), element<const In>(data[2], strides[2], i));
    }
  }
}

template <class Out, class In, class Op>
void run_unary(const Tensor& out, const Tensor& in, const Op& op) {
  run_rows(out, {&in}, [&op](char** data, const int64_t* strides, int64_t n) {
    unary_row<Out, In>(data, strides, n, op);
  });
}

template <class Out, class In, class Op>
void run_binary(const Tensor& out, const Tensor& a, const Tensor& b, const Op& op) {
  run_rows(out, {&a, &b}, [&op](char** data, const int64_t* strides, int64_t n) {
    binary_row<Out, In>(data, strides, n, op);
  });
}

}  // namespace strata::cpu
