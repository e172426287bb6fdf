#pragma once

namespace strata {

class Tensor;
struct GraphNode;

// A node's typed call (Note [Typed replay] in typed_replay.cpp): reads its
// arguments from the replay's value slots and writes its results there.
using TypedReplayFn = void (*)(const GraphNode& node, Tensor* slots);

// The typed call for a node whose kernel has one of the common C++ signatures and
// whose tensor arguments are all values; null when replay must box the node.
TypedReplayFn typed_replay_for(const GraphNode& node);

}  // namespace strata
