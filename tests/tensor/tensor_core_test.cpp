// Tests of tensor/: ScalarType, Device, the CPU allocator, TensorImpl/Tensor and Scalar.
// Expected values are written out by hand from the documented behaviour.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;

namespace {

using strata::testing::error_message;
using strata::testing::expect_contains;

std::vector<int64_t> vec(st::IntArrayRef r) { return r.vec(); }

// A view over base's storage with explicit geometry.
st::Tensor view(const st::Tensor& base, st::IntArrayRef sizes, st::IntArrayRef strides,
                int64_t offset) {
  return st::Tensor(st::make_intrusive<st::TensorImpl>(base.impl()->storage(), base.dtype(), sizes,
                                                       strides, offset));
}

// A contiguous Float64 tensor holding 0, 1, 2, ... of the given shape.
st::Tensor arange_f64(st::IntArrayRef sizes) {
  st::Tensor t = st::empty(sizes, st::kFloat64);
  double* data = t.data_ptr<double>();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = static_cast<double>(i);
  return t;
}

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

// Sets caching for one test and restores the previous setting when it ends, even
// if it failed halfway (the sanitizer run starts with caching off).
class CachingGuard {
 public:
  explicit CachingGuard(bool enabled) : saved_(st::cpu_allocator_caching()) {
    st::set_cpu_allocator_caching(enabled);
  }
  ~CachingGuard() { st::set_cpu_allocator_caching(saved_); }

 private:
  bool saved_;
};

// ---- ScalarType ------------------------------------------------------------------

TEST(ScalarType, ElementSizes) {
  EXPECT_EQ(st::element_size(st::kBool), 1);
  EXPECT_EQ(st::element_size(st::kInt64), 8);
  EXPECT_EQ(st::element_size(st::kFloat32), 4);
  EXPECT_EQ(st::element_size(st::kFloat64), 8);
}

TEST(ScalarType, PromoteTypesAllPairs) {
  using st::kBool, st::kInt64, st::kFloat32, st::kFloat64;
  const st::ScalarType types[4] = {kBool, kInt64, kFloat32, kFloat64};
  // expected[i][j] = promote(types[i], types[j]), written out as in PyTorch's table.
  const st::ScalarType expected[4][4] = {
      {kBool, kInt64, kFloat32, kFloat64},
      {kInt64, kInt64, kFloat32, kFloat64},
      {kFloat32, kFloat32, kFloat32, kFloat64},
      {kFloat64, kFloat64, kFloat64, kFloat64},
  };
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(st::promote_types(types[i], types[j]), expected[i][j])
          << types[i] << " with " << types[j];
    }
  }
}

TEST(ScalarType, CategoriesAndNames) {
  EXPECT_FALSE(st::is_floating_point(st::kBool));
  EXPECT_FALSE(st::is_floating_point(st::kInt64));
  EXPECT_TRUE(st::is_floating_point(st::kFloat32));
  EXPECT_TRUE(st::is_floating_point(st::kFloat64));
  EXPECT_TRUE(st::is_integral(st::kInt64, false));
  EXPECT_FALSE(st::is_integral(st::kBool, false));
  EXPECT_TRUE(st::is_integral(st::kBool, true));
  EXPECT_FALSE(st::is_integral(st::kFloat32, true));

  EXPECT_STREQ(st::to_string(st::kBool), "Bool");
  EXPECT_STREQ(st::to_string(st::kInt64), "Int64");
  EXPECT_STREQ(st::to_string(st::kFloat32), "Float32");
  EXPECT_STREQ(st::to_string(st::kFloat64), "Float64");
  std::ostringstream out;
  out << st::kFloat32 << "," << st::kInt64;
  EXPECT_EQ(out.str(), "Float32,Int64");
}

// ---- Device --------------------------------------------------------------------

TEST(Device, ParsesValidSpecs) {
  st::Device cpu("cpu");
  EXPECT_TRUE(cpu.is_cpu());
  EXPECT_EQ(cpu, st::kCPU);
  EXPECT_EQ(cpu.str(), "cpu");

  st::Device cuda("cuda");
  EXPECT_TRUE(cuda.is_cuda());
  EXPECT_EQ(cuda.index, 0);
  EXPECT_EQ(cuda, st::cuda(0));

  st::Device cuda1("cuda:1");
  EXPECT_TRUE(cuda1.is_cuda());
  EXPECT_EQ(cuda1.index, 1);
  EXPECT_EQ(cuda1.str(), "cuda:1");
  EXPECT_FALSE(cuda1 == st::cuda(0));
}

TEST(Device, BadSpecsThrowNamingTheSpec) {
  for (const char* spec : {"gpu", "cuda:x", "cuda:", "CPU", "cuda:-1"}) {
    std::string message = error_message([&] { st::Device d{std::string(spec)}; });
    expect_contains(message, {spec});
  }
}

// ---- Allocator -------------------------------------------------------------------

TEST(Allocator, DataIs64ByteAlignedForManySizes) {
  for (int64_t n : {0, 1, 3, 7, 63, 64, 65, 100, 1000, 4097, 65537, (1 << 20) + 3, 3 << 20}) {
    st::Tensor t = st::empty({n}, st::kBool);
    EXPECT_TRUE(aligned64(t.data_ptr())) << "tensor of " << n << " bytes";
    st::Allocator* a = st::allocator_for(st::DeviceType::CPU);
    void* p = a->allocate(static_cast<size_t>(n));
    EXPECT_TRUE(aligned64(p)) << "raw block of " << n << " bytes";
    a->deallocate(p, static_cast<size_t>(n));
  }
}

TEST(Allocator, FreedSmallBlockIsReused) {
  CachingGuard caching(true);
  { st::Tensor warm = st::empty({37}, st::kFloat32); }  // leaves one block of this class cached
  const size_t before = st::cpu_allocator_stats().system_allocations;
  for (int i = 0; i < 100; ++i) {
    st::Tensor t = st::empty({37}, st::kFloat32);
    t.data_ptr<float>()[36] = 1.0f;
  }
  EXPECT_EQ(st::cpu_allocator_stats().system_allocations, before);
}

TEST(Allocator, ReleaseEmptiesTheThreadCache) {
  CachingGuard caching(true);
  { st::Tensor t = st::empty({100}, st::kFloat64); }
  EXPECT_GT(st::cpu_allocator_stats().thread_bytes_cached, 0u);
  const size_t frees_before = st::cpu_allocator_stats().system_frees;
  st::release_cpu_allocator_cache();
  EXPECT_EQ(st::cpu_allocator_stats().thread_bytes_cached, 0u);
  EXPECT_EQ(st::cpu_allocator_stats().shared_bytes_cached, 0u);
  EXPECT_GT(st::cpu_allocator_stats().system_frees, frees_before);
}

// The tests below count raw allocator blocks: a tensor may take more than one
// (its TensorImpl comes from the same cache).
TEST(Allocator, CachingOffMakesEveryAllocationASystemAllocation) {
  CachingGuard caching(false);
  EXPECT_FALSE(st::cpu_allocator_caching());
  EXPECT_EQ(st::cpu_allocator_stats().thread_bytes_cached, 0u);
  st::Allocator* cpu = st::allocator_for(st::DeviceType::CPU);
  const st::CpuAllocatorStats before = st::cpu_allocator_stats();
  for (int i = 0; i < 10; ++i) cpu->deallocate(cpu->allocate(128), 128);
  const st::CpuAllocatorStats after = st::cpu_allocator_stats();
  EXPECT_EQ(after.system_allocations - before.system_allocations, 10u);
  EXPECT_EQ(after.system_frees - before.system_frees, 10u);
  EXPECT_EQ(after.thread_bytes_cached, 0u);
  // Tensors too: at least one system allocation each, nothing left cached.
  for (int i = 0; i < 10; ++i) st::Tensor t = st::empty({16}, st::kInt64);
  EXPECT_GE(st::cpu_allocator_stats().system_allocations - after.system_allocations, 10u);
  EXPECT_EQ(st::cpu_allocator_stats().thread_bytes_cached, 0u);
  st::set_cpu_allocator_caching(true);
  EXPECT_TRUE(st::cpu_allocator_caching());
}

// The device allocator counts blocks in these sizes, so its peak is what tensors
// hold plus this slack; the MLP's per-sample gradients (1.25 MiB, 0.77 MiB) once
// took 2 MiB and 1 MiB blocks.
TEST(Allocator, DeviceBlocksWasteUnderAnEighthAndUnderTwoMiB) {
  EXPECT_EQ(st::device_block_size(1), 512u);
  EXPECT_EQ(st::device_block_size(513), 1024u);
  EXPECT_EQ(st::device_block_size(size_t{10} * 128 * 256 * 4), size_t{10} * 128 * 256 * 4);
  EXPECT_EQ(st::device_block_size(784 * 256 * 4), 13u * 65536);
  size_t previous = 0;
  for (size_t n = 1; n < (size_t{1} << 34); n = n * 9 / 7 + 13) {
    const size_t block = st::device_block_size(n);
    ASSERT_GE(block, n);
    ASSERT_EQ(block % 512, 0u) << n;
    ASSERT_LT(block - n, std::max<size_t>(512, n / 8)) << n;
    ASSERT_LT(block - n, size_t{2} << 20) << n;
    ASSERT_EQ(st::device_block_size(block), block) << n;  // a freed block fits its own size
    ASSERT_GE(block, previous) << n;
    previous = block;
  }
}

TEST(Allocator, LargeBlocksGoThroughTheSharedCache) {
  CachingGuard caching(true);
  st::release_cpu_allocator_cache();
  ASSERT_EQ(st::cpu_allocator_stats().shared_bytes_cached, 0u);
  st::Allocator* cpu = st::allocator_for(st::DeviceType::CPU);
  const size_t big = (size_t{2} << 20) + 100;  // over 1 MiB: not a thread-cache class
  const st::CpuAllocatorStats start = st::cpu_allocator_stats();
  void* p = cpu->allocate(big);
  cpu->deallocate(p, big);
  const st::CpuAllocatorStats cached = st::cpu_allocator_stats();
  EXPECT_EQ(cached.system_allocations - start.system_allocations, 1u);
  EXPECT_GE(cached.shared_bytes_cached, big);
  EXPECT_EQ(cached.thread_bytes_cached, start.thread_bytes_cached);
  void* again = cpu->allocate(big);
  EXPECT_EQ(again, p);
  EXPECT_EQ(st::cpu_allocator_stats().system_allocations, cached.system_allocations);
  EXPECT_EQ(st::cpu_allocator_stats().shared_bytes_cached, 0u);
  cpu->deallocate(again, big);

  // A big tensor's buffer takes the same route.
  { st::Tensor t = st::empty({(2 << 20) / 8}, st::kFloat64); }
  const size_t allocations = st::cpu_allocator_stats().system_allocations;
  EXPECT_GE(st::cpu_allocator_stats().shared_bytes_cached, size_t{2} << 20);
  { st::Tensor t = st::empty({(2 << 20) / 8}, st::kFloat64); }
  EXPECT_EQ(st::cpu_allocator_stats().system_allocations, allocations);
  st::release_cpu_allocator_cache();
  EXPECT_EQ(st::cpu_allocator_stats().shared_bytes_cached, 0u);
}

// ---- TensorImpl / Tensor: geometry -------------------------------------------------

TEST(Tensor, ContiguousStrides) {
  EXPECT_EQ(vec(st::empty({2, 3, 4}).strides()), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(vec(st::empty({5}).strides()), (std::vector<int64_t>{1}));
  EXPECT_EQ(vec(st::empty({1, 5}).strides()), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(vec(st::empty({3, 1, 2}).strides()), (std::vector<int64_t>{2, 2, 1}));
  // A 0-size dim counts as 1 in the strides of the dims before it.
  EXPECT_EQ(vec(st::empty({2, 0, 3}).strides()), (std::vector<int64_t>{3, 3, 1}));
  st::Tensor scalar = st::empty({});
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_TRUE(scalar.strides().empty());
  EXPECT_EQ(st::empty({2, 0, 3}).numel(), 0);
  EXPECT_EQ(vec(st::contiguous_strides({4, 2})), (std::vector<int64_t>{2, 1}));
}

TEST(Tensor, IsContiguousForViews) {
  st::Tensor base = arange_f64({4, 3});
  EXPECT_TRUE(base.is_contiguous());
  EXPECT_FALSE(view(base, {3, 4}, {1, 3}, 0).is_contiguous());   // transposed
  EXPECT_TRUE(view(base, {2, 3}, {3, 1}, 3).is_contiguous());    // rows 1..2
  EXPECT_FALSE(view(base, {4, 2}, {3, 1}, 1).is_contiguous());   // columns 1..2
  EXPECT_FALSE(view(base, {2, 3}, {6, 1}, 0).is_contiguous());   // every other row
  EXPECT_TRUE(view(base, {1, 3}, {100, 1}, 0).is_contiguous());  // size-1 stride is irrelevant
  EXPECT_TRUE(view(base, {0, 3}, {7, 5}, 0).is_contiguous());    // empty
  EXPECT_TRUE(view(base, {}, {}, 5).is_contiguous());            // 0-dim
  EXPECT_FALSE(view(base, {2, 3}, {0, 1}, 0).is_contiguous());   // expanded
}

TEST(Tensor, ViewsShareStorageAndVersion) {
  st::Tensor base = arange_f64({3, 4});
  st::Tensor row1 = view(base, {4}, {1}, 4);
  EXPECT_EQ(row1.impl()->storage(), base.impl()->storage());
  EXPECT_EQ(row1.storage_offset(), 4);
  EXPECT_EQ(row1.data_ptr<double>(), base.data_ptr<double>() + 4);

  const uint32_t v0 = base.version();
  EXPECT_EQ(row1.version(), v0);
  row1.fill_(-1.0);
  EXPECT_EQ(base.version(), v0 + 1);
  row1.add_(st::ones({4}, st::kFloat64));
  EXPECT_EQ(base.version(), v0 + 2);
  EXPECT_EQ(row1.version(), base.version());
  EXPECT_EQ(base.to_vector<double>(),
            (std::vector<double>{0, 1, 2, 3, 0, 0, 0, 0, 8, 9, 10, 11}));
}

TEST(Tensor, SizeAndStrideWrapNegativeDims) {
  st::Tensor t = st::empty({2, 3, 5});
  EXPECT_EQ(t.size(-1), 5);
  EXPECT_EQ(t.size(-3), 2);
  EXPECT_EQ(t.size(1), 3);
  EXPECT_EQ(t.stride(-1), 1);
  EXPECT_EQ(t.stride(-2), 5);
  EXPECT_EQ(t.stride(0), 15);

  st::Tensor m = st::empty({2, 3});
  expect_contains(error_message([&] { m.size(5); }), {"out of range", "5"});
  expect_contains(error_message([&] { m.size(-3); }), {"out of range"});
  expect_contains(error_message([&] { m.stride(2); }), {"out of range"});
}

// BUG (reported): a 0-dim tensor accepts dim 0 / -1 in wrap_dim, and Tensor::size then
// reads sizes()[0] of an empty array. PyTorch throws here; Strata reads out of bounds.
TEST(Tensor, SizeOfZeroDimTensorThrows) {
  st::Tensor scalar = st::empty({});
  expect_contains(error_message([&] { scalar.size(0); }), {"out of range"});
  expect_contains(error_message([&] { scalar.stride(-1); }), {"out of range"});
}

// ---- Tensor: values ----------------------------------------------------------------

TEST(Tensor, ItemConvertsFromEveryDtype) {
  st::Tensor f64 = st::tensor({2.75}, {});
  EXPECT_EQ(f64.item<double>(), 2.75);
  EXPECT_EQ(f64.item<float>(), 2.75f);
  EXPECT_EQ(f64.item<int64_t>(), 2);
  EXPECT_TRUE(f64.item<bool>());

  st::Tensor f32 = st::tensor(std::vector<float>{-1.5f}, {1, 1});
  EXPECT_EQ(f32.item<float>(), -1.5f);
  EXPECT_EQ(f32.item<double>(), -1.5);
  EXPECT_EQ(f32.item<int64_t>(), -1);

  st::Tensor i64 = st::tensor(std::vector<int64_t>{-3}, {1});
  EXPECT_EQ(i64.item<int64_t>(), -3);
  EXPECT_EQ(i64.item<double>(), -3.0);
  EXPECT_TRUE(i64.item<bool>());

  st::Tensor b = st::tensor(std::vector<bool>{true}, {});
  EXPECT_TRUE(b.item<bool>());
  EXPECT_EQ(b.item<double>(), 1.0);
  EXPECT_EQ(st::tensor(std::vector<bool>{false}).item<int64_t>(), 0);
}

TEST(Tensor, ItemOfManyElementsThrowsWithShape) {
  expect_contains(error_message([] { st::tensor({1.0, 2.0}).item<double>(); }), {"[2]", "item"});
  expect_contains(error_message([] { st::zeros({1, 2}).item<float>(); }), {"[1, 2]"});
  expect_contains(error_message([] { st::zeros({0}).item<float>(); }), {"[0]"});
}

TEST(Tensor, ToVectorFollowsStrides) {
  st::Tensor base = arange_f64({3, 4});
  // Transposed: element (i, j) of the view is base[j][i].
  EXPECT_EQ(view(base, {4, 3}, {1, 4}, 0).to_vector<double>(),
            (std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  // Rows 0..1, columns 1 and 3.
  EXPECT_EQ(view(base, {2, 2}, {4, 2}, 1).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 3, 5, 7}));
  // Row 2 expanded to 2 rows with stride 0.
  EXPECT_EQ(view(base, {2, 4}, {0, 1}, 8).to_vector<float>(),
            (std::vector<float>{8, 9, 10, 11, 8, 9, 10, 11}));
  // 0-dim view of element 6, and an empty view.
  EXPECT_EQ(view(base, {}, {}, 6).to_vector<double>(), (std::vector<double>{6}));
  EXPECT_TRUE(view(base, {3, 0}, {4, 1}, 0).to_vector<double>().empty());
  EXPECT_EQ(st::tensor({0.0, 2.5, -1.0}).to_vector<bool>(), (std::vector<bool>{false, true, true}));
}

TEST(Tensor, DataPtrChecksDtype) {
  st::Tensor t = st::zeros({2}, st::kFloat64);
  EXPECT_NE(t.data_ptr<double>(), nullptr);
  expect_contains(error_message([&] { t.data_ptr<float>(); }), {"Float32", "Float64"});
  expect_contains(error_message([&] { t.data_ptr<int64_t>(); }), {"Int64", "Float64"});
}

TEST(Tensor, FactoryFromValues) {
  st::Tensor d = st::tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  EXPECT_EQ(d.dtype(), st::kFloat64);
  EXPECT_EQ(vec(d.sizes()), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(vec(st::tensor({5.0, 6.0, 7.0}).sizes()), (std::vector<int64_t>{3}));

  st::Tensor f = st::tensor(std::vector<float>{1.5f, -2.0f});
  EXPECT_EQ(f.dtype(), st::kFloat32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));

  st::Tensor i = st::tensor(std::vector<int64_t>{3, -1, 4, 1, 5, 9}, {3, 2});
  EXPECT_EQ(i.dtype(), st::kInt64);
  EXPECT_EQ(vec(i.sizes()), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{3, -1, 4, 1, 5, 9}));

  st::Tensor b = st::tensor(std::vector<bool>{true, false, true});
  EXPECT_EQ(b.dtype(), st::kBool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
}

TEST(Tensor, FactoryWrongValueCountThrows) {
  expect_contains(error_message([] { st::tensor({1.0, 2.0, 3.0}, {2, 2}); }), {"3", "[2, 2]"});
  expect_contains(error_message([] { st::tensor(std::vector<float>{1, 2}, {}); }), {"[]"});
  expect_contains(error_message([] { st::tensor(std::vector<int64_t>{1}, {2}); }), {"[2]"});
  expect_contains(error_message([] { st::tensor(std::vector<bool>{true, false}, {3}); }),
                  {"[3]"});
}

// ---- Scalar ------------------------------------------------------------------------

TEST(Scalar, KindsFollowTheCppType) {
  EXPECT_EQ(st::Scalar(2.5).kind(), st::kFloat64);
  EXPECT_EQ(st::Scalar(2.5f).kind(), st::kFloat64);
  EXPECT_EQ(st::Scalar(3).kind(), st::kInt64);
  EXPECT_EQ(st::Scalar(int64_t{-4}).kind(), st::kInt64);
  EXPECT_EQ(st::Scalar(size_t{7}).kind(), st::kInt64);
  EXPECT_EQ(st::Scalar(true).kind(), st::kBool);
  EXPECT_EQ(st::Scalar().kind(), st::kInt64);

  EXPECT_TRUE(st::Scalar(1.0).is_floating_point());
  EXPECT_FALSE(st::Scalar(1.0).is_integral());
  EXPECT_TRUE(st::Scalar(1).is_integral());
  EXPECT_FALSE(st::Scalar(1).is_bool());
  EXPECT_TRUE(st::Scalar(false).is_bool());
}

TEST(Scalar, Conversions) {
  EXPECT_EQ(st::Scalar(2.7).to_int(), 2);
  EXPECT_EQ(st::Scalar(-2.7).to<int64_t>(), -2);
  EXPECT_EQ(st::Scalar(3).to_double(), 3.0);
  EXPECT_EQ(st::Scalar(1.25).to<float>(), 1.25f);
  EXPECT_EQ(st::Scalar(true).to_int(), 1);
  EXPECT_EQ(st::Scalar(false).to_double(), 0.0);
  EXPECT_FALSE(st::Scalar(0.0).to_bool());
  EXPECT_TRUE(st::Scalar(0.5).to_bool());
  EXPECT_TRUE(st::Scalar(-2).to_bool());
  EXPECT_FALSE(st::Scalar(0).to_bool());
}

TEST(Scalar, EqualityIncludesKindAndPrinting) {
  EXPECT_TRUE(st::Scalar(2) == st::Scalar(int64_t{2}));
  EXPECT_FALSE(st::Scalar(2) == st::Scalar(2.0));
  EXPECT_FALSE(st::Scalar(true) == st::Scalar(1));
  EXPECT_FALSE(st::Scalar(1.5) == st::Scalar(2.5));
  EXPECT_TRUE(st::Scalar(1.5) == st::Scalar(1.5f));

  std::ostringstream out;
  out << st::Scalar(true) << " " << st::Scalar(-3) << " " << st::Scalar(2.5);
  EXPECT_EQ(out.str(), "true -3 2.5");
}

}  // namespace
