#pragma once

// NCCL under st::dist::Group for CUDA leaves (Note [NCCL for CUDA tensors]).
// Internal to distributed/group.cpp; built only with the CUDA backend, MPI and
// NCCL (STRATA_WITH_NCCL). No NCCL or CUDA header here: group.cpp stays plain C++.

#include <mpi.h>

#include <cstdint>

#include "tensor/device.h"
#include "tensor/scalar_type.h"

namespace strata::dist {

// Note [NCCL for CUDA tensors]
// A collective over CUDA leaves keeps MPI for what is small and on the host (the
// signature vote, the bootstrap) and moves the data with NCCL, device to device:
// the group's first CUDA collective makes one NCCL communicator, rank 0's
// ncclUniqueId sent to the others by MPI_Bcast over the group's communicator,
// each rank on its leaves' device. The plan (buckets, direct leaves) is the
// CPU one, its staging buffers on the device. NCCL runs on the device's one
// stream (Note [One stream per device], kernels/cuda/runtime.h), so it is
// ordered after the kernels that wrote the leaves and before those that read
// them; nothing waits on the host. A rank per device: NCCL refuses two ranks on
// one GPU, and that error reaches every rank as a strata::Error.
class NcclCommunicator {
 public:
  // Collective over `comm`: every rank calls it, each with its own device.
  NcclCommunicator(MPI_Comm comm, int rank, int size, Device device, const char* tag);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  Device device() const { return device_; }
  // In place on data (numel elements of dtype, on device()).
  void all_reduce(void* data, int64_t numel, ScalarType dtype, const char* tag) const;
  void broadcast(void* data, int64_t numel, ScalarType dtype, int root, const char* tag) const;

 private:
  void* comm_ = nullptr;  // ncclComm_t
  Device device_;
};

}  // namespace strata::dist
