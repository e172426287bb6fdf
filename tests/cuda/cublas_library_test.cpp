// cuBLAS, opened on first use (Note [cuBLAS loaded on first use]): its entry
// points resolve, to the library of the version this build was compiled
// against. Neither needs a GPU, so these run on every machine.
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/cublas_library.h"

namespace strata::gpu {
namespace {

TEST(CublasLibrary, OpensTheVersionTheBuildWasCompiledAgainst) {
  const CublasLibrary& lib = cublas();
  int major = -1;
  ASSERT_EQ(lib.get_property(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(major, CUBLAS_VER_MAJOR);
  EXPECT_EQ(&cublas(), &lib) << "opened once";
}

TEST(CublasLibrary, EveryEntryPointResolves) {
  const CublasLibrary& lib = cublas();
  EXPECT_NE(lib.create, nullptr);
  EXPECT_NE(lib.set_stream, nullptr);
  EXPECT_NE(lib.sgemm, nullptr);
  EXPECT_NE(lib.dgemm, nullptr);
  EXPECT_NE(lib.sgemm_strided_batched, nullptr);
  EXPECT_NE(lib.dgemm_strided_batched, nullptr);
  // A call that needs no device: the status names are the library's own.
  const std::string name = lib.status_string(CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_NE(name.find("not initialized"), std::string::npos) << name;
}

}  // namespace
}  // namespace strata::gpu
