// st::dist collectives of CUDA leaves over NCCL (Note [NCCL for CUDA leaves] in
// distributed/nccl_collectives.h).
#include "distributed/nccl_collectives.h"

#include <dlfcn.h>
#include <nccl.h>

#include <sstream>

#include "kernels/cuda/runtime.h"
#include "tensor/error.h"

namespace strata::dist {

struct NcclState {
  ncclComm_t comm = nullptr;
  Device device;
};

namespace {

// The NCCL entry points Strata calls, from the library loaded at run time.
struct NcclLibrary {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  std::string error;  // why it could not be loaded; empty when it was
};

template <class F>
void bind(void* handle, const char* name, F& f, std::string& error) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  if (f == nullptr && error.empty()) error = std::string("libnccl.so.2 has no ") + name;
}

NcclLibrary load_nccl() {
  NcclLibrary lib;
  void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    lib.error = why ? why : "dlopen(libnccl.so.2) failed";
    return lib;
  }
  bind(handle, "ncclGetUniqueId", lib.get_unique_id, lib.error);
  bind(handle, "ncclCommInitRank", lib.comm_init_rank, lib.error);
  bind(handle, "ncclAllReduce", lib.all_reduce, lib.error);
  bind(handle, "ncclBroadcast", lib.broadcast, lib.error);
  bind(handle, "ncclGetErrorString", lib.error_string, lib.error);
  return lib;
}

const NcclLibrary& nccl() {
  static const NcclLibrary lib = load_nccl();
  return lib;
}

void check_nccl(ncclResult_t rc, const char* tag, const char* call) {
  if (rc == ncclSuccess) return;
  STRATA_FAIL(tag, call, " failed: ", nccl().error_string(rc));
}

ncclDataType_t nccl_type(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float32: return ncclFloat32;
    case ScalarType::Float64: return ncclFloat64;
    case ScalarType::Int64: return ncclInt64;
    case ScalarType::Bool: return ncclUint8;
  }
  return ncclUint8;
}

// Every rank calls this at the same message of the same plan, so the MPI calls
// here pair up; a rank that cannot load NCCL makes every rank throw rather than
// leave the others waiting in ncclCommInitRank.
NcclState& communicator(GroupState& g, const char* tag, Device device) {
  if (g.nccl) return *g.nccl;
  const NcclLibrary& lib = nccl();
  int loaded = lib.error.empty() ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &loaded, 1, MPI_INT, MPI_MIN, g.comm), tag,
            "MPI_Allreduce");
  STRATA_CHECK(lib.error.empty(), tag, "collectives of CUDA tensors need NCCL, which could not ",
               "be loaded: ", lib.error);
  STRATA_CHECK(loaded == 1, tag, "another rank could not load NCCL (libnccl.so.2); it says why");
  ncclUniqueId id{};
  if (g.rank == 0) check_nccl(lib.get_unique_id(&id), tag, "ncclGetUniqueId");
  check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, g.comm), tag, "MPI_Bcast");
  auto state = std::make_shared<NcclState>();
  state->device = device;
  gpu::DeviceGuard guard(device);
  check_nccl(lib.comm_init_rank(&state->comm, g.size, id, g.rank), tag, "ncclCommInitRank");
  g.nccl = std::move(state);
  return *g.nccl;
}

}  // namespace

std::string nccl_leaf_problem(const GroupState& g, Device device) {
  if (!g.nccl || g.nccl->device == device) return "";
  std::ostringstream why;
  why << "is on " << device << " but this rank's NCCL communicator is on " << g.nccl->device
      << " (one GPU per rank)";
  return why.str();
}

Device nccl_device(const GroupState& g) {
  if (g.nccl) return g.nccl->device;
  int current = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&current), "dist");
  return cuda(current);
}

void nccl_send(GroupState& g, const char* tag, bool all_reduce, int root, void* data,
               int64_t numel, ScalarType dtype, Device device) {
  NcclState& state = communicator(g, tag, device);
  gpu::DeviceGuard guard(device);
  const cudaStream_t stream = gpu::stream_for(device);
  const auto count = static_cast<size_t>(numel);
  if (all_reduce) {
    check_nccl(nccl().all_reduce(data, data, count, nccl_type(dtype), ncclSum, state.comm, stream),
               tag, "ncclAllReduce");
  } else {
    check_nccl(nccl().broadcast(data, data, count, nccl_type(dtype), root, state.comm, stream),
               tag, "ncclBroadcast");
  }
}

}  // namespace strata::dist
