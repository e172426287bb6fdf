#include "distributed/nccl_communicator.h"

#include <nccl.h>

#include "kernels/cuda/runtime.h"
#include "tensor/error.h"

namespace strata::dist {

namespace {

void check_nccl(ncclResult_t rc, const char* tag, const char* call) {
  STRATA_CHECK(rc == ncclSuccess, tag, call, " failed: ", ncclGetErrorString(rc));
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

ncclComm_t as_comm(void* comm) { return static_cast<ncclComm_t>(comm); }

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm comm, int rank, int size, Device device,
                                   const char* tag)
    : device_(device) {
  ncclUniqueId id{};
  if (rank == 0) check_nccl(ncclGetUniqueId(&id), tag, "ncclGetUniqueId");
  STRATA_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm) == MPI_SUCCESS, tag,
               "MPI_Bcast of the NCCL id failed");
  const gpu::DeviceGuard guard(device);
  ncclComm_t made = nullptr;
  check_nccl(ncclCommInitRank(&made, size, id, rank), tag, "ncclCommInitRank");
  comm_ = made;
}

NcclCommunicator::~NcclCommunicator() { ncclCommDestroy(as_comm(comm_)); }

void NcclCommunicator::all_reduce(void* data, int64_t numel, ScalarType dtype,
                                  const char* tag) const {
  const gpu::DeviceGuard guard(device_);
  check_nccl(ncclAllReduce(data, data, static_cast<size_t>(numel), nccl_type(dtype), ncclSum,
                           as_comm(comm_), gpu::stream_for(device_)),
             tag, "ncclAllReduce");
}

void NcclCommunicator::broadcast(void* data, int64_t numel, ScalarType dtype, int root,
                                 const char* tag) const {
  const gpu::DeviceGuard guard(device_);
  check_nccl(ncclBroadcast(data, data, static_cast<size_t>(numel), nccl_type(dtype), root,
                           as_comm(comm_), gpu::stream_for(device_)),
             tag, "ncclBroadcast");
}

}  // namespace strata::dist
