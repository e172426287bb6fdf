// Dispatch modes that take typed calls (Note [Typed mode calls]): what they see
// of the arguments and results, their order with boxed-only modes, and the error
// of a mode that drops a call.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/dispatcher/test_ops.h"

namespace strata::testing {
namespace {

// What a typed mode saw of one argument or result, read during the call.
struct Seen {
  ArgRef::Kind kind;
  std::vector<const TensorImpl*> tensors;  // a tensor's, or each list element's
  IValue boxed;
};
Seen seen(const ArgRef& ref) {
  Seen s{ref.kind, {}, ref.box()};
  if (ref.kind == ArgRef::Kind::Tensor) s.tensors.push_back(ref.tensor().impl());
  if (ref.kind == ArgRef::Kind::TensorList) {
    for (const Tensor& t : ref.tensor_list()) s.tensors.push_back(t.impl());
  }
  return s;
}
std::vector<Seen> seen(ArrayRef<ArgRef> refs) {
  std::vector<Seen> out;
  for (const ArgRef& r : refs) out.push_back(seen(r));
  return out;
}

// Logs "<name>:<op>" for each call; with `typed`, takes typed calls and keeps
// what their ArgRefs hold, per call in log order.
class LoggingMode : public DispatchMode {
 public:
  LoggingMode(std::string name, bool typed, std::vector<std::string>& log)
      : name_(std::move(name)), typed_(typed), log_(log) {}
  bool takes_typed(const OperatorHandle&) const override { return typed_; }
  void dispatch(const OperatorHandle& op, Stack& stack) override {
    log_.push_back(name_ + ":" + op.operator_name().to_string());
    call_next(op, stack);
  }
  void dispatch_typed(const OperatorHandle& op, TypedCall& call) override {
    log_.push_back(name_ + ":" + op.operator_name().to_string());
    const size_t k = arguments.size();
    arguments.push_back(seen(call.arguments()));
    results.emplace_back();
    call_next_typed(op, call);
    results[k] = seen(call.results());
  }

  std::vector<std::vector<Seen>> arguments;
  std::vector<std::vector<Seen>> results;

 private:
  std::string name_;
  bool typed_;
  std::vector<std::string>& log_;
};

Tensor square_plus_self(const Tensor& x) { return x * x + x; }

std::vector<std::string> nested_log(bool inner_typed, bool outer_typed) {
  TestLibraries libs;
  libs.defs().def("square_plus_self(Tensor x) -> Tensor", &square_plus_self);
  std::vector<std::string> log;
  const Tensor x = tensor({1.0, 2.0});
  Tensor y;
  {
    const DispatchModeGuard outer(std::make_shared<LoggingMode>("outer", outer_typed, log));
    const DispatchModeGuard inner(std::make_shared<LoggingMode>("inner", inner_typed, log));
    y = call_unary("test::square_plus_self", x);
  }
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{2, 6}));
  EXPECT_EQ(dispatch_mode_stack_size(), 0u);
  EXPECT_FALSE(local_dispatch_key_set().included.has(DispatchKey::Mode));
  return log;
}

TEST(TypedModes, SeeTheSameCallsInTheSameOrderAsBoxedModes) {
  const std::vector<std::string> expected = {
      "inner:test::square_plus_self", "outer:test::square_plus_self",
      "inner:strata::mul.Tensor",     "outer:strata::mul.Tensor",
      "inner:strata::add.Tensor",     "outer:strata::add.Tensor"};
  EXPECT_EQ(nested_log(false, false), expected);
  EXPECT_EQ(nested_log(true, true), expected);
  // One boxed-only mode makes the call boxed for both; nothing is lost.
  EXPECT_EQ(nested_log(true, false), expected);
  EXPECT_EQ(nested_log(false, true), expected);
}

TEST(TypedModes, ArgumentsAreTheCallersAndResultsTheReturnedTensors) {
  std::vector<std::string> log;
  auto mode = std::make_shared<LoggingMode>("m", true, log);
  const Tensor a = tensor({1.0, 2.0});
  const Tensor b = tensor({10.0, 20.0});
  Tensor sum;
  std::vector<Tensor> parts;
  {
    const DispatchModeGuard guard(mode);
    sum = add(a, b, 2.5);
    parts = cat({a, b}, 0).split(2, 0);
  }
  // The op's own call is the first a mode sees of it (its kernel's calls follow).
  auto call_of = [&](const std::string& name) {
    const auto it = std::find(log.begin(), log.end(), "m:" + name);
    EXPECT_NE(it, log.end()) << name;
    return static_cast<size_t>(it - log.begin());
  };
  const size_t add_call = call_of("strata::add.Tensor");
  const std::vector<Seen>& add_args = mode->arguments[add_call];
  ASSERT_EQ(add_args.size(), 3u);
  ASSERT_EQ(add_args[0].kind, ArgRef::Kind::Tensor);
  EXPECT_EQ(add_args[0].tensors[0], a.impl());  // by reference, not a copy
  EXPECT_EQ(add_args[1].tensors[0], b.impl());
  // Non-tensor arguments box to what a boxed call would hold.
  ASSERT_EQ(add_args[2].kind, ArgRef::Kind::Other);
  EXPECT_EQ(add_args[2].boxed.to_scalar().to_double(), 2.5);
  ASSERT_EQ(mode->results[add_call].size(), 1u);
  EXPECT_EQ(mode->results[add_call][0].tensors[0], sum.impl());
  EXPECT_EQ(sum.to_vector<double>(), (std::vector<double>{26, 52}));
  // A tensor list argument and a tensor list result.
  const std::vector<Seen>& cat_args = mode->arguments[call_of("strata::cat")];
  ASSERT_EQ(cat_args[0].kind, ArgRef::Kind::TensorList);
  EXPECT_EQ(cat_args[0].tensors, (std::vector<const TensorImpl*>{a.impl(), b.impl()}));
  EXPECT_TRUE(cat_args[0].boxed.is_tensor_list());
  const std::vector<Seen>& split_results = mode->results[call_of("strata::split.Tensor")];
  ASSERT_EQ(split_results.size(), 1u);
  ASSERT_EQ(split_results[0].kind, ArgRef::Kind::TensorList);
  EXPECT_EQ(split_results[0].tensors, (std::vector<const TensorImpl*>{parts[0].impl(), parts[1].impl()}));
  EXPECT_EQ(parts[1].to_vector<double>(), (std::vector<double>{10, 20}));
}

// Returns without passing the call on.
class DroppingMode : public DispatchMode {
 public:
  bool takes_typed(const OperatorHandle&) const override { return true; }
  void dispatch_typed(const OperatorHandle&, TypedCall&) override {}
};

TEST(TypedModes, AModeThatDropsACallIsAnError) {
  {
    const DispatchModeGuard guard(std::make_shared<DroppingMode>());
    const std::string message = error_message([] { ones({1}) + ones({1}); });
    EXPECT_NE(message.find("dispatch_typed() returned without passing the call on"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ((ones({1}) + ones({1})).item<double>(), 2.0);
}

}  // namespace
}  // namespace strata::testing
