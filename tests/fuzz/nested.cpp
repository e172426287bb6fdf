// The differential fuzzer's random transform stacks (tests/fuzz/README.md): the
// program f(x) = run(p, x, y) wrapped in 1 to 4 random layers of grad, vjp, jvp,
// jacrev, jacfwd, vmap (random in_dims, out_dims, chunk_size), functionalize and
// trace + replay, against the same stack built from reference layers that reach
// the same value another way: a loop for vmap, forward mode for reverse mode and
// back, the function itself for functionalize and replay.
#include <sstream>

#include "tests/fuzz/check_support.h"
#include "tests/fuzz/layers.h"

namespace strata::fuzz {
namespace {

using Shape = std::vector<int64_t>;

// Layers keep every shape under this many elements (a Jacobian multiplies sizes).
inline constexpr int64_t kMaxElements = 64;

Shape concat(const Shape& a, const Shape& b) {
  Shape out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace

std::optional<Layer> draw_layer(std::mt19937_64& rng, Shape& in, Shape& out) {
  Layer layer{static_cast<LayerKind>(rng() % kNumLayerKinds)};
  switch (layer.kind) {
    case LayerKind::Vmap: {
      if (num_elements(in) * kBatch > kMaxElements || num_elements(out) * kBatch > kMaxElements) {
        return std::nullopt;
      }
      const auto in_rank = static_cast<int64_t>(in.size()), out_rank = static_cast<int64_t>(out.size());
      layer.in_dim = static_cast<int64_t>(rng() % (in.size() + 1));
      layer.out_dim = static_cast<int64_t>(rng() % (out.size() + 1));
      layer.chunk_size = static_cast<int64_t>(rng() % 3);
      in.insert(in.begin() + layer.in_dim, kBatch);
      out.insert(out.begin() + layer.out_dim, kBatch);
      // Negative dims now and then: they count from the end of the batched shape.
      if (rng() % 2) layer.in_dim -= in_rank + 1;
      if (rng() % 2) layer.out_dim -= out_rank + 1;
      return layer;
    }
    case LayerKind::Grad:
    case LayerKind::Vjp:
      layer.operand = random_tensor(rng, out);
      out = in;
      return layer;
    case LayerKind::Jvp: layer.operand = random_tensor(rng, in); return layer;
    case LayerKind::Jacrev:
    case LayerKind::Jacfwd:
      if (num_elements(in) * num_elements(out) > kMaxElements) return std::nullopt;
      layer.chunk_size = static_cast<int64_t>(rng() % 3);
      out = concat(out, in);
      return layer;
    case LayerKind::Functionalize:
      layer.remove = rng() % 2 ? Remove::Mutations : Remove::MutationsAndViews;
      return layer;
    case LayerKind::Replay: layer.operand = random_tensor(rng, in); return layer;
  }
  return std::nullopt;
}

std::vector<Layer> draw_stack(std::mt19937_64& rng, int depth, Shape& in, Shape& out) {
  std::vector<Layer> layers;
  for (int tries = 0; static_cast<int>(layers.size()) < depth && tries < 16; ++tries) {
    if (std::optional<Layer> layer = draw_layer(rng, in, out)) layers.push_back(std::move(*layer));
  }
  return layers;
}

const char* name(LayerKind kind) {
  static const char* const names[kNumLayerKinds] = {"vmap",   "grad",   "vjp",           "jvp",
                                                    "jacrev", "jacfwd", "functionalize", "replay"};
  return names[static_cast<int>(kind)];
}

std::string describe(const std::vector<Layer>& layers) {
  std::ostringstream out;
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    switch (it->kind) {
      case LayerKind::Vmap:
        out << "vmap(in_dim " << it->in_dim << ", out_dim " << it->out_dim << ", chunk "
            << it->chunk_size << ") > ";
        break;
      case LayerKind::Grad: out << "grad(weighted sum) > "; break;
      case LayerKind::Vjp: out << "vjp > "; break;
      case LayerKind::Jvp: out << "jvp > "; break;
      case LayerKind::Jacrev: out << "jacrev(chunk " << it->chunk_size << ") > "; break;
      case LayerKind::Jacfwd: out << "jacfwd(chunk " << it->chunk_size << ") > "; break;
      case LayerKind::Functionalize: out << "functionalize > "; break;
      case LayerKind::Replay: out << "trace + replay > "; break;
    }
  }
  out << "program";
  return out.str();
}

namespace {

// J (out + in dims) contracted with v over its leading `rank` dims (v of those
// dims) or, when `leading` is false, over its trailing ones.
Tensor contract(const Tensor& jacobian, const Tensor& v, bool leading) {
  const int64_t rank = v.dim();
  if (rank == 0) return jacobian * v;
  std::vector<int64_t> dims;
  const int64_t first = leading ? 0 : jacobian.dim() - rank;
  for (int64_t d = first; d < first + rank; ++d) dims.push_back(d);
  if (!leading) return (jacobian * v).sum(dims);
  Shape v_shape = v.sizes().vec();
  v_shape.resize(static_cast<size_t>(jacobian.dim()), 1);
  return (jacobian * v.reshape(v_shape)).sum(dims);
}

}  // namespace

Fn transformed(const Layer& layer, Fn f) {
  switch (layer.kind) {
    case LayerKind::Vmap:
      return vmap(f, {.in_dims = {layer.in_dim}, .out_dims = {layer.out_dim}, .chunk_size = layer.chunk_size});
    case LayerKind::Grad: {
      const Tensor w = layer.operand;
      return grad([f, w](const Tensor& x) { return (f(x) * w).sum(); });
    }
    case LayerKind::Vjp: {
      const Tensor ct = layer.operand;
      return [f, ct](const Tensor& x) { return std::get<0>(vjp(f, x).second(ct)); };
    }
    case LayerKind::Jvp: {
      const Tensor t = layer.operand;
      return [f, t](const Tensor& x) { return jvp(f, std::tuple{x}, std::tuple{t}).second; };
    }
    case LayerKind::Jacrev: return jacrev(f, {.chunk_size = layer.chunk_size});
    case LayerKind::Jacfwd: return jacfwd(f, {.chunk_size = layer.chunk_size});
    case LayerKind::Functionalize: return functionalize(f, layer.remove);
    case LayerKind::Replay: {
      // Traced once, outside every outer transform; the replay then runs under them.
      auto graph = std::make_shared<Graph>(trace(f)(layer.operand));
      return [graph](const Tensor& x) { return (*graph)(x).at(0); };
    }
  }
  return f;
}

namespace {

// The same layer by another route.
Fn reference(const Layer& layer, Fn f) {
  switch (layer.kind) {
    case LayerKind::Vmap: {
      const int64_t in_dim = layer.in_dim, out_dim = layer.out_dim;
      return [f, in_dim, out_dim](const Tensor& x) {
        std::vector<Tensor> rows;
        for (int64_t i = 0; i < kBatch; ++i) rows.push_back(f(x.select(in_dim, i)));
        const int64_t rank = rows[0].dim() + 1;
        return stack(rows, out_dim < 0 ? out_dim + rank : out_dim);
      };
    }
    case LayerKind::Grad: {
      const Tensor w = layer.operand;
      return jacfwd([f, w](const Tensor& x) { return (f(x) * w).sum(); });
    }
    case LayerKind::Vjp: {
      const Tensor ct = layer.operand;
      return [f, ct](const Tensor& x) { return contract(jacfwd(f)(x), ct, /*leading=*/true); };
    }
    case LayerKind::Jvp: {
      const Tensor t = layer.operand;
      return [f, t](const Tensor& x) { return contract(jacrev(f)(x), t, /*leading=*/false); };
    }
    case LayerKind::Jacrev: return jacfwd(f);
    case LayerKind::Jacfwd: return jacrev(f);
    case LayerKind::Functionalize:
    case LayerKind::Replay: return f;
  }
  return f;
}

// Float32 programs run in float64 here: a Hessian's float32 rounding swamps the
// stacks' tolerance.
std::string stack_vs_reference(const Program& drawn, std::mt19937_64& rng) {
  if (!floating(drawn)) return {};
  const Program p = in_float64(drawn);
  const Tensor y = random_tensor(rng, p.y_shape);
  Shape in = p.shape, out = output_shape(p);
  const std::vector<Layer> layers = draw_stack(rng, 1 + static_cast<int>(rng() % 4), in, out);
  std::string kinds;
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) kinds += std::string(name(it->kind)) + " > ";
  nested_coverage().stacks.insert(kinds);
  ++nested_coverage().by_depth[layers.size()];
  const Tensor x = random_tensor(rng, in);
  const Fn program = [&p, y](const Tensor& a) { return run(p, a, y); };
  auto build = [&](Fn (*wrap)(const Layer&, Fn)) {
    Fn f = program;
    for (const Layer& layer : layers) f = wrap(layer, std::move(f));
    return f;
  };
  const std::string what = "transform stack " + describe(layers) + " vs its reference stack";
  return agree(what.c_str(), [&] { return build(&transformed)(x); },
               [&] { return build(&reference)(x); }, 1e-9);
}

}  // namespace

NestedCoverage& nested_coverage() {
  static NestedCoverage coverage;
  return coverage;
}

const std::vector<Check>& nested_checks() {
  static const std::vector<Check> checks = {
      {"random transform stack (depth 1-4) vs reference stack", &stack_vs_reference},
  };
  return checks;
}

}  // namespace strata::fuzz
