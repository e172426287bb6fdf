#pragma once

// Helpers for the distributed tests: only the public API.

#include <gtest/gtest.h>
#include <strata/strata.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace dist_test {

namespace st = strata;
using Params = std::map<std::string, st::Tensor>;

// The message of the strata::Error that f throws ("" and a failure otherwise).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const st::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected strata::Error, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected strata::Error, nothing was thrown";
  return "";
}

// max |a - b| / max(max |b|, tiny).
inline double relative_difference(const st::Tensor& a, const st::Tensor& b) {
  const double scale = std::max(b.abs().amax().item<double>(), 1e-300);
  return (a - b).abs().amax().item<double>() / scale;
}

inline double max_relative_difference(const Params& a, const Params& b) {
  double worst = 0;
  for (const auto& [name, t] : b) worst = std::max(worst, relative_difference(a.at(name), t));
  return worst;
}

// A small MLP with a per-sample loss: x [features], y [] of `classes`.
inline Params mlp_params(int64_t features, int64_t hidden, int64_t classes, st::ScalarType dtype,
                         uint64_t seed) {
  st::Generator gen(seed);
  return {{"w1", st::randn({hidden, features}, gen, dtype) * 0.5},
          {"b1", st::randn({hidden}, gen, dtype) * 0.1},
          {"w2", st::randn({classes, hidden}, gen, dtype) * 0.5},
          {"b2", st::randn({classes}, gen, dtype) * 0.1}};
}

inline st::Tensor mlp_sample_loss(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  const st::Tensor h = st::nn::linear(x.unsqueeze(0), p.at("w1"), p.at("b1")).tanh();
  return st::nn::cross_entropy(st::nn::linear(h, p.at("w2"), p.at("b2")), y.unsqueeze(0));
}

// The same loss for ghost clipping: the batch's per-sample losses.
inline st::Tensor mlp_ghost_loss(const Params& p, const st::Tensor& x, const st::Tensor& y,
                                 st::dp::GhostTape& tape) {
  const st::Tensor h = tape.linear(x, p.at("w1"), p.at("b1")).tanh();
  return st::nn::cross_entropy(tape.linear(h, p.at("w2"), p.at("b2")), y,
                               st::nn::Reduction::None);
}

inline Params clone(const Params& p) {
  Params out;
  for (const auto& [name, t] : p) out.emplace(name, t.clone());
  return out;
}

}  // namespace dist_test
