// The differential fuzzer's checks of functionalize, trace + replay, cond,
// custom functions, float32, threads and TBB's thread count (tests/fuzz/README.md).
#include <algorithm>
#include <thread>

#include "kernels/cpu/parallel.h"

#include "tests/fuzz/check_support.h"

namespace strata::fuzz {
namespace {

// Named members, not structured bindings: clang before 16 cannot capture a
// structured binding in a lambda.
struct Inputs {
  Tensor x, y;
};

Inputs random_inputs(const Program& p, std::mt19937_64& rng, bool batched = false) {
  Tensor x = random_tensor(rng, batched ? with_batch(p.shape) : p.shape);
  return {x, random_tensor(rng, batched ? with_batch(p.y_shape) : p.y_shape)};
}

std::string functionalize_vs_eager(const Program& p, std::mt19937_64& rng) {
  const Inputs drawn = random_inputs(p, rng);
  const Tensor &x = drawn.x, &y = drawn.y;
  const Remove remove = rng() % 2 ? Remove::Mutations : Remove::MutationsAndViews;
  auto f = [&](const Tensor& a, const Tensor& b) { return run(p, a, b); };
  std::string failure = agree(
      "functionalize vs eager", [&] { return functionalize(f, remove)(x, y); },
      [&] { return f(x, y); }, 0);
  if (!failure.empty() || !floating(p)) return failure;
  auto loss = [&](const Tensor& a) { return run(p, a, y).sum(); };
  return agree(
      "grad(functionalize) vs grad", [&] { return grad(functionalize(loss, remove))(x); },
      [&] { return grad(loss)(x); }, 1e-12);
}

// The graph of f (eager, vmap or grad of the program) traced at one pair of
// inputs, replayed on another.
std::string trace_replay_vs_eager(const Program& p, std::mt19937_64& rng) {
  const unsigned stack = rng() % (floating(p) ? 3 : 2);
  const Inputs drawn = random_inputs(p, rng, stack == 1), drawn2 = random_inputs(p, rng, stack == 1);
  const Tensor &x = drawn.x, &y = drawn.y, &x2 = drawn2.x, &y2 = drawn2.y;
  auto f = [&](const Tensor& a, const Tensor& b) -> Tensor {
    auto program = [&](const Tensor& u, const Tensor& v) { return run(p, u, v); };
    auto loss = [&](const Tensor& u, const Tensor& v) { return run(p, u, v).sum(); };
    if (stack == 1) return vmap(program)(a, b);
    if (stack == 2) return grad(loss)(a, b);
    return program(a, b);
  };
  // Bitwise, except the gradient of a program with a cond: its recorded
  // backward is a cond of the branches' vjps (Note [Control flow traced inside
  // grad]), whose gradients reach an input apart from the rest, so a register
  // used by the cond and elsewhere sums its gradients in another order.
  const bool has_cond = std::any_of(p.code.begin(), p.code.end(), [](const Instruction& in) {
    return in.kind == OpKind::Cond || in.kind == OpKind::CondCapture;
  });
  return agree(
      "trace replay vs eager", [&] { return trace(f)(x, y)(x2, y2).at(0); },
      [&] { return f(x2, y2); }, stack == 2 && has_cond ? 1e-12 : 0);
}

// cond with a per-sample predicate under vmap (both branches run, each lane keeps
// its own), and its gradient, against a loop that takes each sample's branch.
std::string cond_vs_loop(const Program& p, std::mt19937_64& rng) {
  if (!floating(p)) return {};
  const Inputs batch = random_inputs(p, rng, true);
  const Tensor &xs = batch.x, &ys = batch.y;
  const Tensor preds = random_tensor(rng, {kBatch}) > zeros({kBatch}, kFloat64);
  auto taken = [&](const Tensor& a, const Tensor& b) { return run(p, a, b); };
  // The other branch has the program's output shape (its inputs may broadcast).
  auto other = [&](const Tensor& a, const Tensor& b) { return run(p, a, b).cos(); };
  auto branch = [&](const Tensor& c, const Tensor& a, const Tensor& b) {
    return cond(c, taken, other, a, b);
  };
  auto loop = [&](auto&& per_sample) {
    std::vector<Tensor> rows;
    for (int64_t i = 0; i < kBatch; ++i) {
      rows.push_back(per_sample(preds.select(0, i).item<bool>(), xs.select(0, i), ys.select(0, i)));
    }
    return stack(rows);
  };
  std::string failure = agree(
      "vmap(cond) vs loop", [&] { return vmap(branch)(preds, xs, ys); },
      [&] {
        return loop([&](bool c, const Tensor& a, const Tensor& b) { return c ? taken(a, b) : other(a, b); });
      },
      1e-12);
  if (!failure.empty()) return failure;
  auto loss = [&](const Tensor& a, const Tensor& c, const Tensor& b) { return branch(c, a, b).sum(); };
  return agree(
      "vmap(grad(cond)) vs loop of grad", [&] { return vmap(grad(loss))(xs, preds, ys); },
      [&] {
        return loop([&](bool c, const Tensor& a, const Tensor& b) {
          return c ? grad([&](const Tensor& u) { return taken(u, b).sum(); })(a)
                   : grad([&](const Tensor& u) { return other(u, b).sum(); })(a);
        });
      },
      // Batched and per-sample sums round differently: 2e-12 relative was seen
      // (program seed 7178232, gradients near 700).
      1e-10);
}

// The program as a custom function whose vjp rule is the program's vjp: grad uses
// the rule, jvp derives J·t from it, vmap derives a batched custom function.
std::string custom_function_vs_plain(const Program& p, std::mt19937_64& rng) {
  if (!floating(p)) return {};
  const Inputs drawn = random_inputs(p, rng);
  const Tensor &x = drawn.x, &y = drawn.y;
  const Tensor t = random_tensor(rng, p.shape);
  auto f = [&](const Tensor& a, const Tensor& b) { return run(p, a, b); };
  const CustomFunction custom = custom_function(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0], in[1])}; },
      {.vjp = [&](const std::vector<Tensor>& in, const std::vector<Tensor>&,
                  const std::vector<Tensor>& ct) {
         auto [gx, gy] = vjp(f, in[0], in[1]).second(ct[0]);
         if (planted_bugs().wrong_custom_vjp) gx = gx * 1.5;
         return std::vector<Tensor>{gx, gy};
       },
       .name = "fuzz_program"});
  auto g = [&](const Tensor& a, const Tensor& b) { return custom({a, b})[0]; };
  std::string failure = agree(
      "grad(custom_function) vs grad",
      [&] { return grad([&](const Tensor& a) { return g(a, y).sum(); })(x); },
      [&] { return grad([&](const Tensor& a) { return f(a, y).sum(); })(x); }, 1e-12);
  if (!failure.empty()) return failure;
  failure = agree(
      "jvp(custom_function) vs jvp",
      [&] { return jvp([&](const Tensor& a) { return g(a, y); }, std::tuple{x}, std::tuple{t}).second; },
      [&] { return jvp([&](const Tensor& a) { return f(a, y); }, std::tuple{x}, std::tuple{t}).second; },
      1e-12);
  if (!failure.empty()) return failure;
  const Inputs batch = random_inputs(p, rng, true);
  const Tensor &xs = batch.x, &ys = batch.y;
  return agree(
      "vmap(custom_function) vs vmap", [&] { return vmap(g)(xs, ys); }, [&] { return vmap(f)(xs, ys); },
      1e-12);
}

// The program and its gradient in float32 against float64, where float64 stays
// in a range float32 represents well.
std::string float32_vs_float64(const Program& program, std::mt19937_64& rng) {
  if (!floating(program)) return {};
  const Program p = in_float64(program);
  Program p32 = p;
  p32.dtype = kFloat32;
  const Inputs drawn = random_inputs(p, rng);
  const Tensor &x = drawn.x, &y = drawn.y;
  const Tensor x32 = x.to(kFloat32), y32 = y.to(kFloat32);
  // Skipped where a register passes 1e3: float32 then holds it only to about
  // 1e-4 absolute, and a sin of it (sin(16233.7) in a while_loop's step) is off
  // by that much, more than the check's relative tolerance of the result.
  for (size_t i = 0; i < p.code.size(); ++i) {
    Program prefix = p;
    prefix.code.resize(i + 1);
    std::string error;
    const std::optional<Tensor> r = attempt([&] { return run(prefix, x, y); }, error);
    if (r && r->numel() > 0 && !(r->abs().max().item<double>() < 1e3)) return {};
  }
  std::string failure = agree(
      "float32 vs float64", [&] { return run(p32, x32, y32); }, [&] { return run(p, x, y); }, 1e-4);
  if (!failure.empty()) return failure;
  auto loss = [](const Program& q, const Tensor& b) {
    return [&q, b](const Tensor& a) { return run(q, a, b).sum(); };
  };
  return agree(
      "grad in float32 vs float64", [&] { return grad(loss(p32, y32))(x32); },
      [&] { return grad(loss(p, y))(x); }, 1e-3);
}

// vmap of the program and of its grad on two threads at once, each run bitwise
// equal to the run on this thread (the CPU kernels promise it for a fixed input).
std::string two_threads_vs_one(const Program& p, std::mt19937_64& rng) {
  const Inputs batch = random_inputs(p, rng, true);
  const Tensor &xs = batch.x, &ys = batch.y;
  auto work = [&](std::string& error) {
    return attempt([&] {
      auto f = [&](const Tensor& a, const Tensor& b) { return run(p, a, b); };
      auto loss = [&](const Tensor& a, const Tensor& b) { return f(a, b).sum(); };
      if (!floating(p)) return vmap(f)(xs, ys);
      return cat({vmap(f)(xs, ys).reshape({-1}), vmap(grad(loss))(xs, ys).reshape({-1})});
    }, error);
  };
  std::string error;
  const std::optional<Tensor> one = work(error);
  std::optional<Tensor> results[2];
  std::string errors[2];
  {
    std::jthread a([&] { results[0] = work(errors[0]); });
    std::jthread b([&] { results[1] = work(errors[1]); });
  }
  for (int i = 0; i < 2; ++i) {
    if (one.has_value() != results[i].has_value()) {
      return std::string("2 threads vs 1: one raised, the other ran: ") + error + errors[i];
    }
    if (one) {
      std::string failure = compare("2 threads vs 1", *results[i], *one, 0);
      if (!failure.empty()) return failure;
    }
  }
  return {};
}

// TBB limited to `threads` workers while it lives; then the default again.
class ThreadLimit {
 public:
  explicit ThreadLimit(int threads) { cpu::set_num_threads(threads); }
  ~ThreadLimit() { cpu::set_num_threads(0); }
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;
};

// The program on inputs big enough for the CPU kernels to split them across TBB's
// workers (a leading dim that takes them past 2 grains), eagerly (x carries that
// dim in front of y's rank, y broadcasts) and under vmap over it, with TBB limited
// to 1 thread and to 2. Bitwise for every program: an elementwise kernel computes
// each element by one code path wherever the chunks end (Note [One code path per
// element]), and a reduction cuts its groups into blocks by shape alone, never by
// thread count, and combines them in order (kernels/cpu/reduction_loops.h).
std::string tbb_one_vs_two_threads(const Program& p, std::mt19937_64& rng) {
  const int64_t rows = 2 * cpu::kElementwiseGrain / std::max<int64_t>(1, num_elements(p.shape)) + 1;
  std::vector<int64_t> x_shape = p.shape, y_shape = p.y_shape;
  x_shape.insert(x_shape.begin(), rows);
  y_shape.insert(y_shape.begin(), rows);
  const Tensor xs = random_tensor(rng, x_shape), ys = random_tensor(rng, y_shape);
  const Tensor y = random_tensor(rng, p.y_shape);
  std::vector<int64_t> eager_shape = p.shape;
  if (p.y_shape.size() > p.shape.size()) {
    eager_shape.insert(eager_shape.begin(), p.y_shape.size() - p.shape.size(), 1);
  }
  eager_shape.insert(eager_shape.begin(), rows);
  const Tensor x = random_tensor(rng, eager_shape);
  auto on = [](int threads, auto&& f) {
    return [threads, &f] {
      const ThreadLimit limit(threads);
      return f();
    };
  };
  auto batched = [&] { return vmap([&](const Tensor& a, const Tensor& b) { return run(p, a, b); })(xs, ys); };
  std::string failure = agree("1 vs 2 TBB threads (vmap)", on(2, batched), on(1, batched), 0);
  // Integer sums over the whole leading dim could overflow int64: eager runs
  // floating programs only; and none with a scan or map, which would step along
  // that dim 65K times.
  if (!failure.empty() || !floating(p) || steps_along_a_dim(p)) return failure;
  auto eager = [&] { return run(p, x, y); };
  return agree("1 vs 2 TBB threads (eager)", on(2, eager), on(1, eager), 0);
}

}  // namespace

const std::vector<Check>& stack_checks() {
  static const std::vector<Check> checks = {
      {"functionalize (both modes) vs eager, and under grad", &functionalize_vs_eager},
      {"trace + replay on new inputs vs eager (plain, vmap, grad)", &trace_replay_vs_eager},
      {"vmap(cond) per-sample predicate, and vmap(grad(cond)), vs loop", &cond_vs_loop},
      {"custom_function (vjp rule) under grad, jvp, vmap vs plain", &custom_function_vs_plain},
      {"float32 vs float64 (values, grad)", &float32_vs_float64},
      {"vmap and vmap(grad) on 2 threads vs 1 (bitwise)", &two_threads_vs_one},
      {"eager and vmap with TBB on 1 thread vs 2", &tbb_one_vs_two_threads},
  };
  return checks;
}

PlantedBugs& planted_bugs() {
  static PlantedBugs bugs;
  return bugs;
}

}  // namespace strata::fuzz
