#pragma once

// The operators of Strata as C++ functions and Tensor methods. Each calls its
// operator through the dispatcher, so transforms and modes see it; the operator
// itself (schema, kernels, derivative and batching rules) is defined in the
// ops/ file of its family.

#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/nn.h"
#include "ops/shape.h"
