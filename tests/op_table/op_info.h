#pragma once

// The op table (the idea of PyTorch's OpInfo, see ../shared/TESTING.md): one entry
// per operator with sample inputs, a naive reference, capability flags, tolerances
// and expected failures. Every check iterates the table, so adding an op is adding
// an entry (in tests/op_table/entries_<family>.cpp) plus its rules.

#include <strata/strata.h>

#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::testing {

// One call of an op: the tensor arguments (what gradients and vmap act on) and
// the other arguments as IValues (dims, scalars, flags).
struct Sample {
  std::string description;  // "broadcast [3, 1] x [1, 4]", "transposed", ...
  std::vector<Tensor> inputs;
  Stack args;
};

// Calls the op (or its reference) on a sample's inputs and args; returns every
// tensor output.
using OpFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const Stack&)>;

enum class Check { Forward, Grad, GradGrad, Jvp, JvpGrad, Vmap, VmapGrad, Jacobian, Functionalize };
const char* to_string(Check check);

struct Tolerance {
  double atol;
  double rtol;
};

struct ExpectedFailure {
  Check check;
  std::optional<ScalarType> dtype;  // none: every dtype
  std::string reason;
};

struct OpInfo {
  std::string name;  // "sin", "add", "nn::conv2d"
  std::vector<ScalarType> dtypes;
  std::function<std::vector<Sample>(ScalarType)> samples;
  OpFunction op;
  OpFunction reference;  // plain loops over values, independent of the kernels
  // Capabilities, for the checks of later issues.
  bool differentiable = true;
  bool forward_ad = true;
  bool twice_differentiable = true;
  bool batching_rule = true;
  // Takes no tensor (zeros, arange, ...): it makes CPU tensors unless given a device.
  bool factory = false;
  std::string inplace_variant;  // e.g. "add_", empty if none
  // The output's size depends on input values (a Bool mask's count): fake-mode
  // tracing must raise, saying so, instead of giving shapes.
  bool data_dependent_size = false;
  std::map<std::pair<Check, ScalarType>, Tolerance> tolerances;
  std::vector<ExpectedFailure> expected_failures;

  // Default: Float32 atol = rtol = 1e-5, Float64 1e-10, exact for integers and Bool.
  Tolerance tolerance(Check check, ScalarType dtype) const;
  const ExpectedFailure* expected_failure(Check check, ScalarType dtype) const;
};

// An entry with default flags and tolerances.
OpInfo make_op_info(std::string name, std::vector<ScalarType> dtypes,
                    std::function<std::vector<Sample>(ScalarType)> samples, OpFunction op,
                    OpFunction reference);
// The same for Float32 and Float64.
OpInfo floating_op_info(std::string name, std::function<std::vector<Sample>(ScalarType)> samples,
                        OpFunction op, OpFunction reference);

// The view ops' entries (entries_shape.cpp), which the entries of their _copy
// forms reuse (entries_shape_copies.cpp).
std::vector<OpInfo> view_op_entries();

// Registers the entries of one family at static-initialization time:
//   STRATA_OP_INFOS(unary) { return {OpInfo{...}, ...}; }
const std::vector<OpInfo>& op_infos();
struct OpInfoRegistrar {
  explicit OpInfoRegistrar(std::vector<OpInfo> (*make)());
};
#define STRATA_OP_INFOS(family)                                                      \
  static std::vector<::strata::testing::OpInfo> strata_op_infos_##family();          \
  static const ::strata::testing::OpInfoRegistrar strata_op_info_registrar_##family( \
      &strata_op_infos_##family);                                                    \
  static std::vector<::strata::testing::OpInfo> strata_op_infos_##family()

// Registers the test `suite.<entry name>`: `run` returns the check's first
// failure, if any. An expected failure of the entry for `check` must still
// fail, so a check that starts passing makes its test fail until the entry is fixed.
using CheckRunner = std::optional<std::string> (*)(const OpInfo& info, Check check);
// The op's name as a GoogleTest test name that a --gtest_filter of exactly that
// name selects: the filter syntax reads ':' as a separator, '-' as the start of
// negative patterns and '*', '?' as wildcards, and ctest runs each test through such
// a filter, so "nn::conv2d" would select nothing and pass vacuously. "::" becomes
// "_", '-' "minus", and ':', '*', '?' and spaces "_".
std::string test_name(const std::string& name);

void register_check(const char* suite, const OpInfo& info, Check check, CheckRunner run);

// Called by the op-table test binary's main() once every entry is registered.
void register_forward_tests();
void register_grad_tests();
void register_vmap_tests();
void register_jacobian_tests();
// Shape functions and FLOP formulas of the ops each entry reaches (facets_test.cpp).
void register_facet_tests();
// Trace, replay and text round trip of every sample (trace_test.cpp).
void register_trace_tests();
// functionalize(f) against f, and the graph it makes (functionalize_test.cpp).
void register_functionalize_tests();
// op x {forward, grad, jvp, vmap, vmap∘grad, jacrev=jacfwd}: what the table checks for each op.
void print_coverage_matrix(std::ostream& out);

// The dtype the derivative checks run in: Float64 where the entry has it, else
// its first floating dtype.
ScalarType derivative_check_dtype(const OpInfo& info);
// Whether every value of the tensors is finite (where an op is not, x / 0 or
// log 0, it has no derivative to check).
bool all_finite(const std::vector<Tensor>& tensors);

const std::vector<ScalarType>& floating_dtypes();  // Float32, Float64
const std::vector<ScalarType>& numeric_dtypes();   // Int64, Float32, Float64
const std::vector<ScalarType>& all_dtypes();       // Bool, Int64, Float32, Float64

}  // namespace strata::testing
