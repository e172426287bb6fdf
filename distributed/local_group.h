#pragma once

// A group of one process with the interface of st::dist::Group: what DP-SGD and
// other code templated on a group run on without MPI (and the single-process
// reference the multi-rank tests compare against).

#include "func/grad/grad.h"
#include "func/tree.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace strata::dist {

class LocalGroup {
 public:
  int rank() const { return 0; }
  int size() const { return 1; }
  template <class Tree>
  void all_reduce(const Tree&) const {}
  template <class Tree>
  void broadcast(const Tree&, int root) const {
    STRATA_CHECK(root == 0, "dist::broadcast", "root ", root, " is not a rank of a group of 1");
  }
  void barrier() const {}
};

}  // namespace strata::dist
