// Expected strings below are written out by hand from the documented format.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/allocator.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "tensor/tensor.h"

namespace strata {
namespace {

template <class T>
Tensor make(IntArrayRef sizes, const std::vector<T>& values) {
  Tensor t = make_empty_tensor(sizes, scalar_type_of<T>, kCPU, "test");
  EXPECT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  T* data = t.data_ptr<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  return t;
}

template <class T>
std::vector<T> iota(int64_t n) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(i);
  return v;
}

Tensor view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  return Tensor(make_intrusive<TensorImpl>(base.impl()->storage(), base.dtype(), sizes, strides,
                                           offset));
}

std::string str(const Tensor& t) {
  std::ostringstream out;
  out << t;
  return out.str();
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Print, OneDimFloat) {
  EXPECT_EQ(str(make<float>({3}, {1.5f, -2.25f, 3.0f})),
            "tensor([ 1.5000, -2.2500,  3.0000], dtype=Float32)");
}

TEST(Print, TwoDimAlignsNegatives) {
  EXPECT_EQ(str(make<double>({2, 2}, {1.5, -2.0, 3.0, 4.0})),
            "tensor([[ 1.5000, -2.0000],\n"
            "        [ 3.0000,  4.0000]], dtype=Float64)");
}

TEST(Print, IntegerValuedFloats) {
  EXPECT_EQ(str(make<double>({4}, {1, 2, -3, 10})), "tensor([ 1.,  2., -3., 10.], dtype=Float64)");
}

TEST(Print, Int64) {
  EXPECT_EQ(str(make<int64_t>({2, 3}, {1, -20, 3, 400, 5, 6})),
            "tensor([[  1, -20,   3],\n"
            "        [400,   5,   6]], dtype=Int64)");
}

TEST(Print, Bool) {
  EXPECT_EQ(str(make<bool>({3}, {true, false, true})),
            "tensor([ True, False,  True], dtype=Bool)");
}

TEST(Print, ZeroDim) {
  EXPECT_EQ(str(make<double>({}, {3.5})), "tensor(3.5000, dtype=Float64)");
  EXPECT_EQ(str(make<int64_t>({}, {-7})), "tensor(-7, dtype=Int64)");
}

TEST(Print, Empty) {
  EXPECT_EQ(str(make<float>({0, 3}, {})), "tensor([], size=[0, 3], dtype=Float32)");
  EXPECT_EQ(str(make<int64_t>({0}, {})), "tensor([], size=[0], dtype=Int64)");
}

TEST(Print, ThreeDimSeparatesBlocksWithBlankLine) {
  EXPECT_EQ(str(make<int64_t>({2, 2, 2}, iota<int64_t>(8))),
            "tensor([[[0, 1],\n"
            "         [2, 3]],\n"
            "\n"
            "        [[4, 5],\n"
            "         [6, 7]]], dtype=Int64)");
}

TEST(Print, TransposedViewFollowsStrides) {
  Tensor base = make<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(str(view(base, {3, 2}, {1, 3}, 0)),
            "tensor([[1., 4.],\n"
            "        [2., 5.],\n"
            "        [3., 6.]], dtype=Float64)");
}

TEST(Print, SlicedViewWithOffset) {
  Tensor base = make<int64_t>({10}, iota<int64_t>(10));
  EXPECT_EQ(str(view(base, {2, 2}, {4, 2}, 1)),
            "tensor([[1, 3],\n"
            "        [5, 7]], dtype=Int64)");
  // Only the viewed elements count towards the format: 2.5 is hidden in the base.
  Tensor floats = make<double>({4}, {2.5, 10, 20, -30});
  EXPECT_EQ(str(view(floats, {3}, {1}, 1)), "tensor([ 10.,  20., -30.], dtype=Float64)");
}

TEST(Print, ScientificForLargeOrTinyMagnitudes) {
  EXPECT_EQ(str(make<double>({2}, {123456789.0, 1.5})),
            "tensor([1.2346e+08, 1.5000e+00], dtype=Float64)");
  EXPECT_EQ(str(make<double>({2}, {-2.5e-5, 3.0})),
            "tensor([-2.5000e-05,  3.0000e+00], dtype=Float64)");
  // Zero is not "tiny": it leaves fixed notation alone.
  EXPECT_EQ(str(make<double>({2}, {0.0, 0.25})), "tensor([0.0000, 0.2500], dtype=Float64)");
}

TEST(Print, NanAndInf) {
  EXPECT_EQ(str(make<double>({4}, {kNan, kInf, -kInf, 1.5})),
            "tensor([   nan,    inf,   -inf, 1.5000], dtype=Float64)");
  // Non-finite values do not stop the others from printing as integers.
  EXPECT_EQ(str(make<float>({2}, {1.0f, static_cast<float>(kNan)})),
            "tensor([ 1., nan], dtype=Float32)");
}

TEST(Print, LargeOneDimIsTruncated) {
  EXPECT_EQ(str(make<int64_t>({2000}, iota<int64_t>(2000))),
            "tensor([   0,    1,    2, ..., 1997, 1998, 1999], dtype=Int64)");
}

TEST(Print, LargeTwoDimIsTruncated) {
  std::string s = str(make<int64_t>({100, 20}, iota<int64_t>(2000)));
  EXPECT_EQ(s,
            "tensor([[   0,    1,    2, ...,   17,   18,   19],\n"
            "        [  20,   21,   22, ...,   37,   38,   39],\n"
            "        [  40,   41,   42, ...,   57,   58,   59],\n"
            "        ...,\n"
            "        [1940, 1941, 1942, ..., 1957, 1958, 1959],\n"
            "        [1960, 1961, 1962, ..., 1977, 1978, 1979],\n"
            "        [1980, 1981, 1982, ..., 1997, 1998, 1999]], dtype=Int64)");
  EXPECT_LT(s.size(), 500u);
}

TEST(Print, TruncatedFormatIgnoresHiddenElements) {
  std::vector<double> values = iota<double>(2000);
  values[1000] = 0.5e12;  // hidden: would force scientific notation if counted
  std::string s = str(make<double>({2000}, values));
  EXPECT_EQ(s, "tensor([   0.,    1.,    2., ..., 1997., 1998., 1999.], dtype=Float64)");
}

TEST(Print, LargeThreeDimIsShortAndHasCorners) {
  std::string s = str(make<int64_t>({10, 10, 20}, iota<int64_t>(2000)));
  EXPECT_NE(s.find("tensor([[[   0,    1,    2, ...,   17,   18,   19],"), std::string::npos);
  EXPECT_NE(s.find("1997, 1998, 1999]]], dtype=Int64)"), std::string::npos);
  EXPECT_NE(s.find("\n\n        ...,\n\n        [["), std::string::npos);
  EXPECT_LT(s.size(), 3000u);
}

TEST(Print, DtypeSuffix) {
  EXPECT_EQ(str(make<float>({1}, {1.5f})), "tensor([1.5000], dtype=Float32)");
  EXPECT_EQ(str(make<double>({1}, {1.5})), "tensor([1.5000], dtype=Float64)");
}

TEST(Print, Undefined) { EXPECT_EQ(str(Tensor()), "tensor(undefined)"); }

// Stands in for a transform's wrapper, which has no storage of its own.
class StoragelessImpl : public TensorImpl {
 public:
  StoragelessImpl() : TensorImpl(DispatchKeySet(DispatchKey::Batched), kFloat32, kCPU) {
    set_sizes_contiguous({2, 3});
  }
  const char* impl_name() const override { return "FakeWrapperImpl"; }
};

TEST(Print, WithoutStorage) {
  EXPECT_EQ(str(Tensor(make_intrusive<StoragelessImpl>())),
            "tensor(<FakeWrapperImpl without storage>, size=[2, 3], dtype=Float32)");
}

// Device memory the CPU must not read: host malloc, but flagged not host-accessible.
// Device memory that is really host memory, so the test can write values the
// printer may only reach through copy_to_host.
class FakeDeviceAllocator : public Allocator {
 public:
  void* allocate(size_t nbytes) override { return std::malloc(nbytes == 0 ? 1 : nbytes); }
  void deallocate(void* ptr, size_t) override { std::free(ptr); }
  bool host_accessible() const override { return false; }
  void copy_to_host(void* dst, const void* src, size_t nbytes, int) override {
    ++copies;
    std::memcpy(dst, src, nbytes);
  }
  int copies = 0;
};

TEST(Print, DeviceTensorIsCopiedToTheHost) {
  Allocator* previous = nullptr;
  try {
    previous = allocator_for(DeviceType::CUDA);
  } catch (const Error&) {
  }
  FakeDeviceAllocator fake;
  register_allocator(DeviceType::CUDA, &fake);
  {
    Tensor t = make_empty_tensor({2, 3}, kFloat32, cuda(0), "test");
    float* data = static_cast<float*>(t.impl()->data_ptr());
    for (int i = 0; i < 6; ++i) data[i] = static_cast<float>(i);
    EXPECT_EQ(str(t.t()),
              "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]], dtype=Float32, "
              "device=cuda:0)");
    EXPECT_EQ(fake.copies, 1);
    EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  }
  register_allocator(DeviceType::CUDA, previous);
}

}  // namespace
}  // namespace strata
