// OpFunctionalize.<entry>: every sample of every entry, under functionalize(f)
// with Remove::Mutations and with Remove::MutationsAndViews:
// - the outputs equal the eager call's, and the inputs are left as they were;
// - with MutationsAndViews no output shares memory with an input;
// - the graph trace(functionalize(f)) records has no in-place op, and with
//   MutationsAndViews no view op (each is its _copy form: select_copy, ...), so
//   the graph computes no value that aliases another;
// - when the first output has the first input's shape and dtype and aliases
//   no input, and the first input is not expanded, g(x) = f(x) then x[0].copy_(f's first output) is
//   functionalized too: the input's final values and strides must be eager's, and the graph's only
//   in-place op is the one write-back copy_ into that input;
// - for a view entry, a write through the view (check_write_through_view).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "tests/op_table/elementwise_entries.h"
#include "tests/op_table/op_info.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using Inputs = std::vector<Tensor>;

const char* to_string(Remove remove) {
  return remove == Remove::Mutations ? "Mutations" : "MutationsAndViews";
}

bool close(const Tensor& got, const Tensor& want, Tolerance tol, std::ostream& out,
           const std::string& what) {
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype()) {
    out << what << " is " << got.dtype() << shape_string(got.sizes()) << ", eager " << want.dtype()
        << shape_string(want.sizes()) << "\n";
    return false;
  }
  const std::vector<double> a = got.to_vector<double>();
  const std::vector<double> e = want.to_vector<double>();
  for (size_t k = 0; k < a.size(); ++k) {
    const bool both_nan = a[k] != a[k] && e[k] != e[k];
    if (a[k] != e[k] && !both_nan &&
        !(std::abs(a[k] - e[k]) <= tol.atol + tol.rtol * std::abs(e[k]))) {
      out << what << " element " << k << " is " << a[k] << ", eager " << e[k] << "\n";
      return false;
    }
  }
  return true;
}

bool aliases_an_input(const Tensor& t, const Inputs& inputs) {
  if (!t.defined() || !t.impl()->has_storage()) return false;
  for (const Tensor& in : inputs) {
    if (in.impl()->has_storage() &&
        in.impl()->underlying_storage() == t.impl()->underlying_storage()) {
      return true;
    }
  }
  return false;
}

// An expanded tensor: eager code cannot write into it (functionalize refuses too,
// Functionalize.RefusesAWriteIntoAnExpandedInput).
bool overlaps(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return true;
  }
  return false;
}

// The graph's complaints: in-place nodes beyond `allowed_writes`, and (with
// MutationsAndViews) any view op: each view is its _copy form there.
std::string graph_problems(const Graph& g, Remove remove, size_t allowed_writes) {
  std::ostringstream out;
  size_t writes = 0;
  for (const GraphNode& node : g.nodes()) {
    const OperatorEntry& entry = node.op.entry();
    const std::string name = node.op.operator_name().to_string();
    if (entry.returned_argument_index() && ++writes > allowed_writes) {
      out << "in-place op " << name << " in the graph\n";
    }
    if (remove == Remove::MutationsAndViews && entry.returns_view()) {
      out << "view op " << name << " in the graph\n";
    }
  }
  return out.str();
}

// For a view entry (its first output aliases its first input): h(x) writes
// through the view of a copy y of x and returns y and the view. Eager and
// functionalized h give the same values or both raise (a write through an
// expanded view); the graph has no in-place op (the write is a scatter).
void check_write_through_view(const OpInfo& info, const Sample& sample, Remove remove,
                              const Tolerance& tol, const std::string& where, std::ostream& out) {
  const auto h = [&](const Inputs& in) {
    Inputs args = in;
    args[0] = in[0].clone();
    const Tensor v = info.op(args, sample.args)[0];
    v.copy_(v + 1);
    if (is_floating_point(v.dtype())) v.mul_(v);
    return Inputs{args[0], v};
  };
  std::optional<Inputs> eager;
  try {
    eager = h(sample.inputs);
  } catch (const Error&) {
  }
  std::optional<Inputs> got;
  std::string error;
  try {
    got = functionalize(h, remove)(sample.inputs);
  } catch (const Error& e) {
    error = e.what();
  }
  const std::string w = where + "write through the view: ";
  if (!eager || !got) {
    if (eager.has_value() != got.has_value()) {
      out << w << (eager ? "functionalize raised " + error : "eager raised, functionalize did not")
          << "\n";
    }
    return;
  }
  for (size_t i = 0; i < 2; ++i)
    close((*got)[i], (*eager)[i], tol, out, w + "output " + std::to_string(i));
  const std::string graph =
      graph_problems(trace(functionalize(h, remove))(sample.inputs), remove, 0);
  if (!graph.empty()) out << w << "\n" << graph;
}

// f under functionalize against eager on one sample; failures go to `out`.
void check_sample(const OpInfo& info, ScalarType dtype, const Sample& sample, Remove remove,
                  std::ostream& out) {
  const std::string where =
      std::string(to_string(dtype)) + " " + sample.description + " (" + to_string(remove) + "): ";
  const Tolerance tol = info.tolerance(Check::Forward, dtype);
  const auto f = [&](const Inputs& in) { return info.op(in, sample.args); };
  const Inputs eager = f(sample.inputs);
  Inputs before;
  for (const Tensor& in : sample.inputs) before.push_back(in.clone());

  const Inputs got = functionalize(f, remove)(sample.inputs);
  if (got.size() != eager.size()) {
    out << where << got.size() << " outputs, eager gave " << eager.size() << "\n";
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    close(got[i], eager[i], tol, out, where + "output " + std::to_string(i));
    if (remove == Remove::MutationsAndViews && aliases_an_input(got[i], sample.inputs)) {
      out << where << "output " << i << " shares memory with an input\n";
    }
  }
  for (size_t i = 0; i < before.size(); ++i) {
    close(sample.inputs[i], before[i], {0, 0}, out, where + "input " + std::to_string(i));
  }
  const std::string graph =
      graph_problems(trace(functionalize(f, remove))(sample.inputs), remove, 0);
  if (!graph.empty()) out << where << "\n" << graph;
  if (!eager.empty() && !sample.inputs.empty() && eager[0].defined() &&
      aliases_an_input(eager[0], {sample.inputs[0]})) {
    check_write_through_view(info, sample, remove, tol, where, out);
  }

  // The write-back of a written input.
  if (eager.empty() || !eager[0].defined() || sample.inputs.empty() ||
      eager[0].sizes() != sample.inputs[0].sizes() ||
      eager[0].dtype() != sample.inputs[0].dtype() || aliases_an_input(eager[0], sample.inputs) ||
      overlaps(sample.inputs[0])) {
    return;
  }
  const auto g = [&](const Inputs& in) {
    Inputs outs = f(in);
    in[0].copy_(outs[0]);
    return outs;
  };
  auto with_own_first = [&] {
    Inputs in = sample.inputs;
    in[0] = copy_keeping_layout(in[0]);
    return in;
  };
  const Inputs eager_in = with_own_first();
  const Inputs eager_out = g(eager_in);
  const Inputs func_in = with_own_first();
  const Inputs func_out = functionalize(g, remove)(func_in);
  const std::string w = where + "written input: ";
  for (size_t i = 0; i < func_out.size() && i < eager_out.size(); ++i) {
    close(func_out[i], eager_out[i], tol, out, w + "output " + std::to_string(i));
  }
  close(func_in[0], eager_in[0], tol, out, w + "final value");
  if (func_in[0].strides() != eager_in[0].strides()) {
    out << w << "strides " << shape_string(func_in[0].strides()) << ", eager "
        << shape_string(eager_in[0].strides()) << "\n";
  }
  const std::string written_graph =
      graph_problems(trace(functionalize(g, remove))(with_own_first()), remove, 1);
  if (!written_graph.empty()) out << w << "\n" << written_graph;
}

std::optional<std::string> check_functionalize(const OpInfo& info, Check) {
  std::ostringstream out;
  for (ScalarType dtype : info.dtypes) {
    for (const Sample& sample : info.samples(dtype)) {
      for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
        try {
          check_sample(info, dtype, sample, remove, out);
        } catch (const Error& e) {
          out << to_string(dtype) << " " << sample.description << " (" << to_string(remove)
              << "): " << e.what() << "\n";
        }
      }
    }
  }
  if (out.str().empty()) return std::nullopt;
  return out.str();
}

// The graph check is not vacuous: eager code's graph has its in-place op and
// its views; functionalize's has neither, and with views removed its views are
// their _copy forms.
TEST(OpFunctionalizeCheck, FlagsInPlaceOpsAndViewReads) {
  const auto f = [](const Tensor& x) {
    Tensor y = x.clone();
    y.select(0, 1).add_(x.select(0, 0));
    return y * 2.0;
  };
  const Tensor x = make_tensor({2, 3}, kFloat64);
  const std::string eager = graph_problems(trace(f)(x), Remove::MutationsAndViews, 0);
  EXPECT_NE(eager.find("in-place op strata::add_.Tensor"), std::string::npos) << eager;
  EXPECT_NE(eager.find("view op strata::select.int"), std::string::npos) << eager;
  for (Remove remove : {Remove::Mutations, Remove::MutationsAndViews}) {
    const Graph g = trace(functionalize(f, remove))(x);
    EXPECT_EQ(graph_problems(g, remove, 0), "") << g.to_string();
    const std::vector<std::string> ops = g.op_names();
    EXPECT_NE(std::find(ops.begin(), ops.end(), "strata::select_scatter"), ops.end())
        << g.to_string();
    const bool copies = std::find(ops.begin(), ops.end(), "strata::select_copy.int") != ops.end();
    EXPECT_EQ(copies, remove == Remove::MutationsAndViews) << g.to_string();
  }
}

}  // namespace

void register_functionalize_tests() {
  for (const OpInfo& info : op_infos()) {
    register_check("OpFunctionalize", info, Check::Functionalize, &check_functionalize);
  }
}

}  // namespace strata::testing
