#include "tensor/dlpack.h"

#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "tensor/allocator.h"
#include "tensor/device.h"
#include "tensor/error.h"
#include "tensor/storage.h"
#include "tensor/tensor_impl.h"

namespace strata {
namespace {

// DLPack 0.8's code for booleans (one byte each); Debian's dlpack.h (0.6)
// predates it, and PyTorch 1.13 exchanges no booleans at all.
constexpr uint8_t kDLBoolCode = 6;

DLDataType to_dl_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return {kDLBoolCode, 8, 1};
    case ScalarType::Int64: return {kDLInt, 64, 1};
    case ScalarType::Float32: return {kDLFloat, 32, 1};
    case ScalarType::Float64: return {kDLFloat, 64, 1};
  }
  STRATA_FAIL("to_dlpack", "unknown dtype");
}

ScalarType from_dl_dtype(DLDataType t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return ScalarType::Float32;
    if (t.code == kDLFloat && t.bits == 64) return ScalarType::Float64;
    if (t.code == kDLInt && t.bits == 64) return ScalarType::Int64;
    if (t.code == kDLBoolCode && t.bits == 8) return ScalarType::Bool;
  }
  STRATA_FAIL("from_dlpack", "unsupported dtype (code ", static_cast<int>(t.code), ", ",
              static_cast<int>(t.bits), " bits, ", t.lanes,
              " lanes); Strata has Bool, Int64, Float32 and Float64");
}

// What to_dlpack hands out: the tensor it keeps alive and the arrays it points to.
struct ExportedTensor {
  Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};
};

void delete_exported(DLManagedTensor* m) { delete static_cast<ExportedTensor*>(m->manager_ctx); }

// The DLManagedTensors owned by live tensors (see Note [DLPack exchange]).
std::mutex consumed_mutex;
std::unordered_set<const DLManagedTensor*>& consumed() {
  static std::unordered_set<const DLManagedTensor*> set;
  return set;
}

// Owns an imported DLManagedTensor for the storage made over its memory.
class ImportedMemory final : public Allocator {
 public:
  ImportedMemory(DLManagedTensor* m, Device device) : managed_(m), device_(device) {}
  void* allocate(size_t) override { STRATA_FAIL("from_dlpack", "internal: imported memory cannot allocate"); }
  void deallocate(void*, size_t) override {
    {
      const std::lock_guard<std::mutex> lock(consumed_mutex);
      consumed().erase(managed_);
    }
    if (managed_->deleter != nullptr) managed_->deleter(managed_);
    delete this;
  }
  bool host_accessible() const override { return device_.is_cpu(); }

 private:
  DLManagedTensor* managed_;
  Device device_;
};

// The Strata device of a DLPack device: CPU memory (pinned host memory too, which
// the host reads directly) or a CUDA device this process can use.
Device device_of(DLDevice d) {
  if (d.device_type == kDLCPU || d.device_type == kDLCUDAHost) return kCPU;
  STRATA_CHECK(d.device_type == kDLCUDA, "from_dlpack", "unsupported device (DLPack device type ",
               static_cast<int>(d.device_type), ", id ", d.device_id,
               "): CPU and CUDA tensors are exchanged");
  const int count = cuda_device_count();
  STRATA_CHECK(d.device_id >= 0 && d.device_id < count, "from_dlpack", "a tensor on CUDA device ",
               d.device_id, ", but this process sees ", count, " CUDA device(s)",
               count == 0 ? " (no GPU, or Strata was built without its CUDA backend)" : "");
  return cuda(d.device_id);
}

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& t) {
  STRATA_CHECK(t.defined(), "to_dlpack", "the tensor is undefined");
  STRATA_CHECK(t.impl()->has_storage(), "to_dlpack", "a ", t.impl()->impl_name(),
               " (a tensor inside a transform) has no memory of its own to share; export its "
               "value outside the transform");
  auto* ctx = new ExportedTensor{t, std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
                                 std::vector<int64_t>(t.strides().begin(), t.strides().end())};
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = t.data_ptr();
  dl.device = t.device().is_cuda() ? DLDevice{kDLCUDA, t.device().index} : DLDevice{kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = to_dl_dtype(t.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = &delete_exported;
  return &ctx->managed;
}

Tensor from_dlpack(DLManagedTensor* managed) {
  STRATA_CHECK(managed != nullptr, "from_dlpack", "the DLManagedTensor is null");
  const DLTensor& dl = managed->dl_tensor;
  const Device device = device_of(dl.device);
  const ScalarType dtype = from_dl_dtype(dl.dtype);
  STRATA_CHECK(dl.ndim >= 0 && (dl.ndim == 0 || dl.shape != nullptr), "from_dlpack",
               "malformed DLTensor: ndim ", dl.ndim, " without a shape");
  std::vector<int64_t> sizes(dl.shape, dl.shape + dl.ndim);
  std::vector<int64_t> strides(static_cast<size_t>(dl.ndim));
  int64_t numel = 1, expected = 1, last = 0;
  for (int64_t d = dl.ndim - 1; d >= 0; --d) {
    const size_t i = static_cast<size_t>(d);
    STRATA_CHECK(sizes[i] >= 0, "from_dlpack", "negative size in shape ", shape_string(sizes));
    strides[i] = dl.strides != nullptr ? dl.strides[i] : expected;
    STRATA_CHECK(strides[i] >= 0, "from_dlpack", "negative stride ", strides[i], " in dim ", d,
                 " of a tensor of shape ", shape_string(sizes), " is not supported");
    expected *= sizes[i];
    numel *= sizes[i];
    last += (sizes[i] - 1) * strides[i];
  }
  const int64_t item = element_size(dtype);
  const size_t nbytes = numel == 0 ? 0 : static_cast<size_t>((last + 1) * item);
  {
    const std::lock_guard<std::mutex> lock(consumed_mutex);
    STRATA_CHECK(consumed().insert(managed).second, "from_dlpack",
                 "this DLManagedTensor was already consumed by an earlier from_dlpack (a live "
                 "tensor owns it); a DLPack capsule may be used once");
  }
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  Storage storage =
      StorageImpl::adopt_external(data, nbytes, device, new ImportedMemory(managed, device));
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, sizes, strides, 0));
}

}  // namespace strata
