// The einsum loop nest on CUDA (kernels/cuda/linalg.h): one thread per output
// element walks the summed letters in the CPU kernel's order (the last letter
// fastest), multiplying the operands in their order, so both backends add the
// same products in the same sequence.
#include <cstdint>

#include "kernels/cpu/linalg.h"
#include "kernels/cuda/geometry.cuh"
#include "kernels/cuda/linalg.h"
#include "kernels/cuda/runtime.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace strata::gpu {
namespace {

constexpr int kMaxLetters = 16;
constexpr int kMaxOperands = 8;

template <class T>
struct Nest {
  int letters, outputs, operands;
  int64_t summed;  // elements of the summed letters' box
  int64_t sizes[kMaxLetters];
  int64_t strides[kMaxOperands][kMaxLetters];
  const T* data[kMaxOperands];
};

template <class T>
__global__ void einsum_outputs(T* out, Nest<T> nest, int64_t n) {
  STRATA_GRID_LOOP(o, n) {
    int64_t index[kMaxLetters];
    int64_t offset[kMaxOperands];
    int64_t rest = o;
    for (int d = nest.outputs - 1; d >= 0; --d) {
      index[d] = rest % nest.sizes[d];
      rest /= nest.sizes[d];
    }
    for (int d = nest.outputs; d < nest.letters; ++d) index[d] = 0;
    for (int t = 0; t < nest.operands; ++t) {
      offset[t] = 0;
      for (int d = 0; d < nest.outputs; ++d) offset[t] += index[d] * nest.strides[t][d];
    }
    T sum = T(0);
    for (int64_t s = 0; s < nest.summed; ++s) {
      T product = T(1);
      for (int t = 0; t < nest.operands; ++t) product *= nest.data[t][offset[t]];
      sum += product;
      // Next summed index, the last letter fastest; a wrapped letter rewinds.
      for (int d = nest.letters - 1; d >= nest.outputs; --d) {
        for (int t = 0; t < nest.operands; ++t) offset[t] += nest.strides[t][d];
        if (++index[d] < nest.sizes[d]) break;
        for (int t = 0; t < nest.operands; ++t) offset[t] -= nest.sizes[d] * nest.strides[t][d];
        index[d] = 0;
      }
    }
    out[o] = sum;
  }
}

}  // namespace

void einsum_loop_kernel(const Tensor& out, ArrayRef<Tensor> operands, const cpu::EinsumLoop& loop) {
  constexpr const char* op = "strata::einsum";
  const int64_t letters = static_cast<int64_t>(loop.sizes.size());
  STRATA_CHECK(letters <= kMaxLetters && static_cast<int64_t>(operands.size()) <= kMaxOperands,
               op, "the CUDA einsum loop takes at most ", kMaxLetters, " letters and ",
               kMaxOperands, " operands (got ", letters, " and ", operands.size(), ")");
  for (const Tensor& t : operands) check_same_device(op, out.device(), t.device());
  launch_elements<int64_t, float, double>(
      op, out, out.dtype(), out.numel(), [&](auto tag, int grid, cudaStream_t stream) {
        using T = decltype(tag);
        Nest<T> nest{static_cast<int>(letters), static_cast<int>(loop.num_output_letters),
                     static_cast<int>(operands.size()), 1, {}, {}, {}};
        for (int64_t d = 0; d < letters; ++d) {
          nest.sizes[d] = loop.sizes[d];
          if (d >= loop.num_output_letters) nest.summed *= loop.sizes[d];
          for (int t = 0; t < nest.operands; ++t) nest.strides[t][d] = loop.operand_strides[t][d];
        }
        for (int t = 0; t < nest.operands; ++t) nest.data[t] = data_of<const T>(operands[t]);
        einsum_outputs<T><<<grid, kBlock, 0, stream>>>(data_of<T>(out), nest, out.numel());
      });
}

}  // namespace strata::gpu
