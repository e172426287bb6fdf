#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transforms/layer_stack.h"

namespace strata {
class Generator;
}

namespace strata::batching {

// What random operators do inside vmap (DESIGN.md: vmap's options).
enum class Randomness : uint8_t {
  Error,      // a random op is an error
  Different,  // every sample draws from its own stream
  Same,       // every sample gets the same numbers
};
const char* to_string(Randomness randomness);

// The generator offsets a vmap call's random ops start from, in call order, so
// that each chunk of a chunked call replays the same streams: a sample's numbers
// depend on its index in the whole batch, never on the chunk size.
struct RandomReplay {
  std::vector<uint64_t> starts;
  size_t next = 0;  // the next random call of the running chunk
};

// The interpreter of a vmap layer: calls with batched arguments reach the
// batching rules at the Batched key (or the loop fallback); random ops are
// handled here, before any rule, according to `randomness`.
class VmapInterpreter final : public Interpreter {
 public:
  VmapInterpreter(int64_t batch_size, int64_t first_sample, Randomness randomness,
                  std::shared_ptr<RandomReplay> replay)
      : batch_size_(batch_size),
        first_sample_(first_sample),
        randomness_(randomness),
        replay_(std::move(replay)) {}

  TransformKind kind() const override { return TransformKind::Vmap; }
  DispatchKeySet keys() const override { return DispatchKeySet(DispatchKey::Batched); }
  void process(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) override;
  bool default_process(const OperatorHandle& op) const override;

  int64_t batch_size() const { return batch_size_; }

 private:
  // One stream per sample (seeded by its index, or all alike for Same), starting
  // at the generator's offset `start`.
  void process_random(const OperatorHandle& op, Stack& stack, size_t generator_arg,
                      const Generator& generator, uint64_t start);

  int64_t batch_size_;
  int64_t first_sample_;  // index of this chunk's first sample in the whole batch
  Randomness randomness_;
  std::shared_ptr<RandomReplay> replay_;
};

// The vmap layer a Batched kernel runs under (the top layer).
struct VmapLevel {
  int64_t level;
  int64_t batch_size;
};
// Throws naming `op` when the top layer is not a vmap layer (a batched tensor
// used after its vmap returned).
VmapLevel current_vmap_level(const char* op);

}  // namespace strata::batching
