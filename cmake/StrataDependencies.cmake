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
  # H100/H200 (sm_90) and A100 (sm_80) unless the user names others; set before
  # enable_language, which would otherwise take nvcc's oldest default.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
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

# MPI (Debian's libopenmpi-dev) for st::dist::Group: without it the library
# builds its MPI-free parts only (DP-SGD helpers, accountant, files).
set(STRATA_MPI "auto" CACHE STRING "Build st::dist over MPI: auto (when found), ON or OFF")
set(STRATA_ENABLE_MPI OFF)
if(NOT STRATA_MPI STREQUAL "OFF")
  # MPI's C API from C++ (Strata is a C++-only project); not the old C++ bindings.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(STRATA_ENABLE_MPI ON)
  elseif(NOT STRATA_MPI STREQUAL "auto")
    message(FATAL_ERROR "STRATA_MPI=${STRATA_MPI} but MPI was not found (libopenmpi-dev)")
  endif()
endif()
# Open MPI refuses to run as root and to start more ranks than cores unless told;
# CI runs as root on two cores. For test commands only: users' mpirun lines need
# neither.
set(STRATA_MPIEXEC_TEST_FLAGS "")
if(STRATA_ENABLE_MPI)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE mpiexec_version
                  ERROR_QUIET)
  if(mpiexec_version MATCHES "Open MPI|OpenRTE")
    set(STRATA_MPIEXEC_TEST_FLAGS --allow-run-as-root --oversubscribe)
  endif()
endif()
message(STATUS "Strata: MPI collectives ${STRATA_ENABLE_MPI}")
find_package(ZLIB REQUIRED)
