#pragma once

// Trees of named tensors in the safetensors format (Hugging Face's: an 8-byte
// little-endian header length, a JSON header of name -> {dtype, shape,
// data_offsets} plus optional "__metadata__" strings, then the raw row-major
// little-endian bytes). Values round-trip bit for bit, so a run can save its
// parameters and optimizer state and resume exactly.

#include "func/grad/grad.h"
#include "func/tree.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

#include <map>
#include <string>

namespace strata {

// Writes CPU tensors of any dtype (Bool, Int64, Float32, Float64), contiguous or
// not; `metadata` goes to "__metadata__" (e.g. the step of a checkpoint).
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

std::map<std::string, Tensor> load_safetensors(const std::string& path);
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);

}  // namespace strata
