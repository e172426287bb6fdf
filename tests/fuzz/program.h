#pragma once

// Random straight-line programs for the differential fuzzer (tests/fuzz/README.md):
// a program maps two inputs of broadcast-compatible shapes to an output through a
// few registers, using elementwise math that broadcasts, reductions (some kept as
// size-1 dims), and in-place writes through views; each is run under transforms
// and compared with an equivalent computation.

#include <strata/strata.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace strata::fuzz {

enum class OpKind : uint8_t {
  Exp,  // exp(tanh(a)): bounded, so float64 differences stay meaningful
  Sin,
  Square,
  Sigmoid,
  Add,
  Sub,
  Mul,
  DivSafe,         // a / (b * b + 1)
  MulByTotal,      // a * b.sum(): a 0-dim reduction broadcast back
  MeanOver,        // a * a.mean(last dim, keepdim) (a reduction over a dim, broadcast)
  AddInPlace,      // r = a.clone(); r.add_(b)
  MulThroughView,  // r = a.clone(); r.reshape(-1).mul_(b.reshape(-1)): a write through a view
  SumKeep,         // a.sum(0, keepdim): a size-1 dim that later ops broadcast
  // Control flow (floating programs only):
  Cond,       // cond(a.sum() > 0, a * b, a - sin(b))
  WhileLoop,  // a carried through sin(v) * 0.9 + 0.1 * b.sum(), 1 or 2 times (v.sum() > 0)
  Scan,       // a scan over a's dim 0 (a not 0-dim): carry c * 0.5 + sin(x), ys c * x; ys + last
  Map,        // map over a's dim 0 (a not 0-dim) of sin(row) * row.sum()
  // Control flow whose functions capture b instead of taking it as an operand:
  CondCapture,   // cond(a.sum() > b.sum() * 0.5, u * b, u - sin(b)) on operand a
  WhileCapture,  // as WhileLoop, the carry (steps, value) and b read by the body
  ScanCapture,   // as Scan with s = tanh(b.sum()): the carry c * 0.5 + sin(x) * s, ys c * x + s
  MapCapture,    // map over a's dim 0 of sin(row) * tanh(b.sum())
};
inline constexpr int kNumOpKinds = 21;

struct Instruction {
  OpKind kind;
  int a;  // register indices (0 and 1 are the inputs)
  int b;
};

struct Program {
  std::vector<int64_t> shape;    // of x
  std::vector<int64_t> y_shape;  // of y: shape, or one broadcast-compatible with it
  std::vector<Instruction> code;
  // What run() converts both inputs to first. Mostly float64; sometimes float32, or
  // int64 / bool with only the ops that keep integers integers (a short program,
  // so int64 values cannot overflow); derivative checks skip non-floating programs.
  ScalarType dtype = kFloat64;
};

Program random_program(std::mt19937_64& rng);
// The number of elements of a tensor of `shape`.
int64_t num_elements(const std::vector<int64_t>& shape);
// The shape of the program's output (the last register).
std::vector<int64_t> output_shape(const Program& p);
// Runs the program on (x, y); the result is the last register.
Tensor run(const Program& p, const Tensor& x, const Tensor& y);
// The program as C++ a regression test can paste.
std::string to_cpp(const Program& p);
// The control-flow instructions (OpKind::Cond to MapCapture); a reproducer
// that uses one copies it from program.cpp.
Tensor cond_op(const Tensor& a, const Tensor& b);
Tensor while_loop_op(const Tensor& a, const Tensor& b);
Tensor scan_op(const Tensor& a);
Tensor map_op(const Tensor& a);
Tensor cond_capture_op(const Tensor& a, const Tensor& b);
Tensor while_loop_capture_op(const Tensor& a, const Tensor& b);
Tensor scan_capture_op(const Tensor& a, const Tensor& b);
Tensor map_capture_op(const Tensor& a, const Tensor& b);
// Whether p steps along a dim of its register (scan, map), or an instruction of the kind does.
bool steps_along_a_dim(const Program& p);
bool steps_along_a_dim(OpKind kind);
// Program names for the report: "exp", "add_", ...
const char* name(OpKind kind);

}  // namespace strata::fuzz
