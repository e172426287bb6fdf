// The differential fuzzer's bad programs (tests/fuzz/README.md): a program with
// one invalid call appended (a dim out of range, a shape that cannot be, an
// index past the end, an undefined tensor, control flow given a wrong predicate
// or carry) must raise a strata::Error naming the failing operator, eagerly and
// under a random stack of up to 4 transforms; never another exception, a value
// or a crash.
#include <sstream>

#include "tests/fuzz/check_support.h"
#include "tests/fuzz/layers.h"

namespace strata::fuzz {
namespace {

enum class BadKind : uint8_t {
  SelectPastLastDim,   // a.select(a.dim(), 0)
  ReshapeToMore,       // a.reshape({numel + 1})
  SumPastLastDim,      // a.sum({a.dim() + 1})
  InPlaceGrows,        // a.clone().add_(b), b with one more leading dim of 2
  IndexPastTheEnd,     // a.reshape({-1}).index_select(0, {numel})
  UndefinedOperand,    // a * Tensor()
  CondOnAFloat,        // cond(a.sum(), ...)
  LoopBodyGrowsCarry,  // while_loop whose body unsqueezes the carry
  ScanLengthsDiffer,   // scan over a.reshape({-1}) and numel + 1 zeros
  MapOverZeroDim,      // map over a.sum()
};
inline constexpr int kNumBadKinds = 10;

struct Bad {
  BadKind kind;
  int reg;  // the register the call takes
};

// Text every error of the call must contain (the operator's name).
const char* op_name(BadKind kind) {
  static const char* const names[kNumBadKinds] = {
      "select", "reshape", "sum", "add_", "index_select", "mul",
      "strata::cond", "strata::while_loop", "strata::scan", "strata::map"};
  return names[static_cast<int>(kind)];
}

const char* to_cpp(BadKind kind) {
  static const char* const code[kNumBadKinds] = {
      "a.select(a.dim(), 0)",
      "a.reshape({a.numel() + 1})",
      "a.sum({a.dim() + 1})",
      "a.clone().add_(zeros({2, a.sizes()...}))",
      "a.reshape({-1}).index_select(0, tensor({a.numel()}))",
      "a * Tensor()",
      "cond(a.sum(), a -> a, a -> -a, a)",
      "while_loop over (k, a): k < 1, (k + 1, a.unsqueeze(0))",
      "scan over a.reshape({-1}) and zeros({a.numel() + 1})",
      "map(row -> row, a.sum())"};
  return code[static_cast<int>(kind)];
}

Tensor call(BadKind kind, const Tensor& a) {
  switch (kind) {
    case BadKind::SelectPastLastDim: return a.select(a.dim(), 0);
    case BadKind::ReshapeToMore: return a.reshape({a.numel() + 1});
    case BadKind::SumPastLastDim: return a.sum({a.dim() + 1});
    case BadKind::InPlaceGrows: {
      std::vector<int64_t> grown = a.sizes().vec();
      grown.insert(grown.begin(), 2);
      Tensor t = a.clone();
      t.add_(zeros(grown, a.dtype()));
      return t;
    }
    case BadKind::IndexPastTheEnd:
      return a.reshape({-1}).index_select(0, tensor(std::vector<int64_t>{a.numel()}, {1}));
    case BadKind::UndefinedOperand: return a * Tensor();
    case BadKind::CondOnAFloat:
      return cond(
          a.sum(), [](const Tensor& u) { return u; }, [](const Tensor& u) { return -u; }, a);
    case BadKind::LoopBodyGrowsCarry: {
      using Carry = std::pair<Tensor, Tensor>;
      return while_loop([](const Carry& c) { return c.first < 1.0; },
                        [](const Carry& c) { return Carry{c.first + 1.0, c.second.unsqueeze(0)}; },
                        Carry{zeros({}, kFloat64), a})
          .second;
    }
    case BadKind::ScanLengthsDiffer: {
      const std::pair<Tensor, Tensor> xs{a.reshape({-1}), zeros({a.numel() + 1}, a.dtype())};
      return scan([](const Tensor& c, const std::pair<Tensor, Tensor>& x) { return std::pair{c, x.first + x.second}; },
                  a.sum(), xs)
          .second;
    }
    case BadKind::MapOverZeroDim: return map([](const Tensor& row) { return row; }, a.sum());
  }
  return a;
}

// What the check's result says when a side did not raise the call's error.
std::string not_raised(const char* side, const Bad& bad, const std::string& got) {
  std::ostringstream out;
  out << "bad program (then " << to_cpp(bad.kind) << " with a = r[" << bad.reg << "]) " << side
      << ": expected a strata::Error naming " << op_name(bad.kind) << ", " << got;
  return out.str();
}

// Empty when f raised a strata::Error naming the call's operator; else what it did.
template <class F>
std::string raised_naming(const Bad& bad, F&& f) {
  try {
    f();
    return "but it ran";
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.find(op_name(bad.kind)) != std::string::npos) return {};
    return "got one without that name: " + message;
  } catch (const std::exception& e) {
    return std::string("got another exception: ") + e.what();
  }
}

std::string bad_program_raises(const Program& drawn, std::mt19937_64& rng) {
  if (!floating(drawn)) return {};
  const Program p = in_float64(drawn);
  const Bad bad{static_cast<BadKind>(rng() % kNumBadKinds),
                static_cast<int>(rng() % (p.code.size() + 2))};
  const Tensor y = random_tensor(rng, p.y_shape);
  std::vector<int64_t> in = p.shape, out = output_shape(p);
  const std::vector<Layer> layers = draw_stack(rng, 1 + static_cast<int>(rng() % 4), in, out);
  const Tensor x = random_tensor(rng, in);
  auto registers = [&p, y](const Tensor& a) {
    std::vector<Tensor> r{a, y};
    for (size_t i = 0; i < p.code.size(); ++i) {
      Program prefix = p;
      prefix.code.resize(i + 1);
      r.push_back(run(prefix, a, y));
    }
    return r;
  };
  const Fn bad_program = [&](const Tensor& a) {
    return call(bad.kind, registers(a)[static_cast<size_t>(bad.reg)]);
  };
  if (std::string eager = raised_naming(bad, [&] { bad_program(random_tensor(rng, p.shape)); });
      !eager.empty()) {
    return not_raised("eagerly", bad, eager);
  }
  auto build = [&](Fn f) {
    for (const Layer& layer : layers) f = transformed(layer, std::move(f));
    return f;
  };
  const std::string stacked = raised_naming(bad, [&] { build(bad_program)(x); });
  if (stacked.empty()) return {};
  // The stack may refuse the program before the call (a clear error for a
  // case it does not support): then it refuses the program without the call too.
  const Fn good_program = [&p, y](const Tensor& a) { return run(p, a, y); };
  std::string good_error;
  if (!attempt([&] { return build(good_program)(x); }, good_error)) {
    return std::string(kUnsupported) + "bad program under " + describe(layers) + ": " + good_error;
  }
  return not_raised(("under " + describe(layers)).c_str(), bad, stacked);
}

}  // namespace

const std::vector<Check>& error_checks() {
  static const std::vector<Check> checks = {
      {"bad program raises a strata::Error naming the op, eagerly and under a random stack",
       &bad_program_raises},
  };
  return checks;
}

}  // namespace strata::fuzz
