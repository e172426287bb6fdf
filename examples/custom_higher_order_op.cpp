// A user-defined higher-order operator: repeat(f, n, x) applies f to x n times.
// It is registered per key the way strata's own cond and while_loop are (Note
// [Higher-order operators]); a key without an implementation is a clear error,
// and registering one makes the transform work.
#include <strata/strata.h>

#include <cmath>
#include <iostream>

namespace st = strata;

namespace {

// One implementation for eager, grad and jvp: the loop runs at the caller's
// level, so each op of f is differentiated like any other.
std::vector<st::Tensor> repeat_inline(const st::HigherOrderOperator&, const st::HopArgs& args) {
  std::vector<st::Tensor> x = args.operands;
  for (int64_t i = 0; i < args.attrs.at(0); ++i) x = args.fns.at(0)(x);
  return x;
}

st::HigherOrderOperator& repeat_op() {
  static st::HigherOrderOperator op("example::repeat");
  static const bool registered =
      (op.impl({st::HopKey::Backend, st::HopKey::Grad, st::HopKey::Jvp}, &repeat_inline), true);
  (void)registered;
  return op;
}

// The typed front end: one tensor in, one out.
template <class F>
st::Tensor repeat(F f, int64_t n, const st::Tensor& x) {
  st::FlatFn flat = [&](const std::vector<st::Tensor>& v) { return std::vector<st::Tensor>{f(v[0])}; };
  return repeat_op()(st::HopArgs{.operands = {x}, .fns = {flat}, .attrs = {n}}).front();
}

}  // namespace

int main() {
  auto step = [](const st::Tensor& v) { return v.sin() * 1.5; };
  auto f = [&](const st::Tensor& v) { return repeat(step, 3, v).sum(); };
  const st::Tensor x = st::tensor({0.3, -0.7, 1.1}, {3});

  // grad of the operator against grad of the unrolled composition.
  auto unrolled = [&](const st::Tensor& v) { return step(step(step(v))).sum(); };
  const double grad_error = (st::grad(f)(x) - st::grad(unrolled)(x)).abs().max().item<double>();
  std::cout << "grad: max |repeat - unrolled| = " << grad_error << "\n";

  // No Vmap implementation yet: the error names the operator and the key.
  try {
    st::vmap(f)(st::stack({x, x * 2.0}, 0));
    std::cout << "vmap unexpectedly ran\n";
    return 1;
  } catch (const st::Error& e) {
    std::cout << "before registering Vmap: " << e.what() << "\n";
  }
  repeat_op().impl(st::HopKey::Vmap, &repeat_inline);
  const st::Tensor xs = st::stack({x, x * 2.0}, 0);
  const st::Tensor batched = st::vmap(f)(xs);
  const double vmap_error =
      std::abs(batched.select(0, 1).item<double>() - unrolled(xs.select(0, 1)).item<double>());
  std::cout << "vmap: |repeat - unrolled| at sample 1 = " << vmap_error << "\n";
  const bool ok = grad_error < 1e-12 && vmap_error < 1e-12;
  std::cout << "custom higher-order op: " << (ok ? "OK" : "MISMATCH") << "\n";
  return ok ? 0 : 1;
}
