#pragma once

#include <cstddef>

namespace strata {

class Tensor;
struct GraphNode;
struct NodeArg;

// A node's typed call (Note [Typed replay] in typed_replay.cpp): reads its
// arguments (args, the node's own) from the replay's value slots and writes its
// results there.
using TypedReplayFn = void (*)(const GraphNode& node, const NodeArg* args, Tensor* slots);

// The typed call for a node, with arguments args, whose kernel has one of the
// common C++ signatures and whose tensor arguments are all values; null when
// replay must box the node.
TypedReplayFn typed_replay_for(const GraphNode& node, const NodeArg* args, size_t num_args);

}  // namespace strata
