#include "transforms/vmap/vmap_interpreter.h"

#include <optional>
#include <vector>

#include "dispatcher/dispatcher.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "transforms/vmap/batching.h"

namespace strata::batching {
namespace {

// The seed of sample `index`'s stream (splitmix64 of the seed and the index):
// distinct per sample, and a pure function of the sample's place in the batch.
uint64_t sample_seed(uint64_t seed, int64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(index) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

const char* to_string(Randomness randomness) {
  switch (randomness) {
    case Randomness::Error: return "Error";
    case Randomness::Different: return "Different";
    case Randomness::Same: return "Same";
  }
  return "?";
}

// Random ops are the ones that take a generator.
bool VmapInterpreter::default_process(const OperatorHandle& op) const {
  return !op.entry().generator_argument_index();
}

void VmapInterpreter::process(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  const std::optional<size_t> generator_arg = op.entry().generator_argument_index();
  if (!generator_arg) {
    Interpreter::process(op, keys, stack);
    return;
  }
  if (op.entry().decomposes_at(DispatchKey::Batched)) {
    // A random op made of others (dropout of dropout_mask) draws only through
    // them: run its decomposition with this layer on top, so the ops it calls
    // come back here and only one that draws (not dropout in eval mode) is random.
    op.entry().lookup(DispatchKey::Batched).call_boxed(op, keys, stack);
    return;
  }
  const char* name = op.operator_name().name.c_str();
  STRATA_CHECK(randomness_ != Randomness::Error, name, "is a random operation inside vmap (",
               describe_layer_stack(), ", batch size ", batch_size_,
               ") with randomness = Error; pass randomness = Different (every sample draws "
               "its own numbers) or Same (every sample gets the same numbers)");
  const size_t first = stack.size() - op.schema().arguments().size();
  const IValue& given = stack[first + *generator_arg];
  const Generator generator = given.is_none() ? default_generator() : given.to_generator();
  // Every chunk of a chunked call starts this call's draws at the same offset.
  if (replay_->next == replay_->starts.size()) replay_->starts.push_back(generator.offset());
  const uint64_t start = replay_->starts[replay_->next++];
  if (randomness_ == Randomness::Same &&
      !any_batched_argument(stack, first, top_layer(name).level)) {
    // One draw for the whole batch (the op's unbatched result is expanded).
    generator.set_offset(start);
    Interpreter::process(op, keys, stack);
    return;
  }
  process_random(op, stack, *generator_arg, generator, start);
}

void VmapInterpreter::process_random(const OperatorHandle& op, Stack& stack, size_t generator_arg,
                                     const Generator& generator, uint64_t start) {
  LocalDispatchKeySetRestorer restore;
  enter_top_layer(DispatchKeySet());
  std::vector<Generator> streams;
  streams.reserve(static_cast<size_t>(batch_size_));
  const int64_t level = top_layer("vmap").level;
  call_per_sample(op, stack, {level, batch_size_}, [&](int64_t b, Stack& sample) {
    const uint64_t seed = randomness_ == Randomness::Same
                              ? generator.seed()
                              : sample_seed(generator.seed(), first_sample_ + b);
    streams.emplace_back(seed);
    streams.back().set_offset(start);
    sample[generator_arg] = streams.back();
  });
  uint64_t used = 0;
  for (const Generator& s : streams) used = std::max(used, s.offset() - start);
  generator.set_offset(start + used);
}

VmapLevel current_vmap_level(const char* op) {
  STRATA_CHECK(!layer_stack_empty(), op,
               "got a batched tensor of a vmap that has already returned; return the tensor "
               "from the function being vmapped instead of keeping it");
  const DynamicLayer& top = top_layer(op);
  STRATA_CHECK(top.interpreter->kind() == TransformKind::Vmap, op,
               "got a batched tensor of a vmap that has already returned (the layers running "
               "now: ",
               describe_layer_stack(), ")");
  return {top.level, static_cast<const VmapInterpreter&>(*top.interpreter).batch_size()};
}

}  // namespace strata::batching
