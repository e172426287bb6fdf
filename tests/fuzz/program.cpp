#include "tests/fuzz/program.h"

#include <sstream>

namespace strata::fuzz {

const char* name(OpKind kind) {
  static const char* const names[kNumOpKinds] = {
      "exp(tanh)", "sin", "square",   "sigmoid",   "add",  "sub",
      "mul",       "div", "mul(sum)", "mul(mean)", "add_", "mul_ through a view"};
  return names[static_cast<int>(kind)];
}

Program random_program(std::mt19937_64& rng) {
  // 0-dim, size-1, empty and ordinary shapes.
  static const std::vector<std::vector<int64_t>> shapes = {{},     {1}, {3},    {2, 3},
                                                           {1, 4}, {0}, {2, 0}, {3, 1, 2}};
  Program p;
  p.shape = shapes[rng() % shapes.size()];
  const int length = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < length; ++i) {
    const int registers = 2 + i;
    p.code.push_back({static_cast<OpKind>(rng() % kNumOpKinds), static_cast<int>(rng() % registers),
                      static_cast<int>(rng() % registers)});
  }
  return p;
}

Tensor run(const Program& p, const Tensor& x, const Tensor& y) {
  std::vector<Tensor> r{x, y};
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
    }
  }
  return r.back();
}

std::string to_cpp(const Program& p) {
  std::ostringstream out;
  out << "// inputs x, y of shape " << shape_string(p.shape) << "\n";
  out << "auto f = [](const Tensor& x, const Tensor& y) {\n  std::vector<Tensor> r{x, y};\n";
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
    }
    out << "\n";
  }
  out << "  return r.back();\n};\n";
  return out.str();
}

}  // namespace strata::fuzz
