// OpTrace.<entry>: each sample traced, replayed on the same inputs and compared
// with the eager call, and its text parsed back and replayed the same.
// OpTraceFake.<entry>: each sample traced in fake mode gives the eager call's
// output dtypes and shapes, or (an entry with data_dependent_size) raises saying
// the size is data-dependent.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/op_table/op_info.h"

namespace strata::testing {
namespace {

std::string compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const char* what) {
  std::ostringstream out;
  if (got.size() != want.size()) {
    out << what << ": " << got.size() << " outputs, eager gave " << want.size() << "\n";
    return out.str();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].sizes() != want[i].sizes() || got[i].dtype() != want[i].dtype()) {
      out << what << ": output " << i << " is " << got[i].dtype() << shape_string(got[i].sizes())
          << ", eager " << want[i].dtype() << shape_string(want[i].sizes()) << "\n";
      continue;
    }
    const std::vector<double> a = got[i].to_vector<double>();
    const std::vector<double> e = want[i].to_vector<double>();
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k] != e[k] && !(a[k] != a[k] && e[k] != e[k])) {
        out << what << ": output " << i << " element " << k << " is " << a[k] << ", eager " << e[k] << "\n";
        break;
      }
    }
  }
  return out.str();
}

class OpTraceTest : public ::testing::Test {
 public:
  explicit OpTraceTest(const OpInfo& info) : info_(info) {}
  void TestBody() override {
    std::ostringstream failures;
    for (ScalarType dtype : info_.dtypes) {
      for (const Sample& sample : info_.samples(dtype)) {
        const auto f = [&](const std::vector<Tensor>& inputs) { return info_.op(inputs, sample.args); };
        const std::vector<Tensor> eager = f(sample.inputs);
        const Graph g = trace(f)(sample.inputs);
        const std::string where = std::string(to_string(dtype)) + " " + sample.description;
        const std::string replay = compare(g.run(sample.inputs), eager, "replay");
        const Graph back = Graph::parse(g.to_string());
        std::string round_trip = compare(back.run(sample.inputs), eager, "parsed replay");
        if (back.to_string() != g.to_string()) round_trip += "text changes on a round trip\n";
        if (!replay.empty() || !round_trip.empty()) {
          failures << where << ":\n" << replay << round_trip << g.to_string();
        }
      }
    }
    EXPECT_TRUE(failures.str().empty()) << failures.str();
  }

 private:
  const OpInfo& info_;
};

class OpTraceFakeTest : public ::testing::Test {
 public:
  explicit OpTraceFakeTest(const OpInfo& info) : info_(info) {}
  void TestBody() override {
    std::ostringstream failures;
    for (ScalarType dtype : info_.dtypes) {
      for (const Sample& sample : info_.samples(dtype)) {
        const auto f = [&](const std::vector<Tensor>& inputs) { return info_.op(inputs, sample.args); };
        const std::vector<Tensor> eager = f(sample.inputs);
        const std::string where = std::string(to_string(dtype)) + " " + sample.description + ": ";
        Graph g;
        try {
          g = trace(f, {.mode = TraceMode::Fake})(sample.inputs);
        } catch (const Error& e) {
          const bool said_why = std::string(e.what()).find("data-dependent") != std::string::npos;
          if (!info_.data_dependent_size || !said_why) {
            failures << where << "fake trace failed: " << e.what() << "\n";
          }
          continue;
        }
        if (info_.data_dependent_size) {
          failures << where << "fake trace of a data-dependent size did not raise\n";
          continue;
        }
        if (g.outputs().size() != eager.size()) {
          failures << where << g.outputs().size() << " outputs, eager gave " << eager.size() << "\n";
          continue;
        }
        for (size_t i = 0; i < eager.size(); ++i) {
          const ValueType& fake = g.values()[static_cast<size_t>(g.outputs()[i])].type;
          if (fake != value_type_of(eager[i])) {
            failures << where << "output " << i << " is " << to_string(fake) << " in fake mode, "
                     << to_string(value_type_of(eager[i])) << " eagerly\n";
          }
        }
      }
    }
    EXPECT_TRUE(failures.str().empty()) << failures.str();
  }

 private:
  const OpInfo& info_;
};

}  // namespace

void register_trace_tests() {
  for (const OpInfo& info : op_infos()) {
    ::testing::RegisterTest("OpTrace", test_name(info.name).c_str(), nullptr, nullptr, __FILE__,
                            __LINE__, [&info]() -> ::testing::Test* { return new OpTraceTest(info); });
    ::testing::RegisterTest("OpTraceFake", test_name(info.name).c_str(), nullptr, nullptr, __FILE__,
                            __LINE__, [&info]() -> ::testing::Test* { return new OpTraceFakeTest(info); });
  }
}

}  // namespace strata::testing
