// Calls through the dispatcher: boxing in both directions, signature checks,
// registration errors, modes, thread safety and the dispatch trace.
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <string>
#include <thread>

#include <tbb/parallel_for.h>

#include "tests/dispatcher/test_ops.h"

namespace strata::testing {
namespace {

double sum_of(const Tensor& t) {
  double total = 0;
  for (double v : t.to_vector<double>()) total += v;
  return total;
}

Tensor scale_kernel(const Tensor& x, double k) { return x * full({}, k, x.dtype()); }

TEST(Boxing, BoxedCallOfAnUnboxedKernel) {
  TestLibraries libs;
  libs.defs().def("scale(Tensor x, float k) -> Tensor");
  libs.at(DispatchKey::CPU).impl("scale", &scale_kernel);
  Stack stack{IValue(tensor({1.0, 2.0, 3.0})), IValue(2.0)};
  Dispatcher::singleton().findSchemaOrThrow("test::scale", "").call_boxed(stack);
  ASSERT_EQ(stack.size(), 1u);
  EXPECT_EQ(stack[0].to_tensor().to_vector<double>(), (std::vector<double>{2, 4, 6}));
}

TEST(Boxing, UnboxedCallOfABoxedKernelWithSeveralResults) {
  TestLibraries libs;
  libs.defs().def("twice(Tensor x, float k) -> (Tensor, Tensor)");
  libs.at(DispatchKey::CPU)
      .impl("twice", KernelFunction::from_boxed([](const OperatorHandle&, DispatchKeySet,
                                                   Stack& stack) {
        double k = stack.back().to_double();
        Tensor x = stack[stack.size() - 2].to_tensor();
        stack.resize(stack.size() - 2);
        stack.emplace_back(scale_kernel(x, k));
        stack.emplace_back(scale_kernel(x, 2 * k));
      }));
  auto op = Dispatcher::singleton()
                .findSchemaOrThrow("test::twice", "")
                .typed<std::tuple<Tensor, Tensor>(const Tensor&, double)>();
  auto [a, b] = op.call(tensor({1.0, 2.0}), 3.0);
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{3, 6}));
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{6, 12}));
}

// An undefined tensor given for a Tensor? argument of a typed call reaches the
// kernel as None, as in a boxed call: for an unboxed kernel and a boxed one.
TEST(Boxing, TypedCallPassesAnUndefinedOptionalTensorAsNone) {
  TestLibraries libs;
  libs.defs().def("plus_bias(Tensor x, Tensor? bias) -> Tensor");
  libs.defs().def("plus_bias_boxed(Tensor x, Tensor? bias) -> Tensor");
  libs.at(DispatchKey::CPU).impl("plus_bias", [](const Tensor& x, const std::optional<Tensor>& bias) {
    STRATA_CHECK(!bias || bias->defined(), "test::plus_bias", "the bias holds an undefined tensor");
    return bias ? x + *bias : x * 2.0;
  });
  libs.at(DispatchKey::CPU)
      .impl("plus_bias_boxed", KernelFunction::from_boxed([](const OperatorHandle&, DispatchKeySet,
                                                             Stack& stack) {
        const IValue bias = stack.back();
        STRATA_CHECK(bias.is_none() || bias.to_tensor().defined(), "test::plus_bias_boxed",
                     "the bias holds an undefined tensor");
        const Tensor x = stack[stack.size() - 2].to_tensor();
        stack.resize(stack.size() - 2);
        stack.emplace_back(bias.is_none() ? x * 2.0 : x + bias.to_tensor());
      }));
  const Tensor x = tensor({1.0, 2.0});
  for (const char* name : {"test::plus_bias", "test::plus_bias_boxed"}) {
    auto op = Dispatcher::singleton()
                  .findSchemaOrThrow(name, "")
                  .typed<Tensor(const Tensor&, const std::optional<Tensor>&)>();
    EXPECT_EQ(op.call(x, std::optional<Tensor>(Tensor())).to_vector<double>(),
              (std::vector<double>{2, 4}))
        << name;
    EXPECT_EQ(op.call(x, std::nullopt).to_vector<double>(), (std::vector<double>{2, 4})) << name;
    EXPECT_EQ(op.call(x, tensor({10.0, 20.0})).to_vector<double>(), (std::vector<double>{11, 22}))
        << name;
  }
}

TEST(Boxing, InPlaceBoxedKernelReturnsTheSameTensorObject) {
  TestLibraries libs;
  libs.defs().def("bump_(Tensor(a!) self) -> Tensor(a!)");
  libs.at(DispatchKey::CPU)
      .impl("bump_", KernelFunction::from_boxed([](const OperatorHandle&, DispatchKeySet,
                                                   Stack& stack) {
        stack.back().to_tensor().add_(ones({}, kFloat64));
      }));
  auto op = Dispatcher::singleton()
                .findSchemaOrThrow("test::bump_", "")
                .typed<const Tensor&(const Tensor&)>();
  Tensor x = zeros({3}, kFloat64);
  const Tensor& result = op.call(x);
  EXPECT_EQ(&result, &x);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 1, 1}));
}

TEST(Boxing, BoxedCallChecksArgumentCountAndTypes) {
  auto add = Dispatcher::singleton().findSchemaOrThrow("strata::add", "Tensor");
  Stack too_few{IValue(ones({2}))};
  std::string message = error_message([&] { add.call_boxed(too_few); });
  EXPECT_NE(message.find("[strata::add.Tensor] expected 3 arguments"), std::string::npos) << message;
  Stack wrong_type{IValue(ones({2})), IValue(2.0), IValue(int64_t{1})};
  message = error_message([&] { add.call_boxed(wrong_type); });
  EXPECT_NE(message.find("argument 'other' (position 1) expected Tensor but got float"),
            std::string::npos)
      << message;
}

TEST(Registration, UnknownOperator) {
  std::string message =
      error_message([] { Dispatcher::singleton().findSchemaOrThrow("strata::nope", "x"); });
  EXPECT_NE(message.find("could not find schema for strata::nope.x"), std::string::npos);
}

TEST(Registration, ImplementationWithoutSchema) {
  TestLibraries libs;
  libs.at(DispatchKey::CPU).impl("undefined_op", &scale_kernel);
  std::string message =
      error_message([] { Dispatcher::singleton().findSchemaOrThrow("test::undefined_op", ""); });
  EXPECT_NE(message.find("did you forget to def() it?"), std::string::npos) << message;
}

TEST(Registration, SecondDefIsAnError) {
  TestLibraries libs;
  libs.defs().def("once(Tensor x) -> Tensor");
  std::string message = error_message([&] { libs.defs().def("once(Tensor y) -> Tensor"); });
  EXPECT_NE(message.find("operator test::once was already defined"), std::string::npos) << message;
}

TEST(Registration, MalformedSchemaPointsAtTheCharacter) {
  TestLibraries libs;
  std::string message = error_message([&] { libs.defs().def("bad(Tensor x -> Tensor"); });
  EXPECT_NE(message.find("[schema]"), std::string::npos) << message;
  EXPECT_NE(message.find('^'), std::string::npos) << message;
}

TEST(Registration, KernelSignatureMustMatchSchema) {
  TestLibraries libs;
  libs.defs().def("scale(Tensor x, int k) -> Tensor");
  std::string message =
      error_message([&] { libs.at(DispatchKey::CPU).impl("scale", &scale_kernel); });
  EXPECT_NE(message.find("does not match the schema"), std::string::npos) << message;
}

TEST(Registration, TypedHandleMustMatchKernelSignature) {
  std::string message = error_message([] {
    Dispatcher::singleton().findSchemaOrThrow("strata::mul", "Tensor").typed<Tensor(const Tensor&)>();
  });
  EXPECT_NE(message.find("[strata::mul.Tensor]"), std::string::npos) << message;
}

TEST(Registration, ThreadLocalStateIsRestoredWhenAKernelThrows) {
  TestLibraries libs;
  libs.defs().def("throws(Tensor x) -> Tensor");
  libs.at(DispatchKey::CPU).impl("throws", [](const Tensor& x) -> Tensor {
    ExcludeDispatchKeyGuard exclude(DispatchKey::Batched);
    IncludeDispatchKeyGuard include(DispatchKey::Functionalize);
    STRATA_FAIL("test::throws", "on purpose, shape ", shape_string(x.sizes()));
  });
  const LocalDispatchKeySet before = local_dispatch_key_set();
  std::string message = error_message([] { call_unary("test::throws", ones({2})); });
  EXPECT_NE(message.find("on purpose, shape [2]"), std::string::npos);
  EXPECT_EQ(local_dispatch_key_set().included, before.included);
  EXPECT_EQ(local_dispatch_key_set().excluded, before.excluded);
}

// Records "<name>:<op>" for every call it sees.
class RecordingMode : public DispatchMode {
 public:
  RecordingMode(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}
  void dispatch(const OperatorHandle& op, Stack& stack) override {
    log_.push_back(name_ + ":" + op.operator_name().to_string());
    call_next(op, stack);
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
};

Tensor square_plus_self(const Tensor& x) { return x * x + x; }

TEST(Modes, NestedModesSeeEveryCallAndItsNestedCallsInOrder) {
  TestLibraries libs;
  libs.defs().def("square_plus_self(Tensor x) -> Tensor", &square_plus_self);
  std::vector<std::string> log;
  Tensor x = tensor({1.0, 2.0});
  Tensor y;
  {
    DispatchModeGuard outer(std::make_shared<RecordingMode>("outer", log));
    DispatchModeGuard inner(std::make_shared<RecordingMode>("inner", log));
    y = call_unary("test::square_plus_self", x);
  }
  EXPECT_EQ(log, (std::vector<std::string>{
                     "inner:test::square_plus_self", "outer:test::square_plus_self",
                     "inner:strata::mul.Tensor", "outer:strata::mul.Tensor",
                     "inner:strata::add.Tensor", "outer:strata::add.Tensor"}));
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{2, 6}));
  EXPECT_EQ(dispatch_mode_stack_size(), 0u);
  EXPECT_FALSE(local_dispatch_key_set().included.has(DispatchKey::Mode));
}

// Replaces every add by a subtraction, computing it with ops of its own.
class AddToSubMode : public DispatchMode {
 public:
  void dispatch(const OperatorHandle& op, Stack& stack) override {
    if (op.operator_name().to_string() != "strata::add.Tensor") return call_next(op, stack);
    Tensor b = stack[stack.size() - 2].to_tensor();
    Tensor a = stack[stack.size() - 3].to_tensor();
    stack.resize(stack.size() - 3);
    stack.emplace_back(add(a, b, -1));  // runs with this mode hidden: no recursion
  }
};

TEST(Modes, ModeCanReplaceAResult) {
  DispatchModeGuard guard(std::make_shared<AddToSubMode>());
  Tensor r = tensor({5.0}) + tensor({3.0});
  EXPECT_EQ(r.item<double>(), 2.0);
}

class ThrowingMode : public DispatchMode {
 public:
  void dispatch(const OperatorHandle& op, Stack&) override {
    STRATA_FAIL("ThrowingMode", "saw ", op.operator_name().to_string());
  }
};

TEST(Modes, StateIsRestoredWhenAModeThrows) {
  std::vector<std::string> log;
  DispatchModeGuard outer(std::make_shared<RecordingMode>("outer", log));
  {
    DispatchModeGuard guard(std::make_shared<ThrowingMode>());
    std::string message = error_message([] { ones({1}) + ones({1}); });
    EXPECT_NE(message.find("saw strata::"), std::string::npos);
  }
  EXPECT_EQ(dispatch_mode_stack_size(), 1u);
  log.clear();
  ones({1}) + ones({1});
  EXPECT_EQ(log.back(), "outer:strata::add.Tensor");
}

TEST(Threads, RegisteringAndCallingConcurrently) {
  std::atomic<int> failures{0};
  tbb::parallel_for(0, 64, [&](int i) {
    const std::string ns_op = "test::threaded_" + std::to_string(i);
    Library defs(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
    defs.def(ns_op.substr(6) + "(Tensor x, float k) -> Tensor");
    Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
    cpu.impl(ns_op.substr(6), &scale_kernel);
    auto op = Dispatcher::singleton()
                  .findSchemaOrThrow(ns_op, "")
                  .typed<Tensor(const Tensor&, double)>();
    Tensor x = full({4}, static_cast<double>(i), kFloat64);
    for (int rep = 0; rep < 50; ++rep) {
      if (sum_of(op.call(x, 2.0)) != 8.0 * i) ++failures;
      if (sum_of(x + x) != 8.0 * i) ++failures;
    }
  });
  EXPECT_EQ(failures.load(), 0);
}

TEST(Trace, PrintsEachCallWithItsKeyIndentedByDepth) {
  TestLibraries libs;
  libs.defs().def("square_plus_self(Tensor x) -> Tensor", &square_plus_self);
  Tensor x = ones({2});
  std::ostringstream trace;
  set_dispatch_trace_stream(&trace);
  set_dispatch_trace(true);
  call_unary("test::square_plus_self", x);
  set_dispatch_trace(false);
  set_dispatch_trace_stream(nullptr);
  EXPECT_EQ(trace.str(),
            "[call] test::square_plus_self key=CPU\n"
            "  [call] strata::mul.Tensor key=CPU\n"
            "  [call] strata::add.Tensor key=CPU\n");
}

}  // namespace
}  // namespace strata::testing
