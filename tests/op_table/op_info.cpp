#include "tests/op_table/op_info.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

namespace strata::testing {

const char* to_string(Check check) {
  switch (check) {
    case Check::Forward: return "forward";
    case Check::Grad: return "grad";
    case Check::GradGrad: return "grad∘grad";
    case Check::Jvp: return "jvp";
    case Check::JvpGrad: return "jvp∘grad";
    case Check::Vmap: return "vmap";
    case Check::VmapGrad: return "vmap∘grad";
    case Check::Jacobian: return "jacrev=jacfwd";
    case Check::Functionalize: return "functionalize";
  }
  return "?";
}

Tolerance OpInfo::tolerance(Check check, ScalarType dtype) const {
  auto it = tolerances.find({check, dtype});
  if (it != tolerances.end()) return it->second;
  switch (dtype) {
    case ScalarType::Float32: return {1e-5, 1e-5};
    case ScalarType::Float64: return {1e-10, 1e-10};
    default: return {0.0, 0.0};
  }
}

const ExpectedFailure* OpInfo::expected_failure(Check check, ScalarType dtype) const {
  for (const ExpectedFailure& f : expected_failures) {
    if (f.check == check && (!f.dtype || *f.dtype == dtype)) return &f;
  }
  return nullptr;
}

OpInfo make_op_info(std::string name, std::vector<ScalarType> dtypes,
                    std::function<std::vector<Sample>(ScalarType)> samples, OpFunction op,
                    OpFunction reference) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = std::move(samples);
  info.op = std::move(op);
  info.reference = std::move(reference);
  return info;
}

OpInfo floating_op_info(std::string name, std::function<std::vector<Sample>(ScalarType)> samples,
                        OpFunction op, OpFunction reference) {
  return make_op_info(std::move(name), floating_dtypes(), std::move(samples), std::move(op),
                      std::move(reference));
}

namespace {
std::vector<OpInfo>& registry() {
  static std::vector<OpInfo> infos;
  return infos;
}
}  // namespace

const std::vector<OpInfo>& op_infos() { return registry(); }

OpInfoRegistrar::OpInfoRegistrar(std::vector<OpInfo> (*make)()) {
  for (OpInfo& info : make()) registry().push_back(std::move(info));
}

namespace {

class CheckTest : public ::testing::Test {
 public:
  CheckTest(const OpInfo& info, Check check, CheckRunner run)
      : info_(info), check_(check), run_(run) {}
  void TestBody() override {
    const std::optional<std::string> failure = run_(info_, check_);
    if (const ExpectedFailure* xfail = info_.expected_failure(check_, kFloat64)) {
      EXPECT_TRUE(failure.has_value())
          << info_.name << " passes " << to_string(check_) << " now; remove its expected failure ("
          << xfail->reason << ")";
      return;
    }
    EXPECT_FALSE(failure.has_value()) << info_.name << ": " << failure.value_or("");
  }

 private:
  const OpInfo& info_;
  Check check_;
  CheckRunner run_;
};

}  // namespace

std::string test_name(const std::string& name) {
  std::string safe;
  for (size_t i = 0; i < name.size(); ++i) {
    const char ch = name[i];
    if (ch == ':' && i + 1 < name.size() && name[i + 1] == ':') {
      safe += '_';
      ++i;
    } else if (ch == '-') {
      safe += "minus";
    } else if (ch == ':' || ch == '*' || ch == '?' || ch == ' ') {
      safe += '_';
    } else {
      safe += ch;
    }
  }
  return safe;
}

// Every entry's tests are selectable one by one, as ctest runs them: a name the
// filter syntax reads otherwise would run nothing and pass.
TEST(OpTable, EveryTestNameSelectsExactlyItself) {
  std::set<std::string> names;
  for (const OpInfo& info : op_infos()) {
    const std::string name = test_name(info.name);
    EXPECT_EQ(name.find_first_of(":-*? "), std::string::npos) << info.name << " -> " << name;
    EXPECT_TRUE(names.insert(name).second) << "two entries are both named " << name;
  }
}

void register_check(const char* suite, const OpInfo& info, Check check, CheckRunner run) {
  ::testing::RegisterTest(
      suite, test_name(info.name).c_str(), nullptr, nullptr, __FILE__, __LINE__,
      [&info, check, run]() -> ::testing::Test* { return new CheckTest(info, check, run); });
}

ScalarType derivative_check_dtype(const OpInfo& info) {
  for (ScalarType d : info.dtypes) {
    if (d == kFloat64) return d;
  }
  for (ScalarType d : info.dtypes) {
    if (is_floating_point(d)) return d;
  }
  return kFloat64;
}

bool all_finite(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) {
    for (double v : t.to_vector<double>()) {
      if (!std::isfinite(v)) return false;
    }
  }
  return true;
}

const std::vector<ScalarType>& floating_dtypes() {
  static const std::vector<ScalarType> dtypes{kFloat32, kFloat64};
  return dtypes;
}

const std::vector<ScalarType>& numeric_dtypes() {
  static const std::vector<ScalarType> dtypes{kInt64, kFloat32, kFloat64};
  return dtypes;
}

const std::vector<ScalarType>& all_dtypes() {
  static const std::vector<ScalarType> dtypes{kBool, kInt64, kFloat32, kFloat64};
  return dtypes;
}

}  // namespace strata::testing
