#pragma once

// Note [NCCL for CUDA leaves]
// A collective's CUDA leaves travel over NCCL and its CPU leaves over MPI; the
// vote and the message plan (Notes [Collective signatures] and [Bucketed
// collectives]) are shared, with messages split by device type as well as dtype.
// Each rank reduces on one GPU, the device of its CUDA leaves (a rank picks its
// GPU by putting its tensors there). Its communicator is made by the first
// collective with CUDA leaves: the ranks first agree that every one of them
// loaded NCCL, then rank 0 draws NCCL's unique id and MPI broadcasts it. NCCL
// calls run on the device's stream (Note [One stream per device]), so later
// kernels see the sums without the host waiting. NCCL (libnccl.so.2) is loaded
// with dlopen at that first call: where it is missing, only collectives of CUDA
// leaves fail, naming the library. Communicators live until the process ends:
// destroying them at exit would race the CUDA runtime's own teardown.
//
// Private to distributed/*.cpp; built with the CUDA backend and MPI.

#include <cstdint>
#include <string>

#include "distributed/group_state.h"

namespace strata::dist {

// Why this rank cannot send a CUDA leaf on `device`, or "" if it can.
std::string nccl_leaf_problem(const GroupState& g, Device device);

// The GPU of this rank's communicator (the current device before there is one):
// where a rank that joins a message without leaves puts its zeros.
Device nccl_device(const GroupState& g);

// Sums over the ranks (all_reduce) or copies root's values (broadcast) of numel
// elements of dtype at `data`, device memory on `device`, in place.
void nccl_send(GroupState& g, const char* tag, bool all_reduce, int root, void* data,
               int64_t numel, ScalarType dtype, Device device);

}  // namespace strata::dist
