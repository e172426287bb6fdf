#include "tests/fuzz/program.h"

#include <algorithm>
#include <iterator>
#include <sstream>
#include <tuple>
#include <utility>

namespace strata::fuzz {

const char* name(OpKind kind) {
  static const char* const names[kNumOpKinds] = {
      "exp(tanh)", "sin", "square",   "sigmoid",   "add",  "sub",
      "mul",       "div", "mul(sum)", "mul(mean)", "add_", "mul_ through a view", "sum(0, keepdim)",
      "cond",      "while_loop", "scan", "map", "cond (capturing)", "while_loop (capturing)",
      "scan (capturing)", "map (capturing)"};
  return names[static_cast<int>(kind)];
}

namespace {

using Shape = std::vector<int64_t>;

// Every register's shape is broadcast-compatible with x's and y's full shape, so
// any two registers broadcast together.
Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Shape result_shape(const Instruction& in, const Shape& a, const Shape& b) {
  switch (in.kind) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::DivSafe:
    case OpKind::Cond:
    case OpKind::CondCapture: return broadcast(a, b);
    case OpKind::SumKeep: {
      Shape out = a;
      if (!out.empty()) out[0] = 1;
      return out;
    }
    default: return a;
  }
}

// Whether an in-place op's operand b fits a: an in-place op cannot grow its output.
bool in_place_fits(OpKind kind, const Shape& a, const Shape& b) {
  if (kind == OpKind::AddInPlace) return broadcast(a, b) == a;
  if (kind == OpKind::MulThroughView) {
    return num_elements(b) == num_elements(a) || num_elements(b) == 1;
  }
  return true;
}

std::vector<Shape> register_shapes(const Program& p) {
  std::vector<Shape> shapes{p.shape, p.y_shape};
  for (const Instruction& in : p.code) shapes.push_back(result_shape(in, shapes[in.a], shapes[in.b]));
  return shapes;
}

// `full` with its leading dims dropped at random and some of the rest set to 1
// (down to a 0-dim shape).
Shape broadcast_source(const Shape& full, std::mt19937_64& rng) {
  Shape out(full.begin() + static_cast<long>(rng() % (full.size() + 1)), full.end());
  for (int64_t& d : out) {
    if (rng() % 2) d = 1;
  }
  return out;
}

// The ops an int64 or bool program draws from: no transcendental and no division;
// bool has no sub or square either.
constexpr OpKind kIntegerOps[] = {OpKind::Add,        OpKind::Mul,           OpKind::MulByTotal,
                                  OpKind::SumKeep,    OpKind::AddInPlace,    OpKind::MulThroughView,
                                  OpKind::Sub,        OpKind::Square};
constexpr size_t kNumBoolOps = std::size(kIntegerOps) - 2;

ScalarType random_dtype(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0: return kFloat32;
    case 1: return kInt64;
    case 2: return kBool;
    default: return kFloat64;
  }
}

}  // namespace

Program random_program(std::mt19937_64& rng) {
  // 0-dim, size-1, empty and ordinary shapes.
  static const std::vector<Shape> shapes = {{}, {1}, {3}, {2, 3}, {1, 4}, {0}, {2, 0}, {3, 1, 2}};
  Program p;
  p.shape = p.y_shape = shapes[rng() % shapes.size()];
  // One input of the full shape, the other one of the same shape or one that
  // broadcasts to it.
  switch (rng() % 3) {
    case 1: p.y_shape = broadcast_source(p.shape, rng); break;
    case 2: p.shape = broadcast_source(p.y_shape, rng); break;
    default: break;
  }
  p.dtype = random_dtype(rng);
  const bool floating = is_floating_point(p.dtype);
  std::vector<Shape> registers{p.shape, p.y_shape};
  // Integer inputs are truncated normals (|v| <= 4 or so): 3 ops of square or
  // mul(sum) over at most 6 elements stay far below 2^63.
  const int length = 1 + static_cast<int>(rng() % (floating ? 6 : 3));
  for (int i = 0; i < length; ++i) {
    const int n = static_cast<int>(registers.size());
    const size_t choices = p.dtype == kBool ? kNumBoolOps : std::size(kIntegerOps);
    const OpKind kind = floating ? static_cast<OpKind>(rng() % kNumOpKinds) : kIntegerOps[rng() % choices];
    Instruction in{kind, static_cast<int>(rng() % n), static_cast<int>(rng() % n)};
    if (!in_place_fits(in.kind, registers[in.a], registers[in.b])) std::swap(in.a, in.b);
    if (!in_place_fits(in.kind, registers[in.a], registers[in.b])) in.kind = OpKind::Mul;
    if (steps_along_a_dim(in.kind) && registers[in.a].empty()) {
      in.kind = OpKind::Sin;
    }
    registers.push_back(result_shape(in, registers[in.a], registers[in.b]));
    p.code.push_back(in);
  }
  return p;
}

Tensor cond_op(const Tensor& a, const Tensor& b) {
  return cond(
      a.sum() > 0.0, [](const Tensor& u, const Tensor& v) { return u * v; },
      [](const Tensor& u, const Tensor& v) { return u - v.sin(); }, a, b);
}

Tensor while_loop_op(const Tensor& a, const Tensor& b) {
  // The carry: steps taken, the value, b. One step, and a second one where the
  // value sums above 0 (per sample under vmap).
  using Carry = std::tuple<Tensor, Tensor, Tensor>;
  const Carry last = while_loop(
      [](const Carry& c) {
        const Tensor& steps = std::get<0>(c);
        return (steps < 1.0) || ((steps < 2.0) && (std::get<1>(c).sum() > 0.0));
      },
      [](const Carry& c) {
        const Tensor& v = std::get<2>(c);
        return Carry{std::get<0>(c) + 1.0, std::get<1>(c).sin() * 0.9 + v.sum() * 0.1, v};
      },
      Carry{zeros({}, a.dtype()), a, b});
  return std::get<1>(last);
}

Tensor scan_op(const Tensor& a) {
  auto [last, ys] = scan(
      [](const Tensor& c, const Tensor& x) { return std::pair{c * 0.5 + x.sin(), c * x}; },
      a.sum({0}) * 0.5, a);
  return ys + last;
}

Tensor map_op(const Tensor& a) {
  return map([](const Tensor& row) { return row.sin() * row.sum(); }, a);
}

Tensor cond_capture_op(const Tensor& a, const Tensor& b) {
  return cond(
      a.sum() > b.sum() * 0.5, [&b](const Tensor& u) { return u * b; },
      [&b](const Tensor& u) { return u - b.sin(); }, a);
}

Tensor while_loop_capture_op(const Tensor& a, const Tensor& b) {
  using Carry = std::pair<Tensor, Tensor>;
  const Carry last = while_loop(
      [](const Carry& c) {
        return (c.first < 1.0) || ((c.first < 2.0) && (c.second.sum() > 0.0));
      },
      [&b](const Carry& c) {
        return Carry{c.first + 1.0, c.second.sin() * 0.9 + b.sum() * 0.1};
      },
      Carry{zeros({}, a.dtype()), a});
  return last.second;
}

Tensor scan_capture_op(const Tensor& a, const Tensor& b) {
  auto [last, ys] = scan(
      [&b](const Tensor& c, const Tensor& x) {
        const Tensor s = b.sum().tanh();
        return std::pair{c * 0.5 + x.sin() * s, c * x + s};
      },
      a.sum({0}) * 0.5, a);
  return ys + last;
}

Tensor map_capture_op(const Tensor& a, const Tensor& b) {
  return map([&b](const Tensor& row) { return row.sin() * b.sum().tanh(); }, a);
}

bool steps_along_a_dim(OpKind kind) {
  return kind == OpKind::Scan || kind == OpKind::Map || kind == OpKind::ScanCapture ||
         kind == OpKind::MapCapture;
}

bool steps_along_a_dim(const Program& p) {
  return std::any_of(p.code.begin(), p.code.end(),
                     [](const Instruction& in) { return steps_along_a_dim(in.kind); });
}

int64_t num_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> output_shape(const Program& p) { return register_shapes(p).back(); }

Tensor run(const Program& p, const Tensor& x, const Tensor& y) {
  auto in_dtype = [&p](const Tensor& t) { return t.dtype() == p.dtype ? t : t.to(p.dtype); };
  std::vector<Tensor> r{in_dtype(x), in_dtype(y)};
  for (const Instruction& in : p.code) {
    const Tensor& a = r[in.a];
    const Tensor& b = r[in.b];
    switch (in.kind) {
      case OpKind::Exp: r.push_back(a.tanh().exp()); break;
      case OpKind::Sin: r.push_back(a.sin()); break;
      case OpKind::Square: r.push_back(a.square()); break;
      case OpKind::Sigmoid: r.push_back(a.sigmoid()); break;
      case OpKind::Add: r.push_back(a + b); break;
      case OpKind::Sub: r.push_back(a - b); break;
      case OpKind::Mul: r.push_back(a * b); break;
      case OpKind::DivSafe: r.push_back(a / (b * b + 1.0)); break;
      case OpKind::MulByTotal: r.push_back(a * b.sum()); break;
      case OpKind::MeanOver:
        r.push_back(a.dim() == 0 ? a * a : a * a.mean({-1}, /*keepdim=*/true));
        break;
      case OpKind::AddInPlace: {
        Tensor out = a.clone();
        out.add_(b);
        r.push_back(out);
        break;
      }
      case OpKind::MulThroughView: {
        Tensor out = a.clone();
        out.reshape({-1}).mul_(b.reshape({-1}));
        r.push_back(out);
        break;
      }
      case OpKind::SumKeep: r.push_back(a.dim() == 0 ? a : a.sum({0}, /*keepdim=*/true)); break;
      case OpKind::Cond: r.push_back(cond_op(a, b)); break;
      case OpKind::WhileLoop: r.push_back(while_loop_op(a, b)); break;
      case OpKind::Scan: r.push_back(scan_op(a)); break;
      case OpKind::Map: r.push_back(map_op(a)); break;
      case OpKind::CondCapture: r.push_back(cond_capture_op(a, b)); break;
      case OpKind::WhileCapture: r.push_back(while_loop_capture_op(a, b)); break;
      case OpKind::ScanCapture: r.push_back(scan_capture_op(a, b)); break;
      case OpKind::MapCapture: r.push_back(map_capture_op(a, b)); break;
    }
  }
  return r.back();
}

std::string to_cpp(const Program& p) {
  std::ostringstream out;
  const bool control_flow = std::any_of(p.code.begin(), p.code.end(), [](const Instruction& in) {
    return in.kind >= OpKind::Cond;
  });
  if (control_flow) out << "// cond_op, while_loop_op, scan_op, map_op, *_capture_op: copy them from tests/fuzz/program.cpp\n";
  out << "// inputs x of shape " << shape_string(p.shape) << ", y of shape "
      << shape_string(p.y_shape) << "\n";
  out << "auto f = [](const Tensor& x, const Tensor& y) {\n";
  if (p.dtype == kFloat64) {
    out << "  std::vector<Tensor> r{x, y};\n";
  } else {
    const std::string to = ".to(k" + std::string(to_string(p.dtype)) + ")";
    out << "  std::vector<Tensor> r{x" << to << ", y" << to << "};\n";
  }
  for (const Instruction& in : p.code) {
    const std::string a = "r[" + std::to_string(in.a) + "]";
    const std::string b = "r[" + std::to_string(in.b) + "]";
    out << "  ";
    switch (in.kind) {
      case OpKind::Exp: out << "r.push_back(" << a << ".tanh().exp());"; break;
      case OpKind::Sin: out << "r.push_back(" << a << ".sin());"; break;
      case OpKind::Square: out << "r.push_back(" << a << ".square());"; break;
      case OpKind::Sigmoid: out << "r.push_back(" << a << ".sigmoid());"; break;
      case OpKind::Add: out << "r.push_back(" << a << " + " << b << ");"; break;
      case OpKind::Sub: out << "r.push_back(" << a << " - " << b << ");"; break;
      case OpKind::Mul: out << "r.push_back(" << a << " * " << b << ");"; break;
      case OpKind::DivSafe:
        out << "r.push_back(" << a << " / (" << b << " * " << b << " + 1.0));";
        break;
      case OpKind::MulByTotal: out << "r.push_back(" << a << " * " << b << ".sum());"; break;
      case OpKind::MeanOver:
        out << "r.push_back(" << a << ".dim() == 0 ? " << a << " * " << a << " : " << a << " * "
            << a << ".mean({-1}, true));";
        break;
      case OpKind::AddInPlace:
        out << "{ Tensor t = " << a << ".clone(); t.add_(" << b << "); r.push_back(t); }";
        break;
      case OpKind::MulThroughView:
        out << "{ Tensor t = " << a << ".clone(); t.reshape({-1}).mul_(" << b
            << ".reshape({-1})); r.push_back(t); }";
        break;
      case OpKind::SumKeep:
        out << "r.push_back(" << a << ".dim() == 0 ? " << a << " : " << a << ".sum({0}, true));";
        break;
      case OpKind::Cond: out << "r.push_back(cond_op(" << a << ", " << b << "));"; break;
      case OpKind::WhileLoop: out << "r.push_back(while_loop_op(" << a << ", " << b << "));"; break;
      case OpKind::Scan: out << "r.push_back(scan_op(" << a << "));"; break;
      case OpKind::Map: out << "r.push_back(map_op(" << a << "));"; break;
      case OpKind::CondCapture: out << "r.push_back(cond_capture_op(" << a << ", " << b << "));"; break;
      case OpKind::WhileCapture:
        out << "r.push_back(while_loop_capture_op(" << a << ", " << b << "));";
        break;
      case OpKind::ScanCapture: out << "r.push_back(scan_capture_op(" << a << ", " << b << "));"; break;
      case OpKind::MapCapture: out << "r.push_back(map_capture_op(" << a << ", " << b << "));"; break;
    }
    out << "\n";
  }
  out << "  return r.back();\n};\n";
  return out.str();
}

}  // namespace strata::fuzz
