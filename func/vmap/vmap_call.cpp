#include "func/vmap/vmap_call.h"

#include <sstream>

#include "ops/ops.h"
#include "tensor/error.h"
#include "transforms/vmap/batched_tensor.h"

namespace strata::batching {
namespace {

// "vmap" or "vmap inside grad(level 1)", for messages about a call being set up.
std::string transform_name() {
  return layer_stack_empty() ? "vmap" : "vmap inside " + describe_layer_stack();
}

// dim wrapped into [0, rank); out of range, an error naming it as what()
// describes it (built only then).
template <class What>
int64_t checked_dim(int64_t dim, int64_t rank, const What& what) {
  STRATA_CHECK(dim >= -rank && dim < rank, transform_name().c_str(), what(),
               " is out of range for rank ", rank, " (valid: ", -rank, " to ", rank - 1, ")");
  return dim < 0 ? dim + rank : dim;
}

std::string describe_argument(size_t arg, IntArrayRef sizes, int64_t dim) {
  std::ostringstream out;
  out << "argument " << arg << " (shape " << shape_string(sizes) << ", in_dim " << dim << ")";
  return out.str();
}

}  // namespace

VmapCall::VmapCall(const VmapOptions& options, size_t num_args)
    : options_(options), num_args_(num_args) {
  STRATA_CHECK(options.in_dims.empty() || options.in_dims.size() == num_args,
               transform_name().c_str(), "in_dims has ", options.in_dims.size(),
               " entries but the function was called with ", num_args,
               " arguments (give one entry per argument, none for unbatched ones)");
  STRATA_CHECK(options.chunk_size >= 0, "vmap", "chunk_size must be >= 0, got ",
               options.chunk_size);
}

std::optional<int64_t> VmapCall::in_dim(size_t arg) const {
  if (options_.in_dims.empty()) return 0;
  return options_.in_dims[arg];
}

bool VmapCall::observe(size_t arg, const Tensor& t) {
  const std::optional<int64_t> dim = in_dim(arg);
  if (!dim || !t.defined()) return true;
  STRATA_CHECK(t.dim() > 0, transform_name().c_str(), "argument ", arg,
               " is 0-dim (a scalar) and has no dim to map over with in_dim ", *dim,
               "; give it in_dim none to use the same value for every sample");
  const int64_t d = checked_dim(*dim, t.dim(), [&] {
    return detail::concat("in_dim ", *dim, " of argument ", arg, " (shape ",
                          shape_string(t.sizes()), ")");
  });
  const int64_t size = t.sizes()[static_cast<size_t>(d)];
  if (batch_size_ < 0) {
    batch_size_ = size;
    first_batched_ = {arg, DimVector(t.sizes()), *dim};
    return true;
  }
  return size == batch_size_;
}

void VmapCall::throw_batch_size_mismatch(size_t arg, const Tensor& t,
                                         const std::string& leaf) const {
  const int64_t dim = *in_dim(arg);
  const int64_t size = t.sizes()[static_cast<size_t>(dim < 0 ? dim + t.dim() : dim)];
  STRATA_FAIL(transform_name().c_str(), "batch sizes disagree: ", describe_first_batched(),
              " has batch size ", batch_size_, " but ",
              leaf.empty() ? "" : "the leaf " + leaf + " of ",
              describe_argument(arg, t.sizes(), dim), " has batch size ", size);
}

std::string VmapCall::describe_first_batched() const {
  return describe_argument(first_batched_.arg, first_batched_.sizes, first_batched_.dim);
}

void VmapCall::finish_observing() {
  STRATA_CHECK(batch_size_ >= 0, transform_name().c_str(),
               "no argument is batched: in_dims are all none or the batched arguments hold "
               "no tensors (",
               num_args_, " arguments)");
  STRATA_CHECK(batch_size_ > 0, transform_name().c_str(),
               "the batch is empty: ", describe_first_batched(), " has size 0 along its in_dim");
}

std::vector<std::pair<int64_t, int64_t>> VmapCall::chunks() const {
  const int64_t step = options_.chunk_size > 0 ? options_.chunk_size : batch_size_;
  std::vector<std::pair<int64_t, int64_t>> result;
  for (int64_t start = 0; start < batch_size_; start += step) {
    result.emplace_back(start, std::min(step, batch_size_ - start));
  }
  return result;
}

void VmapCall::enter_chunk(int64_t start, int64_t size) {
  chunk_start_ = start;
  chunk_size_ = size;
  replay_->next = 0;
  scope_ = std::make_unique<LayerScope>(
      std::make_shared<VmapInterpreter>(size, start, options_.randomness, replay_));
  level_ = scope_->level();
}

Tensor VmapCall::wrap(size_t arg, const Tensor& t) const {
  const std::optional<int64_t> dim = in_dim(arg);
  if (!dim || !t.defined()) return t;
  const int64_t d = *dim < 0 ? *dim + t.dim() : *dim;
  Tensor value = chunk_size_ == batch_size_ ? t : t.narrow(d, chunk_start_, chunk_size_);
  return make_batched(std::move(value), d, level_);
}

std::optional<int64_t> VmapCall::out_dim(std::optional<size_t> element) const {
  if (options_.out_dims.empty()) return 0;
  if (options_.out_dims.size() == 1) return options_.out_dims[0];
  STRATA_CHECK(element.has_value() && *element < options_.out_dims.size(), "vmap", "out_dims has ",
               options_.out_dims.size(), " entries but ",
               element ? "the result has more elements" : "the result is not a tuple or pair");
  return options_.out_dims[*element];
}

std::string VmapCall::error_note() const {
  return detail::concat(
      "batch size ", chunk_size_,
      chunk_size_ == batch_size_
          ? std::string()
          : detail::concat(", samples ", chunk_start_, " to ", chunk_start_ + chunk_size_ - 1),
      "; the shapes an op names include the batch dim, one sample's shapes "
      "lack it: input ",
      describe_first_batched(), " has per-sample shape ", shape_string(per_sample_shape()));
}

DimVector VmapCall::per_sample_shape() const {
  DimVector shape(first_batched_.sizes);
  const int64_t rank = static_cast<int64_t>(shape.size());
  shape.erase(
      static_cast<size_t>(first_batched_.dim < 0 ? first_batched_.dim + rank : first_batched_.dim));
  return shape;
}

void VmapCall::check_out_dims(size_t elements) const {
  STRATA_CHECK(options_.out_dims.size() <= 1 || options_.out_dims.size() == elements,
               transform_name().c_str(), "out_dims has ", options_.out_dims.size(),
               " entries but the function returns ", elements,
               " outputs (give one entry per output, or one for all)");
}

void VmapCall::throw_chunk_structure(std::pair<int64_t, int64_t> chunk,
                                     const std::string& difference) const {
  STRATA_FAIL(transform_name().c_str(), "with chunk_size ", options_.chunk_size,
              ", the chunk of samples ", chunk.first, " to ", chunk.first + chunk.second - 1,
              " returned a result structured otherwise than the first chunk's (", difference,
              "); the function must return the same structure for every sample");
}

Tensor VmapCall::unwrap_output(const Tensor& t, std::optional<int64_t> out_dim) const {
  STRATA_CHECK(t.defined(), transform_name().c_str(),
               "the function returned an undefined tensor (a default-constructed Tensor) as an "
               "output; every output leaf must be a defined tensor");
  BatchedTensorImpl* b = batched_at_level(t, level_);
  if (!out_dim) {
    STRATA_CHECK(b == nullptr, "vmap",
                 "an output with out_dim none is batched (shape of one sample ",
                 shape_string(t.sizes()), "); give it an out_dim");
    return t;
  }
  const int64_t d = checked_dim(*out_dim, t.dim() + 1, [&] {
    return detail::concat("out_dim ", *out_dim, " of an output whose samples have shape ",
                          shape_string(t.sizes()));
  });
  if (b == nullptr) {
    DimVector sizes(t.sizes());
    sizes.insert(static_cast<size_t>(d), chunk_size_);
    return t.unsqueeze(d).expand(sizes);
  }
  return b->bdim() == d ? b->value() : b->value().movedim(b->bdim(), d);
}

Tensor VmapCall::join(const std::vector<Tensor>& chunks, std::optional<int64_t> out_dim) {
  if (!out_dim) return chunks.front();
  const int64_t rank = chunks.front().dim();
  return cat(chunks, *out_dim < 0 ? *out_dim + rank : *out_dim);
}

}  // namespace strata::batching
