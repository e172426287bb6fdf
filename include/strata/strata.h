#pragma once

// Strata's public API: tensors, operators, the dispatcher and (as they land) the
// function transforms. See DESIGN.md for the contract.

#include "dispatcher/dispatch_mode.h"
#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "kernels/cpu/parallel.h"
#include "ops/ops.h"
#include "tensor/allocator.h"
#include "tensor/error.h"
#include "tensor/tensor.h"
#include "transforms/grad/grad.h"
#include "transforms/grad/gradcheck.h"
#include "transforms/jacobian.h"
#include "transforms/jvp/jvp.h"
#include "transforms/jvp/linearize.h"
#include "transforms/vmap/batching.h"
#include "transforms/vmap/vmap.h"
