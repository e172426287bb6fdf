#pragma once

// Strata's distributed part (in Strata::strata): DP-SGD helpers, the RDP
// accountant, data and checkpoint files, and, when built with MPI
// (STRATA_HAVE_MPI), st::dist::Group.

#include "func/grad/grad.h"
#include "func/tree.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

#include "distributed/dp/clipping.h"
#include "distributed/dp/dp_sgd.h"
#include "distributed/dp/poisson_sampling.h"
#include "distributed/dp/rdp_accountant.h"
#include "distributed/io/idx.h"
#include "distributed/io/safetensors.h"
#include "distributed/local_group.h"
#ifdef STRATA_HAVE_MPI
#include "distributed/group.h"
#endif
