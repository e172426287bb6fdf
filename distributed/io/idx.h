#pragma once

// Reading the IDX files of MNIST-style datasets (gzip-compressed or not), such
// as Debian's dataset-fashion-mnist package.

#include "func/grad/grad.h"
#include "func/tree.h"
#include "func/vmap/vmap.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

#include <string>

namespace strata::data {

// An IDX file of unsigned bytes with 3 dims [N, rows, cols] as Float32 images
// [N, 1, rows, cols] scaled to [0, 1].
Tensor read_idx_images(const std::string& path);
// An IDX file of unsigned bytes with 1 dim [N] as Int64 labels.
Tensor read_idx_labels(const std::string& path);

struct LabelledImages {
  Tensor images;  // [N, 1, 28, 28] Float32 in [0, 1]
  Tensor labels;  // [N] Int64 in [0, 10)
};

struct FashionMnist {
  LabelledImages train;  // 60000 samples
  LabelledImages test;   // 10000 samples
};

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

// {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from `dir`.
FashionMnist load_fashion_mnist(const std::string& dir = kFashionMnistDir);

}  // namespace strata::data
