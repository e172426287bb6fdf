// The rows' facets against the table (Note [One op, one place], dispatcher/op_def.h):
//  - OpShape.<entry>: every op a sample reaches (its composite parts too) has a
//    shape function that predicts the sizes and dtypes of its outputs from the
//    arguments alone, and a FLOP count that is not negative; a view with a
//    view_layout facet predicts its output's sizes, strides and offset from
//    self's, or raises the op's own error;
//  - OpDefCompleteness: every operator registered in the strata namespace has a
//    row, and every row has each facet or says why not, and an op-table entry.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "dispatcher/dispatch_mode.h"
#include "dispatcher/dispatcher.h"
#include "dispatcher/op_def.h"
#include "ops/op_facets.h"
#include "tests/op_table/op_info.h"

namespace strata::testing {
namespace {

std::string meta_string(const MetaList& metas) {
  std::ostringstream out;
  for (const TensorMeta& m : metas) out << shape_string(m.sizes) << ' ' << m.dtype << "; ";
  return out.str();
}

// What a view_layout facet says of a call (Note [View layouts]): the view's
// layout, or the error it raises.
struct LayoutPrediction {
  std::optional<ViewLayout> layout;
  std::string error;
};

// The prediction for a call of `def`'s op on `args` (self and ints), if the row
// has the facet.
std::optional<LayoutPrediction> predict_layout(const OpDef* def, const Stack& args) {
  if (def == nullptr || def->view_layout == nullptr || !args[0].is_tensor()) return std::nullopt;
  const Tensor& self = args[0].to_tensor();
  ViewIntArgs ints;
  if (args.size() - 1 > ints.values.size()) {
    return LayoutPrediction{std::nullopt, "more int arguments than ViewIntArgs holds"};
  }
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i].is_none()) {
      ints.add(std::optional<int64_t>());
    } else {
      ints.add(args[i].to_int());
    }
  }
  LayoutPrediction p;
  ViewLayout layout = ViewLayout::of(self);
  try {
    def->view_layout(layout, ints);
    p.layout = std::move(layout);
  } catch (const Error& e) {
    p.error = e.what();
  }
  return p;
}

std::string layout_string(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  std::ostringstream out;
  out << "sizes " << shape_string(sizes) << " strides " << shape_string(strides) << " offset "
      << offset;
  return out.str();
}

// Checks each call's outputs against its row's shape function, FLOP formula and
// view layout, and records the outermost op of each call of the sample.
class FacetCheckMode : public DispatchMode {
 public:
  void dispatch(const OperatorHandle& op, Stack& stack) override {
    const size_t n = op.schema().arguments().size();
    const std::string name = op.operator_name().to_string();
    if (depth_ == 0) outermost_.insert(name);
    const OpDef* def = find_op_def(op);
    MetaList predicted;
    const bool check = def != nullptr && def->shape.has_value();
    if (check) {
      const Stack args(stack.end() - static_cast<std::ptrdiff_t>(n), stack.end());
      predicted = def->shape.value(args);
      if (def->flops.has_value()) {
        const int64_t flops = def->flops.value(args, predicted);
        if (flops < 0) failures_ << name << ": " << flops << " FLOPs\n";
      }
    }
    const std::optional<LayoutPrediction> layout =
        predict_layout(def, Stack(stack.end() - static_cast<std::ptrdiff_t>(n), stack.end()));
    ++depth_;
    try {
      call_next(op, stack);
    } catch (const Error& e) {
      --depth_;
      if (layout && layout->error != e.what()) {
        failures_ << name << ": the op raised \"" << e.what() << "\", its view_layout "
                  << (layout->layout ? "gave a layout" : "raised \"" + layout->error + "\"")
                  << "\n";
      }
      throw;
    } catch (...) {
      --depth_;
      throw;
    }
    --depth_;
    if (layout) check_layout(name, *layout, stack.back().to_tensor());
    if (!check) return;
    MetaList actual;
    const size_t outputs = op.schema().returns().size();
    for (size_t i = stack.size() - outputs; i < stack.size(); ++i) {
      if (stack[i].is_tensor()) {
        const Tensor& t = stack[i].to_tensor();
        actual.push_back({DimVector(t.sizes()), t.dtype()});
      } else if (stack[i].is_tensor_list()) {
        for (const Tensor& t : stack[i].to_tensor_list()) actual.push_back({DimVector(t.sizes()), t.dtype()});
      }
    }
    if (actual != predicted) {
      failures_ << name << ": shape function says " << meta_string(predicted) << "the op gave "
                << meta_string(actual) << "\n";
    }
  }

  std::string failures() const { return failures_.str(); }
  const std::set<std::string>& outermost() const { return outermost_; }

 private:
  void check_layout(const std::string& name, const LayoutPrediction& predicted, const Tensor& out) {
    const std::string got = layout_string(out.sizes(), out.strides(), out.storage_offset());
    if (!predicted.layout) {
      failures_ << name << ": view_layout raised \"" << predicted.error << "\", the op gave "
                << got << "\n";
      return;
    }
    const ViewLayout& v = *predicted.layout;
    const std::string want = layout_string(v.sizes, v.strides, v.offset);
    if (got != want) {
      failures_ << name << ": view_layout says " << want << ", the op gave " << got << "\n";
    }
  }

  int depth_ = 0;
  std::set<std::string> outermost_;
  std::ostringstream failures_;
};

// Runs every sample of `info` in every dtype under a FacetCheckMode.
std::shared_ptr<FacetCheckMode> run_entry(const OpInfo& info) {
  auto mode = std::make_shared<FacetCheckMode>();
  const DispatchModeGuard guard(mode);
  for (ScalarType dtype : info.dtypes) {
    for (const Sample& sample : info.samples(dtype)) info.op(sample.inputs, sample.args);
  }
  return mode;
}

class ShapeTest : public ::testing::Test {
 public:
  explicit ShapeTest(const OpInfo& info) : info_(info) {}
  void TestBody() override {
    const std::string failures = run_entry(info_)->failures();
    EXPECT_TRUE(failures.empty()) << failures;
  }

 private:
  const OpInfo& info_;
};

// Registered ops with no op-table entry of their own, and why.
const std::map<std::string, std::string>& ops_without_entries() {
  // Random values have no loop reference (and no finite differences): the random ops
  // are checked against the Philox stream and for their statistics in
  // tests/ops/random_test.cpp, dropout in tests/ops/nn_errors_test.cpp.
  static const std::string kRandom = "random values: tests/ops/random_test.cpp";
  static const std::string kDropout = "random mask: tests/ops/nn_errors_test.cpp (NnDropout)";
  static const std::map<std::string, std::string> reasons = {
      {"strata::rand", kRandom},
      {"strata::randn", kRandom},
      {"strata::randint.low", kRandom},
      {"strata::bernoulli", kRandom},
      {"strata::normal.Tensor_Tensor", kRandom},
      {"strata::dropout", kDropout},
      {"strata::dropout_mask", kDropout},
      // Only a second device gives it values to move; on the CPU it is the identity.
      {"strata::to.device", "moves values between devices: tests/cuda/runtime_test.cpp"},
  };
  return reasons;
}

std::string base_name(const std::string& name) { return name.substr(0, name.find('.')); }

// The facets a row neither has nor says why it lacks, one line each; none for a
// composite row, whose facets are its decomposition's.
std::string missing_facets(const std::string& name, const OpDef& def) {
  if (def.is_composite()) return "";
  std::ostringstream missing;
  if (!def.derivative.accounted_for()) missing << name << ": no derivative\n";
  if (!def.batching.accounted_for()) missing << name << ": no batching rule\n";
  if (!def.shape.accounted_for()) missing << name << ": no shape function\n";
  if (!def.flops.accounted_for()) missing << name << ": no FLOP formula\n";
  return missing.str();
}

TEST(OpDefCompleteness, EveryRegisteredOpHasARowWithEveryFacet) {
  std::map<std::string, const OpDef*> rows;
  for (const RegisteredOpDef& row : registered_op_defs()) rows[row.name] = row.def;

  std::set<std::string> covered;  // ops (with overload) some entry calls first
  std::set<std::string> covered_bases;  // in-place variants, by name
  for (const OpInfo& info : op_infos()) {
    const auto mode = run_entry(info);
    covered.insert(mode->outermost().begin(), mode->outermost().end());
    if (!info.inplace_variant.empty()) covered_bases.insert("strata::" + info.inplace_variant);
  }

  std::ostringstream missing;
  for (const OperatorName& name : Dispatcher::singleton().registered_operators()) {
    const std::string full = name.to_string();
    if (!full.starts_with("strata::")) continue;
    auto it = rows.find(full);
    if (it == rows.end()) {
      missing << full << ": no OpDef row\n";
      continue;
    }
    const OpDef& def = *it->second;
    const bool has_entry = covered.count(full) || covered_bases.count(base_name(full)) ||
                           ops_without_entries().count(full);
    if (!has_entry) missing << full << ": no op-table entry\n";
    missing << missing_facets(full, def);
  }
  EXPECT_TRUE(missing.str().empty()) << missing.str();
}

Tensor identity(const Tensor& t) { return t; }

// The check names each facet a row lacks, accepts Absent with a reason, and asks
// nothing of a composite row.
TEST(OpDefCompleteness, NamesTheFacetsARowLacks) {
  const OpDef bare{.schema = "probe(Tensor self) -> Tensor", .cpu = &identity};
  EXPECT_EQ(missing_facets("probe", bare),
            "probe: no derivative\nprobe: no batching rule\nprobe: no shape function\n"
            "probe: no FLOP formula\n");
  const OpDef excused{.schema = "probe(Tensor self) -> Tensor",
                      .cpu = &identity,
                      .derivative = Absent{"why"},
                      .batching = Absent{"why"},
                      .shape = &shape::same_as_self,
                      .flops = &flops::zero};
  EXPECT_EQ(missing_facets("probe", excused), "");
  const OpDef composite{.schema = "probe(Tensor self) -> Tensor", .decomposition = &identity};
  EXPECT_EQ(missing_facets("probe", composite), "");
}

TEST(OpDefCompleteness, ExceptionsNameRegisteredOps) {
  std::set<std::string> registered;
  for (const RegisteredOpDef& row : registered_op_defs()) registered.insert(row.name);
  for (const auto& [name, reason] : ops_without_entries()) {
    EXPECT_TRUE(registered.count(name)) << name << " is listed as an exception but has no row";
    EXPECT_FALSE(reason.empty()) << name;
  }
}

}  // namespace

void register_facet_tests() {
  for (const OpInfo& info : op_infos()) {
    ::testing::RegisterTest("OpShape", test_name(info.name).c_str(), nullptr, nullptr, __FILE__,
                            __LINE__, [&info]() -> ::testing::Test* { return new ShapeTest(info); });
  }
}

}  // namespace strata::testing
