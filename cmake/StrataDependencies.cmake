# Everything comes from Debian's packages (scripts/install-deps.sh); nothing is
# downloaded at configure or build time.
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(TBB REQUIRED)
find_package(Threads REQUIRED)
# DLPack exchange (tensor/dlpack.h): the header only, from libdlpack-dev.
find_path(STRATA_DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)
if(STRATA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(STRATA_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# CUDA: auto-detected from /usr/local/cuda unless STRATA_CUDA says otherwise.
set(STRATA_ENABLE_CUDA OFF)
if(STRATA_CUDA STREQUAL "auto")
  if(EXISTS /usr/local/cuda/bin/nvcc)
    set(STRATA_ENABLE_CUDA ON)
  endif()
elseif(STRATA_CUDA)
  set(STRATA_ENABLE_CUDA ON)
endif()
if(STRATA_ENABLE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()
message(STATUS "Strata: CUDA backend ${STRATA_ENABLE_CUDA}, sanitizers ${STRATA_SANITIZE}")

# OpenBLAS (Debian's libopenblas-dev) runs the float/double GEMM when found, Eigen's
# GEMM otherwise: see Note [GEMM through OpenBLAS] and bench/README.md. bench/gemm
# compares against it whatever STRATA_BLAS says.
set(STRATA_BLAS "auto" CACHE STRING "GEMM through OpenBLAS: auto (when found), ON or OFF")
find_library(STRATA_OPENBLAS_LIBRARY NAMES openblas)
find_path(STRATA_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
set(STRATA_ENABLE_BLAS OFF)
if(NOT STRATA_BLAS STREQUAL "OFF")
  if(STRATA_OPENBLAS_LIBRARY AND STRATA_CBLAS_INCLUDE_DIR)
    set(STRATA_ENABLE_BLAS ON)
  elseif(NOT STRATA_BLAS STREQUAL "auto")
    message(FATAL_ERROR "STRATA_BLAS=${STRATA_BLAS} but OpenBLAS was not found (libopenblas-dev)")
  endif()
endif()
message(STATUS "Strata: OpenBLAS GEMM ${STRATA_ENABLE_BLAS}")
