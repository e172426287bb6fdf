#pragma once

// The public API plus its distributed part: link Strata::distributed.
#include <strata/strata.h>

#include "distributed/distributed.h"
