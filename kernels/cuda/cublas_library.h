#pragma once

// Note [cuBLAS loaded on first use]
// libcublas pulls in libcublasLt, whose start-up registers its device code: linked
// into libstrata, it added ~0.4 s to the start of every program, on machines
// with or without a GPU, CUDA used or not. So cuBLAS is opened with dlopen at the
// first call that needs it, and its entry points are called through this table.
// Included by kernels/cuda/ sources only (it pulls in cublas_v2.h).

#include <cublas_v2.h>

namespace strata::gpu {

// cuBLAS's entry points. The names of cublas_v2.h are macros for the _v2
// symbols, so decltype of them is the type of the symbol looked up.
struct CublasLibrary {
  decltype(&cublasGetProperty) get_property;
  decltype(&cublasGetStatusString) status_string;
  decltype(&cublasCreate) create;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSgemm) sgemm;
  decltype(&cublasDgemm) dgemm;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
};

// The library of the major version this build was compiled against, opened and
// resolved on the first call (once, thread-safe). Raises strata::Error naming the
// library, the places tried and the loader's message when it or a symbol is missing.
const CublasLibrary& cublas();

}  // namespace strata::gpu
