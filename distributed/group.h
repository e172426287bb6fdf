#pragma once

// st::dist: collectives over MPI for trees of CPU tensors, one process per rank
// (started by mpirun). Built only when CMake finds MPI (STRATA_HAVE_MPI).
//
//   st::dist::Group world = st::dist::init(argc, argv);
//   world.all_reduce(grads);          // sum over the ranks, in place, every leaf
//   world.broadcast(params, /*root=*/0);
//   world.barrier();

#include "func/grad/grad.h"
#include "func/tree.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace strata::dist {

// How collectives move a tree. Every rank must use the same options.
struct CollectiveOptions {
  // Note [Bucketed collectives]: leaves are packed into buckets of at most
  // bucket_bytes, one message each; a leaf of at least direct_bytes is a message
  // of its own (in place when contiguous).
  size_t bucket_bytes = size_t{4} << 20;
  size_t direct_bytes = size_t{256} << 10;
  // Note [Collective signatures]: the ranks agree that they were given the same
  // tree, so a mismatch is an error on every rank instead of a hang or mixed
  // data. A call with the tree of the last agreed call sends its data alongside
  // that small vote; any other waits for it first. Turning it off saves the vote
  // (bench/README.md); a mismatch is then undefined.
  bool verify = true;
};

struct GroupState;

// A set of processes that run collectives together (today: all of them, over a
// private duplicate of MPI_COMM_WORLD, so user MPI traffic never mixes with
// Strata's). Copies share the communicator. Every rank must make the same
// collective calls in the same order with trees of the same leaf dtypes and
// shapes; a mismatch is found before any data moves and every rank throws
// strata::Error rather than hang or corrupt.
class Group {
 public:
  explicit Group(std::shared_ptr<GroupState> state) : state_(std::move(state)) {}  // by init()

  int rank() const;
  int size() const;

  // Sums every tensor leaf over the ranks, in place. Leaves: defined CPU tensors
  // of Float32, Float64 or Int64, contiguous or not, outside any transform.
  template <class Tree>
  void all_reduce(const Tree& tree) const {
    all_reduce_leaves(tree::flatten(tree));
  }

  // Overwrites every tensor leaf with root's values (any dtype).
  template <class Tree>
  void broadcast(const Tree& tree, int root) const {
    broadcast_leaves(tree::flatten(tree), root);
  }

  void barrier() const;

  // Ends every rank's process with this message (MPI_Abort): for a failure one
  // rank sees alone, where throwing would leave the others waiting.
  [[noreturn]] void abort(const std::string& message, int exit_code = 1) const;

  const CollectiveOptions& options() const;
  // For this group and its copies, on this rank.
  void set_options(const CollectiveOptions& options);

  void all_reduce_leaves(const std::vector<Tensor>& leaves) const;
  void broadcast_leaves(const std::vector<Tensor>& leaves, int root) const;

 private:
  std::shared_ptr<GroupState> state_;
};

// Initialises MPI (once per process; later calls return the same group) and
// returns the group of all ranks. MPI is finalized at exit. From here on an
// exception that escapes main on one rank aborts all of them with its message
// (Note [A failing rank ends the job]).
Group init(int& argc, char**& argv);
Group init();

}  // namespace strata::dist
