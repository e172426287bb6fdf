#pragma once

// The layers of the differential fuzzer's random transform stacks (nested.cpp):
// one transform with its random choices drawn, applied to a function of one
// tensor. The nested check and the bad-program check (errors.cpp) share them.

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/fuzz/program.h"

namespace strata::fuzz {

using Fn = std::function<Tensor(const Tensor&)>;

enum class LayerKind : uint8_t { Vmap, Grad, Vjp, Jvp, Jacrev, Jacfwd, Functionalize, Replay };
inline constexpr int kNumLayerKinds = 8;

// One layer with its random choices drawn; `operand` is grad's weights, vjp's
// cotangent, jvp's tangent, or the input a trace is taken at.
struct Layer {
  LayerKind kind;
  int64_t in_dim = 0, out_dim = 0, chunk_size = 0;
  Remove remove = Remove::Mutations;
  Tensor operand;
};

// Draws a layer for a function from `in` to `out` and updates both shapes;
// nullopt when the drawn kind would make a shape too large.
std::optional<Layer> draw_layer(std::mt19937_64& rng, std::vector<int64_t>& in,
                                std::vector<int64_t>& out);
// Up to `depth` layers (fewer when draws keep making shapes too large), innermost
// first; `in` and `out` become the stack's input and output shapes.
std::vector<Layer> draw_stack(std::mt19937_64& rng, int depth, std::vector<int64_t>& in,
                              std::vector<int64_t>& out);
const char* name(LayerKind kind);
// "vmap(in_dim 0, out_dim 1, chunk 2) > grad(weighted sum) > program", outermost first.
std::string describe(const std::vector<Layer>& layers);
// The layer applied to f with the transform under test.
Fn transformed(const Layer& layer, Fn f);

}  // namespace strata::fuzz
