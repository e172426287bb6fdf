// safetensors round trips and the IDX reader (on Debian's Fashion-MNIST when
// installed).
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "tests/distributed/dist_test_support.h"

namespace st = strata;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("strata_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(Safetensors, RoundTripsEveryDtypeBitForBit) {
  st::Generator gen(1);
  const std::map<std::string, st::Tensor> tensors = {
      {"w", st::randn({3, 4}, gen)},
      {"b", st::randn({4}, gen, st::kFloat64)},
      {"step", st::full({}, 1234567890123, st::kInt64)},
      {"mask", st::randn({5}, gen) > 0.0},
      {"empty", st::zeros({0, 2})},
      {"view", st::randn({4, 3}, gen, st::kFloat64).t()},
      {"odd \"name\"\n", st::ones({1})}};
  const std::string path = temp_path("round_trip.safetensors");
  st::save_safetensors(path, tensors, {{"step", "42"}, {"note", "a \"quoted\" value"}});
  const auto back = st::load_safetensors(path);
  ASSERT_EQ(back.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    const st::Tensor& u = back.at(name);
    EXPECT_EQ(u.dtype(), t.dtype());
    EXPECT_EQ(std::vector<int64_t>(u.sizes().begin(), u.sizes().end()),
              std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
    EXPECT_EQ(u.to_vector<double>(), t.to_vector<double>());
  }
  EXPECT_EQ(back.at("step").item<int64_t>(), 1234567890123);
  const auto metadata = st::load_safetensors_metadata(path);
  EXPECT_EQ(metadata.at("step"), "42");
  EXPECT_EQ(metadata.at("note"), "a \"quoted\" value");
  std::remove(path.c_str());
}

// The layout other readers expect: 8-byte little-endian length, JSON, 8-byte
// aligned data.
TEST(Safetensors, WritesTheStandardLayout) {
  const std::string path = temp_path("layout.safetensors");
  st::save_safetensors(path, {{"x", st::tensor(std::vector<float>{1.0f, 2.0f}, {2})}});
  std::ifstream in(path, std::ios::binary);
  unsigned char length[8];
  in.read(reinterpret_cast<char*>(length), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | length[i];
  EXPECT_EQ(n % 8, 0u);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}");
  float values[2];
  in.read(reinterpret_cast<char*>(values), 8);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], 2.0f);
  std::remove(path.c_str());
}

TEST(Safetensors, BadFilesAreErrors) {
  EXPECT_NE(dist_test::error_of([] { st::load_safetensors("/nonexistent/x.safetensors"); })
                .find("cannot open"),
            std::string::npos);
  const std::string path = temp_path("bad.safetensors");
  {
    std::ofstream out(path, std::ios::binary);
    const std::string header = "{\"x\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}";
    uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << "ab";
  }
  EXPECT_NE(dist_test::error_of([&] { st::load_safetensors(path); }).find("dtype F16"),
            std::string::npos);
  {
    std::ofstream out(path, std::ios::binary);
    const std::string header = "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << "abcd";
  }
  EXPECT_NE(dist_test::error_of([&] { st::load_safetensors(path); }).find("data section"),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(Idx, ReadsAnUncompressedFile) {
  const std::string path = temp_path("images.idx");
  {
    std::ofstream out(path, std::ios::binary);
    const unsigned char header[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    for (int v = 0; v < 12; ++v) out.put(static_cast<char>(v * 20));
  }
  const st::Tensor images = st::data::read_idx_images(path);
  EXPECT_EQ(images.dim(), 4);
  EXPECT_EQ(images.size(1), 1);
  EXPECT_EQ(images.size(3), 3);
  EXPECT_FLOAT_EQ(images.reshape({12}).select(0, 11).item<float>(), 220.0f / 255.0f);
  EXPECT_NE(dist_test::error_of([&] { st::data::read_idx_labels(path); }).find("has 3 dims, not 1"),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(Idx, ReadsDebiansFashionMnist) {
  if (!std::filesystem::exists(std::string(st::data::kFashionMnistDir) +
                               "/t10k-labels-idx1-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/install-deps.sh)";
  }
  const st::data::FashionMnist data = st::data::load_fashion_mnist();
  EXPECT_EQ(data.train.images.size(0), 60000);
  EXPECT_EQ(data.test.images.size(0), 10000);
  EXPECT_EQ(data.test.images.size(2), 28);
  EXPECT_GE(data.train.labels.amin().item<int64_t>(), 0);
  EXPECT_EQ(data.train.labels.amax().item<int64_t>(), 9);
  // Balanced classes: 6000 of each in the training set.
  const st::Tensor class_3 = data.train.labels.eq(st::full({}, 3, st::kInt64));
  EXPECT_EQ(class_3.to(st::kInt64).sum().item<int64_t>(), 6000);
  EXPECT_GE(data.train.images.amin().item<double>(), 0.0);
  EXPECT_LE(data.train.images.amax().item<double>(), 1.0);
}

}  // namespace
