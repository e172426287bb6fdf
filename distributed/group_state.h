#pragma once

// What a st::dist::Group holds on each rank. Private to distributed/*.cpp: it
// includes mpi.h, which no public header may.

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "distributed/group.h"
#include "tensor/device.h"
#include "tensor/scalar_type.h"

namespace strata::dist {

// One message of a collective: leaves of one device type and dtype, sent
// together (Note [Bucketed collectives]).
struct GroupMessage {
  DeviceType device_type;
  ScalarType dtype;
  std::vector<size_t> leaves;
  int64_t numel = 0;
};

// The last call every rank agreed on (Note [Collective signatures]): the same on
// every rank, since it changes only when all of them agree.
struct AgreedCall {
  bool valid = false;
  uint64_t signature = 0;
  uint64_t op = 0;
  int root = 0;
  std::vector<GroupMessage> plan;
};

// The NCCL communicator of the rank's GPU (distributed/nccl_collectives.cpp).
struct NcclState;

struct GroupState {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  CollectiveOptions options;
  AgreedCall agreed;
  std::shared_ptr<NcclState> nccl;  // made by the first collective with CUDA leaves
};

// Throws strata::Error("[tag] <call> failed: <MPI's error string>") unless rc is
// MPI_SUCCESS.
void check_mpi(int rc, const char* tag, const char* call);

}  // namespace strata::dist
