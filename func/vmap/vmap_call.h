#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "transforms/layer_stack.h"
#include "transforms/vmap/vmap_interpreter.h"

namespace strata {

// Marks an argument (in_dims) or output (out_dims) without a batch dim.
inline constexpr std::nullopt_t none = std::nullopt;
using batching::Randomness;

struct VmapOptions {
  // One entry per top-level argument, applied to each of its tensor leaves
  // (negative dims count from the end; none: not batched). Empty: 0 for all.
  std::vector<std::optional<int64_t>> in_dims = {};
  // One entry per element of a tuple or pair result, or one for the whole
  // result. Empty: 0.
  std::vector<std::optional<int64_t>> out_dims = {};
  Randomness randomness = Randomness::Error;
  // Samples per call of the function (bounds memory); 0: the whole batch at once.
  int64_t chunk_size = 0;
};

namespace batching {

// The non-template part of one vmap call: checks in_dims against the
// arguments, finds the batch size, runs chunks under a vmap layer, and moves
// output batch dims to out_dims.
class VmapCall {
 public:
  VmapCall(const VmapOptions& options, size_t num_args);

  // Called for every tensor leaf of argument `arg` before the first chunk;
  // false when its batch size differs from the earlier leaves'.
  bool observe(size_t arg, const Tensor& t);
  // Raises that leaf `leaf` (its path in the argument's tree) of argument `arg`
  // has another batch size.
  [[noreturn]] void throw_batch_size_mismatch(size_t arg, const Tensor& t,
                                              const std::string& leaf) const;
  // Checks that some argument is batched and the batch is not empty.
  void finish_observing();
  int64_t batch_size() const { return batch_size_; }
  // [start, start + size) of each chunk.
  std::vector<std::pair<int64_t, int64_t>> chunks() const;

  // Pushes the vmap layer of a chunk; `wrap` then makes its batched inputs.
  void enter_chunk(int64_t start, int64_t size);
  Tensor wrap(size_t arg, const Tensor& t) const;
  // Pops the layer (before outputs are unwrapped, also after an exception).
  void leave_chunk() { scope_.reset(); }
  // A tensor output of the chunk with its batch dim at `out_dim` (or, with
  // none, checked to be unbatched).
  Tensor unwrap_output(const Tensor& t, std::optional<int64_t> out_dim) const;
  // The out_dim of output element `element` (nullopt: the result is not a tuple).
  std::optional<int64_t> out_dim(std::optional<size_t> element) const;
  // For errors raised inside the chunk: its batch size, and that the shapes an
  // op's message names include the batch dim.
  std::string error_note() const;
  // Checks that out_dims has no more entries than a tuple result has elements.
  void check_out_dims(size_t elements) const;
  // Raises that the chunk [start, start + size) returned a result structured
  // otherwise than the first chunk's (`difference` says where).
  [[noreturn]] void throw_chunk_structure(std::pair<int64_t, int64_t> chunk,
                                          const std::string& difference) const;
  // Joins the chunks' outputs along their out_dim.
  static Tensor join(const std::vector<Tensor>& chunks, std::optional<int64_t> out_dim);

 private:
  std::optional<int64_t> in_dim(size_t arg) const;

  const VmapOptions& options_;
  size_t num_args_;
  int64_t batch_size_ = -1;
  // The first batched tensor seen, for messages about the others.
  struct FirstBatched {
    size_t arg = 0;
    DimVector sizes;
    int64_t dim = 0;
  } first_batched_;
  std::string describe_first_batched() const;
  DimVector per_sample_shape() const;
  std::shared_ptr<RandomReplay> replay_ = std::make_shared<RandomReplay>();
  int64_t chunk_start_ = 0;
  int64_t chunk_size_ = 0;
  int64_t level_ = 0;
  std::unique_ptr<LayerScope> scope_;
};

}  // namespace batching
}  // namespace strata
