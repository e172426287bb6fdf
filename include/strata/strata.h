#pragma once

// Strata's public API: tensors, operators, the dispatcher and (as they land) the
// function transforms. See DESIGN.md for the contract.

#include "dispatcher/dispatch_mode.h"
#include "dispatcher/dispatcher.h"
#include "dispatcher/library.h"
#include "distributed/distributed.h"
#include "func/control_flow/control_flow.h"
#include "func/custom/custom_function.h"
#include "func/flop_counter.h"
#include "func/functionalize/functionalize.h"
#include "func/grad/grad.h"
#include "func/grad/gradcheck.h"
#include "func/jacobian.h"
#include "func/jvp/jvp.h"
#include "func/jvp/linearize.h"
#include "func/trace/trace.h"
#include "func/vmap/vmap.h"
#include "kernels/cpu/parallel.h"
#include "ops/ops.h"
#include "tensor/allocator.h"
#include "tensor/dlpack.h"
#include "tensor/error.h"
#include "tensor/tensor.h"
#include "transforms/grad/no_grad.h"
#include "transforms/higher_order_op.h"
#include "transforms/vmap/batching.h"
