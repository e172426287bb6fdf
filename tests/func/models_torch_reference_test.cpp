// The per-sample gradients and losses of the Transformer block classifier and the
// GroupNorm CNN (examples/models.h) by vmap(grad) equal functorch's vmap(grad) in
// PyTorch 1.13, in Float64. tests/reference/models_per_sample_grads.py writes the
// models out in PyTorch and records, per sample and parameter, the gradient's sum,
// sum of absolute values, sum of squares and listed entries (all of a parameter of
// at most 64 values, 16 evenly spaced ones otherwise). Both sides build the same
// parameters and inputs from formulas of the flat index, so no generator is shared.
// Tolerance: 1e-9 relative, plus 1e-12 of the sample's gradient norm for values
// that cancel to near zero (two Float64 computations summing in different orders).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "examples/models.h"

namespace strata::testing {
namespace {

constexpr double kRelTol = 1e-9, kNormTol = 1e-12;

// Parameter k of a model's table is scale * sin(0.37 i + k) + offset over its flat
// index i, as in the reference script.
struct ParamSpec {
  std::string name;
  Shape shape;
  double scale, offset;
};

std::vector<ParamSpec> transformer_specs() {
  using models::kClasses, models::kDim, models::kHidden, models::kSeq, models::kVocab;
  const double s = 1.0 / std::sqrt(static_cast<double>(kDim));
  return {{"embed", {kVocab, kDim}, 1.0, 0.0},
          {"pos", {kSeq, kDim}, 0.1, 0.0},
          {"ln1.w", {kDim}, 0.1, 1.0},
          {"ln1.b", {kDim}, 0.1, 0.0},
          {"wq", {kDim, kDim}, s, 0.0},
          {"wk", {kDim, kDim}, s, 0.0},
          {"wv", {kDim, kDim}, s, 0.0},
          {"wo", {kDim, kDim}, s, 0.0},
          {"bo", {kDim}, 0.1, 0.0},
          {"ln2.w", {kDim}, 0.1, 1.0},
          {"ln2.b", {kDim}, 0.1, 0.0},
          {"w1", {kHidden, kDim}, s, 0.0},
          {"b1", {kHidden}, 0.1, 0.0},
          {"w2", {kDim, kHidden}, 1.0 / std::sqrt(static_cast<double>(kHidden)), 0.0},
          {"b2", {kDim}, 0.1, 0.0},
          {"head.w", {kClasses, kDim}, s, 0.0},
          {"head.b", {kClasses}, 0.1, 0.0}};
}

std::vector<ParamSpec> gn_cnn_specs() {
  std::vector<ParamSpec> specs;
  for (const auto& [name, shape] : models::gn_cnn_param_shapes()) {
    specs.push_back({name, shape, models::fan_in_scale(shape), models::is_gn_gain(name) ? 1.0 : 0.0});
  }
  return specs;
}

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

models::Params make_params(const std::vector<ParamSpec>& specs) {
  models::Params params;
  for (size_t k = 0; k < specs.size(); ++k) {
    const ParamSpec& spec = specs[k];
    const Tensor i = arange(numel_of(spec.shape), kFloat64);
    params.emplace(
        spec.name,
        ((i * 0.37 + static_cast<double>(k)).sin() * spec.scale + spec.offset).reshape(spec.shape));
  }
  return params;
}

// The reference file's records (format: the script's docstring).
struct SampleRecord {
  double sum = 0, sum_abs = 0, sum_sq = 0;
  std::vector<std::pair<int64_t, double>> entries;
};
struct ParamRecord {
  int64_t numel = 0;
  std::vector<int64_t> shape;
  std::vector<SampleRecord> samples;
};
struct ModelRecord {
  int64_t batch = 0;
  std::vector<double> losses;
  std::map<std::string, ParamRecord> params;
};

std::map<std::string, ModelRecord> read_reference() {
  const std::string path = std::string(STRATA_MODEL_REFS) + "/models_per_sample_grads.txt";
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path);
  std::map<std::string, ModelRecord> models;
  ModelRecord* model = nullptr;
  ParamRecord* param = nullptr;
  std::string line, kind;
  while (std::getline(file, line)) {
    std::istringstream in(line);
    in >> kind;
    if (kind == "model") {
      std::string name;
      in >> name;
      model = &models[name];
      in >> model->batch;
    } else if (kind == "loss") {
      for (double v; in >> v;) model->losses.push_back(v);
    } else if (kind == "param") {
      std::string name;
      size_t ndim = 0;
      in >> name;
      param = &model->params[name];
      in >> param->numel >> ndim;
      param->shape.resize(ndim);
      for (int64_t& d : param->shape) in >> d;
    } else if (kind == "sample") {
      SampleRecord s;
      int64_t b = 0, count = 0;
      in >> b >> s.sum >> s.sum_abs >> s.sum_sq >> count;
      s.entries.resize(static_cast<size_t>(count));
      for (auto& [index, value] : s.entries) in >> index >> value;
      param->samples.push_back(std::move(s));
    }
    if (!in && !in.eof()) throw std::runtime_error("malformed line in " + path + ": " + line);
  }
  return models;
}

const ModelRecord& reference(const std::string& model) {
  static const std::map<std::string, ModelRecord> records = read_reference();
  return records.at(model);
}

void expect_near_ref(double actual, double expected, double norm, const std::string& what) {
  EXPECT_LE(std::abs(actual - expected), kRelTol * std::abs(expected) + kNormTol * norm)
      << what << ": Strata " << actual << ", functorch " << expected;
}

void expect_matches_reference(const ModelRecord& ref, const models::Params& grads,
                              const Tensor& losses) {
  ASSERT_EQ(losses.sizes().vec(), std::vector<int64_t>{ref.batch});
  ASSERT_EQ(ref.losses.size(), static_cast<size_t>(ref.batch));
  for (int64_t b = 0; b < ref.batch; ++b) {
    expect_near_ref(losses.select(0, b).item<double>(), ref.losses[static_cast<size_t>(b)], 0.0,
                    "loss of sample " + std::to_string(b));
  }
  ASSERT_EQ(grads.size(), ref.params.size());
  for (const auto& [name, p] : ref.params) {
    ASSERT_TRUE(grads.contains(name)) << name;
    const Tensor& g = grads.at(name);
    std::vector<int64_t> expected_shape{ref.batch};
    expected_shape.insert(expected_shape.end(), p.shape.begin(), p.shape.end());
    ASSERT_EQ(g.sizes().vec(), expected_shape) << name;
    ASSERT_EQ(p.samples.size(), static_cast<size_t>(ref.batch)) << name;
    for (int64_t b = 0; b < ref.batch; ++b) {
      const SampleRecord& s = p.samples[static_cast<size_t>(b)];
      const Tensor flat = g.select(0, b).reshape({p.numel});
      const std::string where = name + ", sample " + std::to_string(b);
      const double norm = std::sqrt(s.sum_sq);
      expect_near_ref(flat.sum().item<double>(), s.sum, s.sum_abs, where + ", sum");
      expect_near_ref(flat.abs().sum().item<double>(), s.sum_abs, 0.0, where + ", sum |g|");
      expect_near_ref((flat * flat).sum().item<double>(), s.sum_sq, 0.0, where + ", sum g^2");
      for (const auto& [index, value] : s.entries) {
        expect_near_ref(flat.select(0, index).item<double>(), value, norm,
                        where + ", entry " + std::to_string(index));
      }
    }
  }
}

template <class SampleLoss>
void check_model(const std::string& name, SampleLoss loss, const std::vector<ParamSpec>& specs,
                 const Tensor& x, const Tensor& y) {
  const ModelRecord& ref = reference(name);
  ASSERT_EQ(x.size(0), ref.batch);
  const models::Params params = make_params(specs);
  const models::Params grads = vmap(grad(loss), {.in_dims = {none, 0, 0}})(params, x, y);
  const Tensor losses = vmap(loss, {.in_dims = {none, 0, 0}})(params, x, y);
  expect_matches_reference(ref, grads, losses);
}

// Labels i mod classes.
Tensor labels_mod(int64_t batch, int64_t classes) {
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[static_cast<size_t>(i)] = i % classes;
  return tensor(labels, {batch});
}

TEST(ModelsTorchReference, TransformerPerSampleGradientsMatchFunctorch) {
  const int64_t batch = reference("transformer").batch;
  std::vector<int64_t> token_ids(static_cast<size_t>(batch * models::kSeq));
  for (size_t i = 0; i < token_ids.size(); ++i) {
    token_ids[i] = static_cast<int64_t>(i * 7 + 3) % models::kVocab;
  }
  const Tensor tokens = tensor(token_ids, {batch, models::kSeq});
  check_model("transformer", models::transformer_sample_loss, transformer_specs(), tokens,
              labels_mod(batch, models::kClasses));
}

TEST(ModelsTorchReference, GroupNormCnnPerSampleGradientsMatchFunctorch) {
  const int64_t batch = reference("gn_cnn").batch;
  const Tensor images =
      (arange(batch * 28 * 28, kFloat64) * 0.11 + 0.5).sin().reshape({batch, 1, 28, 28});
  check_model("gn_cnn", models::gn_cnn_sample_loss, gn_cnn_specs(), images, labels_mod(batch, 10));
}

}  // namespace
}  // namespace strata::testing
