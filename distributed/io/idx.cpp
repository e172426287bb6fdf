#include "distributed/io/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace strata::data {

namespace {

constexpr char kTag[] = "data::read_idx";

// The dims and bytes of an IDX file of unsigned bytes: magic 0x0000 08 <ndim>,
// then ndim big-endian uint32 sizes, then the values row-major.
struct IdxBytes {
  std::vector<int64_t> dims;
  std::vector<unsigned char> values;
};

IdxBytes read_idx_bytes(const std::string& path, int expected_dims) {
  // gzread reads plain files as they are, so both forms work.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  STRATA_CHECK(file != nullptr, kTag, "cannot open ", path);
  auto read = [&](void* into, size_t bytes) {
    const int got = gzread(file.get(), into, static_cast<unsigned>(bytes));
    STRATA_CHECK(got == static_cast<int>(bytes), kTag, path, " ends early (wanted ", bytes,
                 " bytes, got ", got, ")");
  };
  unsigned char magic[4];
  read(magic, 4);
  STRATA_CHECK(magic[0] == 0 && magic[1] == 0 && magic[2] == 0x08, kTag, path,
               " is not an IDX file of unsigned bytes");
  STRATA_CHECK(magic[3] == expected_dims, kTag, path, " has ", int{magic[3]}, " dims, not ",
               expected_dims);
  IdxBytes idx;
  int64_t total = 1;
  for (int d = 0; d < expected_dims; ++d) {
    unsigned char size[4];
    read(size, 4);
    const int64_t n = (int64_t{size[0]} << 24) | (int64_t{size[1]} << 16) |
                      (int64_t{size[2]} << 8) | int64_t{size[3]};
    idx.dims.push_back(n);
    total *= n;
  }
  idx.values.resize(static_cast<size_t>(total));
  constexpr size_t kPiece = size_t{1} << 30;
  for (size_t first = 0; first < idx.values.size(); first += kPiece) {
    read(idx.values.data() + first, std::min(kPiece, idx.values.size() - first));
  }
  return idx;
}

}  // namespace

Tensor read_idx_images(const std::string& path) {
  const IdxBytes idx = read_idx_bytes(path, 3);
  std::vector<float> pixels(idx.values.size());
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(idx.values[i]) / 255.0f;
  return tensor(pixels, {idx.dims[0], 1, idx.dims[1], idx.dims[2]});
}

Tensor read_idx_labels(const std::string& path) {
  const IdxBytes idx = read_idx_bytes(path, 1);
  return tensor(std::vector<int64_t>(idx.values.begin(), idx.values.end()), {idx.dims[0]});
}

FashionMnist load_fashion_mnist(const std::string& dir) {
  auto part = [&](const std::string& prefix) {
    LabelledImages set{read_idx_images(dir + "/" + prefix + "-images-idx3-ubyte.gz"),
                       read_idx_labels(dir + "/" + prefix + "-labels-idx1-ubyte.gz")};
    STRATA_CHECK(set.images.size(0) == set.labels.size(0), "data::load_fashion_mnist", dir, "/",
                 prefix, ": ", set.images.size(0), " images but ", set.labels.size(0), " labels");
    return set;
  };
  return {part("train"), part("t10k")};
}

}  // namespace strata::data
