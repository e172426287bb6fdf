#include "kernels/cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

#include "tensor/error.h"

namespace strata::gpu {
namespace {

#define STRATA_STRINGIFY_EXPANDED(name) STRATA_STRINGIFY(name)
#define STRATA_STRINGIFY(name) #name

const std::string kSoname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

// By soname first (the loader's search: LD_LIBRARY_PATH, libstrata's run path,
// the system's cache), then in the toolkit's library folder this build found.
void* open_library() {
  void* library = dlopen(kSoname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library != nullptr) return library;
  std::string errors = dlerror();
#ifdef STRATA_CUDA_LIBRARY_DIR
  const std::string in_toolkit = std::string(STRATA_CUDA_LIBRARY_DIR) + "/" + kSoname;
  library = dlopen(in_toolkit.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library != nullptr) return library;
  errors += "; ";
  errors += dlerror();
#endif
  STRATA_FAIL("cublas", "cannot open ", kSoname, " (the cuBLAS of CUDA ", CUBLAS_VER_MAJOR,
              ", needed by matrix products on CUDA): ", errors);
}

template <class Fn>
void resolve(void* library, Fn& entry, const char* symbol) {
  dlerror();
  entry = reinterpret_cast<Fn>(dlsym(library, symbol));
  const char* error = dlerror();
  STRATA_CHECK(entry != nullptr && error == nullptr, "cublas", kSoname, " has no ", symbol, ": ",
               error != nullptr ? error : "null symbol");
}

CublasLibrary load() {
  void* library = open_library();  // kept open for the program's life
  CublasLibrary lib{};
#define STRATA_RESOLVE(field, name) resolve(library, lib.field, STRATA_STRINGIFY_EXPANDED(name))
  STRATA_RESOLVE(get_property, cublasGetProperty);
  STRATA_RESOLVE(status_string, cublasGetStatusString);
  STRATA_RESOLVE(create, cublasCreate);
  STRATA_RESOLVE(set_stream, cublasSetStream);
  STRATA_RESOLVE(sgemm, cublasSgemm);
  STRATA_RESOLVE(dgemm, cublasDgemm);
  STRATA_RESOLVE(sgemm_strided_batched, cublasSgemmStridedBatched);
  STRATA_RESOLVE(dgemm_strided_batched, cublasDgemmStridedBatched);
#undef STRATA_RESOLVE
  return lib;
}

}  // namespace

const CublasLibrary& cublas() {
  static const CublasLibrary library = load();
  return library;
}

}  // namespace strata::gpu
