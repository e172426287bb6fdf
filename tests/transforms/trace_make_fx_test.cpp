// trace against PyTorch 1.13's make_fx: the op sequence of small functions (sin,
// mul, add, sum, an MLP loss, vmap(grad(loss))) matches the reference graphs in
// make_fx_refs/, written by scripts/make_fx_refs.py from the same functions on
// inputs of the same shapes.
//
// Names compare without their namespace and a ".default" overload
// (aten::sin.default and strata::sin are both "sin"). Where the two libraries
// compute a step with different ops, the step's mapping is written out below with
// the reason; every op on each side belongs to exactly one step, in order, and each
// step's result (its last op's dtype and shape) must agree, so a change on either
// side fails the test.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace strata {
namespace {

// One op call: its name as compared, and its result as "Float32[4, 32]".
struct Call {
  std::string op;
  std::string result;
};

std::string short_name(std::string name) {
  const size_t colons = name.find("::");
  if (colons != std::string::npos) name = name.substr(colons + 2);
  const std::string plain = ".default";
  if (name.size() > plain.size() && name.ends_with(plain)) name.resize(name.size() - plain.size());
  return name;
}

std::vector<Call> reference(const std::string& name) {
  const std::string path = std::string(STRATA_MAKE_FX_REFS) + "/" + name + ".txt";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<Call> calls;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    calls.push_back({short_name(line.substr(0, space)), line.substr(space + 1)});
  }
  return calls;
}

std::vector<Call> calls_of(const Graph& g) {
  std::vector<Call> calls;
  for (const GraphNode& node : g.nodes()) {
    std::string result;
    for (const NodeResult& r : node.results) {
      for (int64_t id : r.values) {
        result += (result.empty() ? "" : ", ") + to_string(g.values()[static_cast<size_t>(id)].type);
      }
    }
    calls.push_back({short_name(node.op.operator_name().to_string()), result});
  }
  return calls;
}

// A step of the computation: the ops make_fx records for it and the ops Strata
// records, space separated, and why they differ when they do.
struct Step {
  std::string torch;
  std::string strata;
  std::string why;
};
Step same(const std::string& op) { return {op, op, ""}; }

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Walks both sequences step by step: each step's ops must come next on its side,
// and the step's last results must agree.
void expect_steps(const std::vector<Call>& torch, const std::vector<Call>& strata,
                  const std::vector<Step>& steps, const Graph& g) {
  size_t t = 0, s = 0;
  for (const Step& step : steps) {
    const std::string label = "step [" + step.torch + "] <-> [" + step.strata + "]";
    const auto take = [&](const std::vector<Call>& side, size_t& at, const std::string& ops,
                          const char* who) {
      for (const std::string& op : words(ops)) {
        EXPECT_LT(at, side.size()) << who << " ends before " << label;
        if (at >= side.size()) return std::string();
        EXPECT_EQ(side[at].op, op) << who << " op " << at << " in " << label << "\n" << g.to_string();
        ++at;
      }
      return side[at - 1].result;
    };
    const std::string torch_result = take(torch, t, step.torch, "make_fx");
    const std::string strata_result = take(strata, s, step.strata, "trace");
    EXPECT_EQ(torch_result, strata_result) << label << (step.why.empty() ? "" : ": ") << step.why;
  }
  EXPECT_EQ(t, torch.size()) << "make_fx ops left after the last step";
  EXPECT_EQ(s, strata.size()) << "trace ops left after the last step\n" << g.to_string();
}

void expect_matches_make_fx(const std::string& name, const Graph& g, const std::vector<Step>& steps) {
  SCOPED_TRACE(name);
  expect_steps(reference(name), calls_of(g), steps, g);
}

Tensor mlp_loss(const Tensor& w1, const Tensor& w2, const Tensor& x, const Tensor& y) {
  const Tensor h = nn::linear(x, w1).tanh();
  return nn::mse_loss(nn::linear(h, w2), y);
}

struct Inputs {
  Generator gen{5};
  Tensor a = randn({3, 4}, gen), b = randn({3, 4}, gen);
  Tensor w1 = randn({32, 16}, gen), w2 = randn({8, 32}, gen);
  Tensor x = randn({4, 16}, gen), y = randn({4, 8}, gen);
};

const char* const kLinearWhole =
    "PyTorch's linear is CompositeImplicitAutograd: make_fx sees its parts, t and mm; Strata "
    "records its linear op whole unless the decomposition table has it";

TEST(TraceMakeFx, ElementwiseAndSum) {
  const Inputs in;
  expect_matches_make_fx("sin", trace([](const Tensor& a) { return a.sin(); })(in.a), {same("sin")});
  expect_matches_make_fx("mul", trace([](const Tensor& a, const Tensor& b) { return a * b; })(in.a, in.b),
                         {same("mul.Tensor")});
  expect_matches_make_fx("add", trace([](const Tensor& a, const Tensor& b) { return a + b; })(in.a, in.b),
                         {same("add.Tensor")});
  expect_matches_make_fx("sum", trace([](const Tensor& a) { return a.sum(); })(in.a), {same("sum")});
}

TEST(TraceMakeFx, MlpLoss) {
  const Inputs in;
  const Step linear{"t mm", "linear", kLinearWhole};
  expect_matches_make_fx("mlp_loss", trace(mlp_loss)(in.w1, in.w2, in.x, in.y),
                         {linear, same("tanh"), linear, same("mse_loss")});
}

TEST(TraceMakeFx, MlpLossWithCoreDecompositions) {
  const Inputs in;
  const Step t{"t", "transpose.int", "PyTorch's t is transpose(0, 1) of a matrix"};
  const Step mse{"mse_loss", "sub.Tensor mul.Tensor mean.dim",
                 "core_decompositions() decomposes mse_loss; make_fx keeps it (it has a kernel)"};
  const Graph g = trace(mlp_loss, {.decompositions = core_decompositions()})(in.w1, in.w2, in.x, in.y);
  expect_matches_make_fx("mlp_loss", g, {t, same("mm"), same("tanh"), t, same("mm"), mse});
}

TEST(TraceMakeFx, VmapGradOfMlpLoss) {
  const Inputs in;
  const auto per_sample = vmap(grad(mlp_loss), {.in_dims = {none, none, 0, 0}});
  const Step batched_linear{
      "t unsqueeze _reshape_alias mm _unsafe_view squeeze_.dim", "linear",
      std::string(kLinearWhole) + "; per sample it is matmul of a 1-D x (unsqueeze, mm, squeeze_), "
                                  "whose vmap rule folds the batch into mm's rows"};
  const std::vector<Step> steps = {
      batched_linear,
      same("tanh"),
      batched_linear,
      same("mse_loss"),  // both vmap rules: reduction none, then a mean over each sample
      same("mean.dim"),
      same("ones_like"),
      same("sub.Tensor"),
      same("mul.Tensor"),
      {"select.int view", "unsqueeze",
       "mse_loss's backward broadcasts each sample's 0-d grad_output: PyTorch's rule views it as "
       "[B, 1] (its select is left dead in the graph), Strata's unsqueezes it"},
      same("mul.Tensor"),
      {"unsqueeze t _reshape_alias mm _unsafe_view squeeze.dim", "view view mm view view",
       "linear's input gradient grad_out . w2: PyTorch's matmul backward takes t(t(w2)) and "
       "unsqueezes the 1-D row; Strata's linear backward uses w2, its batched mm folding the batch "
       "with views"},
      {"tanh_backward", "mul.Tensor sub.Tensor mul.Tensor",
       "PyTorch has an op for tanh's derivative; Strata's derivative writes grad (1 - y^2)"},
      {"unsqueeze transpose.int expand _reshape_alias expand _reshape_alias bmm _unsafe_view "
       "transpose.int transpose.int",
       "view transpose.int view mul.Tensor",
       "the weight gradient is an outer product per sample: PyTorch's is a bmm of a [32, 1] column "
       "by a [1, 16] row, transposed back twice (mm's backward, linear's t); Strata's a broadcasting "
       "mul of the same column and row"},
  };
  expect_matches_make_fx("vmap_grad_mlp_loss", trace(per_sample)(in.w1, in.w2, in.x, in.y), steps);
}

}  // namespace
}  // namespace strata
