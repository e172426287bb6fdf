#include "dispatcher/function_schema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <unordered_map>

#include "tensor/error.h"

namespace strata {
namespace {

using Kind = SchemaType::Kind;
using DKind = DefaultValue::Kind;

// --- Round trips: canonical text survives parse -> to_string unchanged. ---

class CanonicalSchema : public ::testing::TestWithParam<const char*> {};

TEST_P(CanonicalSchema, PrintsBackExactly) {
  std::string text = GetParam();
  FunctionSchema schema = parse_schema(text);
  EXPECT_EQ(schema.to_string(), text);
  EXPECT_EQ(parse_schema(schema.to_string()), schema);
}

INSTANTIATE_TEST_SUITE_P(
    RealLookingOps, CanonicalSchema,
    ::testing::Values(
        "strata::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        "strata::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        "strata::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> "
        "Tensor(a!)",
        "strata::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        "strata::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
        "Tensor indices)",
        "strata::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, "
        "Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
        "strata::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
        "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
        "strata::dropout(Tensor input, float p, bool train) -> Tensor",
        "strata::bernoulli.p(Tensor self, float p=0.5, *, Generator? generator=None) -> Tensor",
        "strata::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None, "
        "MemoryFormat? memory_format=None) -> Tensor",
        "strata::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
        "strata::cat(Tensor[] tensors, int dim=0) -> Tensor",
        "strata::split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
        "strata::unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]",
        "strata::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
        "strata::std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
        "bool keepdim=False) -> Tensor",
        "strata::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
        "Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
        "strata::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, "
        "str reduce, *, bool include_self=True) -> Tensor",
        "strata::gelu(Tensor self, *, str approximate='none') -> Tensor",
        "strata::mse_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor",
        "strata::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, "
        "int reduction=1, SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor",
        "strata::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
        "strata::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
        "strata::native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
        "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, "
        "bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
        "strata::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, "
        "bool[3] output_mask=[True, False, True]) -> (Tensor, Tensor, Tensor)",
        "strata::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
        "strata::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> "
        "Tensor(a)",
        "strata::randint(SymInt high, SymInt[] size, *, ScalarType? dtype=long, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "strata::_foreach_add_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()",
        "strata::item(Tensor self) -> Scalar", "strata::size.int(Tensor self, int dim) -> int",
        "strata::is_nonzero(Tensor self) -> bool",
        "strata::view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
        "strata::t_(Tensor(a!) self) -> Tensor(a!)",
        "strata::nan_to_num(Tensor self, float? nan=None, float? posinf=None, "
        "float? neginf=None) -> Tensor",
        "strata::clamp_floats(Tensor self, float low=-inf, float high=inf, float fill=nan) -> "
        "Tensor",
        "strata::rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.3333333333333333, "
        "bool training=False, Generator? generator=None) -> Tensor",
        "strata::upsample_scale(Tensor self, float[2] scales=[0.5, 2.0], "
        "float[]? scale_factors=None) -> Tensor",
        "strata::format(str self, ...) -> str",
        "strata::alias_either(Tensor(a|b) self) -> Tensor(a|b)",
        "strata::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> "
        "(Tensor values, Tensor indices)",
        "strata::opaque(Any x) -> Any",
        "strata::maybe_lists(int[]? dims=None, Tensor?[]? maybe=None, float scale=1e+10) -> "
        "Tensor[]",
        "strata::to_device(Tensor self, Device device='cpu') -> Tensor",
        "strata::escapes(str s='it\\'s a \\\\ b\\n\\t') -> str",
        "strata::extremes(int big=9223372036854775807, int small=-9223372036854775808) -> ()",
        "strata::no_args() -> Tensor",
        "strata::kwargs_only(*, SymInt[] size, Scalar fill_value=0.5) -> Tensor"));

// --- Flexible input is printed canonically. ---

struct Normalization {
  const char* input;
  const char* canonical;
};

class NonCanonicalSchema : public ::testing::TestWithParam<Normalization> {};

TEST_P(NonCanonicalSchema, PrintsCanonically) {
  FunctionSchema schema = parse_schema(GetParam().input);
  EXPECT_EQ(schema.to_string(), GetParam().canonical);
  EXPECT_EQ(parse_schema(GetParam().canonical), schema);
}

INSTANTIATE_TEST_SUITE_P(
    Whitespace, NonCanonicalSchema,
    ::testing::Values(
        Normalization{"  strata::add . Tensor ( Tensor self ,Tensor other,*,Scalar alpha = 1 )"
                      "->Tensor  ",
                      "strata::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"},
        Normalization{"strata::f(\n  Tensor ( a ! ) self,\n\tint [ 2 ] x = [ 1 , 2 ]\n) -> "
                      "( Tensor(a!) , Tensor )",
                      "strata::f(Tensor(a!) self, int[2] x=[1, 2]) -> (Tensor(a!), Tensor)"},
        Normalization{"strata::f(Tensor ( a | b ) x)->(Tensor)",
                      "strata::f(Tensor(a|b) x) -> Tensor"},
        Normalization{"strata::f(Tensor? [ ] ? x , int ? y)->( )",
                      "strata::f(Tensor?[]? x, int? y) -> ()"}));

INSTANTIATE_TEST_SUITE_P(
    Literals, NonCanonicalSchema,
    ::testing::Values(
        Normalization{"strata::f(float p=1) -> Tensor", "strata::f(float p=1.0) -> Tensor"},
        Normalization{"strata::f(float eps=1e-5) -> Tensor",
                      "strata::f(float eps=1e-05) -> Tensor"},
        Normalization{"strata::f(float x=1.) -> Tensor", "strata::f(float x=1.0) -> Tensor"},
        Normalization{"strata::f(float x=.5) -> Tensor", "strata::f(float x=0.5) -> Tensor"},
        Normalization{"strata::f(float x=1E3) -> Tensor", "strata::f(float x=1000.0) -> Tensor"},
        Normalization{"strata::f(float[2] s=[1, 2.5]) -> Tensor",
                      "strata::f(float[2] s=[1.0, 2.5]) -> Tensor"},
        Normalization{"strata::f(str reduce=\"mean\") -> Tensor",
                      "strata::f(str reduce='mean') -> Tensor"},
        Normalization{"strata::f(str q=\"it's\") -> Tensor",
                      "strata::f(str q='it\\'s') -> Tensor"}));

// --- The parsed structure. ---

TEST(FunctionSchemaTest, AddTensorStructure) {
  FunctionSchema s =
      parse_schema("strata::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.name(), "strata::add");
  EXPECT_EQ(s.overload_name(), "Tensor");
  EXPECT_EQ(s.operator_name(), (OperatorName{"strata::add", "Tensor"}));
  ASSERT_EQ(s.arguments().size(), 3u);
  EXPECT_EQ(s.arguments()[0].name, "self");
  EXPECT_EQ(s.arguments()[0].type.kind, Kind::Tensor);
  EXPECT_FALSE(s.arguments()[0].kwarg_only);
  EXPECT_FALSE(s.arguments()[1].kwarg_only);
  EXPECT_TRUE(s.arguments()[2].kwarg_only);
  EXPECT_EQ(s.arguments()[2].type.kind, Kind::Scalar);
  ASSERT_TRUE(s.arguments()[2].default_value.has_value());
  EXPECT_EQ(s.arguments()[2].default_value->kind, DKind::Int);
  EXPECT_EQ(s.arguments()[2].default_value->int_value, 1);
  EXPECT_FALSE(s.arguments()[0].default_value.has_value());
  EXPECT_FALSE(s.arguments()[0].alias.has_value());
  ASSERT_EQ(s.returns().size(), 1u);
  EXPECT_TRUE(s.returns()[0].name.empty());
  EXPECT_FALSE(s.is_mutable());
  EXPECT_FALSE(s.is_vararg());
  EXPECT_EQ(s.argument_index("other"), 1u);
  EXPECT_EQ(s.argument_index("missing"), std::nullopt);
}

TEST(FunctionSchemaTest, InPlaceAliasIsWrite) {
  FunctionSchema s = parse_schema(
      "strata::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  ASSERT_TRUE(s.arguments()[0].alias.has_value());
  EXPECT_TRUE(s.arguments()[0].alias->is_write);
  EXPECT_EQ(s.arguments()[0].alias->sets, std::vector<std::string>{"a"});
  ASSERT_TRUE(s.returns()[0].alias.has_value());
  EXPECT_TRUE(s.returns()[0].alias->is_write);
  EXPECT_TRUE(s.is_mutable());

  FunctionSchema view = parse_schema("strata::view(Tensor(a|b) self, SymInt[] size) -> Tensor(a)");
  ASSERT_TRUE(view.arguments()[0].alias.has_value());
  EXPECT_FALSE(view.arguments()[0].alias->is_write);
  EXPECT_EQ(view.arguments()[0].alias->sets, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(view.is_mutable());
}

TEST(FunctionSchemaTest, OptionalAndListFlags) {
  FunctionSchema s = parse_schema(
      "strata::f(int[1]? dim, Tensor?[] indices, Tensor[] xs, int[2] stride=1, Tensor? w=None, "
      "Tensor(a)[] views) -> Tensor");
  const SchemaType& dim = s.arguments()[0].type;
  EXPECT_EQ(dim.kind, Kind::Int);
  EXPECT_TRUE(dim.is_list);
  EXPECT_EQ(dim.list_size, 1);
  EXPECT_TRUE(dim.is_optional);
  EXPECT_FALSE(dim.element_optional);

  const SchemaType& indices = s.arguments()[1].type;
  EXPECT_TRUE(indices.is_list);
  EXPECT_TRUE(indices.element_optional);
  EXPECT_FALSE(indices.is_optional);
  EXPECT_EQ(indices.list_size, std::nullopt);

  const SchemaType& xs = s.arguments()[2].type;
  EXPECT_TRUE(xs.is_list);
  EXPECT_FALSE(xs.element_optional);
  EXPECT_FALSE(xs.is_optional);

  const Argument& stride = s.arguments()[3];
  EXPECT_EQ(stride.type.list_size, 2);
  ASSERT_TRUE(stride.default_value.has_value());
  EXPECT_EQ(stride.default_value->kind, DKind::Int);  // broadcast over the 2 elements
  EXPECT_EQ(stride.default_value->int_value, 1);

  const Argument& w = s.arguments()[4];
  EXPECT_TRUE(w.type.is_optional);
  EXPECT_FALSE(w.type.is_list);
  EXPECT_EQ(w.default_value->kind, DKind::None);

  const Argument& views = s.arguments()[5];
  EXPECT_TRUE(views.type.is_list);
  ASSERT_TRUE(views.alias.has_value());
  EXPECT_EQ(views.alias->sets, std::vector<std::string>{"a"});
  EXPECT_EQ(SchemaType::kind_name(Kind::SymInt), "SymInt");
  EXPECT_EQ(SchemaType::kind_from_name("MemoryFormat"), Kind::MemoryFormat);
  EXPECT_EQ(SchemaType::kind_from_name("Float"), std::nullopt);
  EXPECT_EQ(dim.to_string(), "int[1]?");
  EXPECT_EQ(indices.to_string(), "Tensor?[]");
}

TEST(FunctionSchemaTest, DefaultValueContents) {
  FunctionSchema s = parse_schema(
      "strata::f(float eps=1e-05, float p=1, str reduction='mean', int[1] dim=[], "
      "bool[3] mask=[True, False, True], ScalarType? dtype=long, float lo=-inf, float x=nan, "
      "int n=-2, float[2] s=[0.5, 2], Scalar v=True) -> Tensor");
  auto def = [&](size_t i) -> const DefaultValue& { return *s.arguments()[i].default_value; };
  EXPECT_EQ(def(0).kind, DKind::Double);
  EXPECT_DOUBLE_EQ(def(0).double_value, 1e-5);
  EXPECT_EQ(def(1).kind, DKind::Double);  // float makes an int literal a double
  EXPECT_DOUBLE_EQ(def(1).double_value, 1.0);
  EXPECT_EQ(def(2).kind, DKind::String);
  EXPECT_EQ(def(2).string_value, "mean");
  EXPECT_EQ(def(3).kind, DKind::IntList);
  EXPECT_TRUE(def(3).int_list.empty());
  EXPECT_EQ(def(4).kind, DKind::BoolList);
  EXPECT_EQ(def(4).bool_list, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(def(5).kind, DKind::Enum);
  EXPECT_EQ(def(5).string_value, "long");
  EXPECT_EQ(def(6).kind, DKind::Double);
  EXPECT_TRUE(std::isinf(def(6).double_value) && def(6).double_value < 0);
  EXPECT_TRUE(std::isnan(def(7).double_value));
  EXPECT_EQ(def(8).int_value, -2);
  EXPECT_EQ(def(9).kind, DKind::DoubleList);
  EXPECT_EQ(def(9).double_list, (std::vector<double>{0.5, 2.0}));
  EXPECT_EQ(def(10).kind, DKind::Bool);
  EXPECT_TRUE(def(10).bool_value);
  // A nan default still compares equal to itself, so the schema equals its re-parse.
  EXPECT_EQ(parse_schema(s.to_string()), s);
}

TEST(FunctionSchemaTest, ReturnNamesAndShapes) {
  FunctionSchema max = parse_schema(
      "strata::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor "
      "indices)");
  ASSERT_EQ(max.returns().size(), 2u);
  EXPECT_EQ(max.returns()[0].name, "values");
  EXPECT_EQ(max.returns()[1].name, "indices");

  FunctionSchema none = parse_schema("strata::f_(Tensor(a!)[] self) -> ()");
  EXPECT_TRUE(none.returns().empty());
  EXPECT_TRUE(none.is_mutable());

  FunctionSchema split = parse_schema("strata::split(Tensor(a) self, int n) -> Tensor(a)[]");
  ASSERT_EQ(split.returns().size(), 1u);
  EXPECT_TRUE(split.returns()[0].type.is_list);
  EXPECT_EQ(split.returns()[0].alias->sets, std::vector<std::string>{"a"});

  FunctionSchema size = parse_schema("strata::size(Tensor self, int dim) -> int");
  EXPECT_EQ(size.returns()[0].type.kind, Kind::Int);

  FunctionSchema fmt = parse_schema("strata::format(str self, ...) -> str");
  EXPECT_TRUE(fmt.is_vararg());
  EXPECT_EQ(fmt.arguments().size(), 1u);
}

TEST(FunctionSchemaTest, NonDefaultAfterDefaultIsAllowed) {
  FunctionSchema s = parse_schema("strata::f(int a=1, int b) -> Tensor");
  EXPECT_TRUE(s.arguments()[0].default_value.has_value());
  EXPECT_FALSE(s.arguments()[1].default_value.has_value());
}

TEST(FunctionSchemaTest, EqualityNoticesEveryPart) {
  const char* base = "strata::f.o(Tensor self, *, int x=1) -> Tensor";
  EXPECT_EQ(parse_schema(base), parse_schema(base));
  EXPECT_NE(parse_schema(base), parse_schema("strata::f.p(Tensor self, *, int x=1) -> Tensor"));
  EXPECT_NE(parse_schema(base), parse_schema("strata::f.o(Tensor self, int x=1) -> Tensor"));
  EXPECT_NE(parse_schema(base), parse_schema("strata::f.o(Tensor self, *, int x=2) -> Tensor"));
  EXPECT_NE(parse_schema(base), parse_schema("strata::f.o(Tensor self, *, int x) -> Tensor"));
  EXPECT_NE(parse_schema(base), parse_schema("strata::f.o(Tensor(a) self, *, int x=1) -> Tensor"));
  EXPECT_NE(parse_schema(base), parse_schema("strata::f.o(Tensor self, *, int x=1) -> Tensor[]"));
  EXPECT_NE(parse_schema(base),
            parse_schema("strata::f.o(Tensor self, *, int x=1) -> (Tensor out)"));
}

TEST(FunctionSchemaTest, BuiltByHandPrintsCanonically) {
  Argument self{"self", SchemaType{}, AliasInfo{{"a"}, true}, std::nullopt, false};
  SchemaType int_list;
  int_list.kind = Kind::Int;
  int_list.is_list = true;
  int_list.list_size = 2;
  Argument pad{"pad", int_list, std::nullopt, DefaultValue::of_int_list({0, 1}), true};
  Return out{"out", SchemaType{}, AliasInfo{{"a"}, true}};
  FunctionSchema s({"strata::pad_", ""}, {self, pad}, {out});
  EXPECT_EQ(s.to_string(),
            "strata::pad_(Tensor(a!) self, *, int[2] pad=[0, 1]) -> (Tensor(a!) out)");
  EXPECT_EQ(parse_schema(s.to_string()), s);
  std::ostringstream stream;
  stream << s;
  EXPECT_EQ(stream.str(), s.to_string());
  EXPECT_THROW(FunctionSchema({"strata::g", ""}, {self, self}, {}), Error);
  Argument positional = pad;
  positional.name = "late";
  positional.kwarg_only = false;
  EXPECT_THROW(FunctionSchema({"strata::g", ""}, {pad, positional}, {}), Error);
}

TEST(OperatorNameTest, ParsePrintAndHash) {
  OperatorName add = parse_operator_name("strata::add.Tensor");
  EXPECT_EQ(add.name, "strata::add");
  EXPECT_EQ(add.overload_name, "Tensor");
  EXPECT_EQ(add.to_string(), "strata::add.Tensor");
  OperatorName relu = parse_operator_name(" strata::relu_ ");
  EXPECT_EQ(relu.name, "strata::relu_");
  EXPECT_EQ(relu.overload_name, "");
  EXPECT_EQ(relu.to_string(), "strata::relu_");
  std::ostringstream stream;
  stream << add;
  EXPECT_EQ(stream.str(), "strata::add.Tensor");

  std::unordered_map<OperatorName, int> table;
  table[add] = 1;
  table[relu] = 2;
  table[{"strata::add", ""}] = 3;
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.at(OperatorName{"strata::add", "Tensor"}), 1);
  EXPECT_NE(std::hash<OperatorName>{}({"a", "b"}), std::hash<OperatorName>{}({"b", "a"}));
  EXPECT_THROW(parse_operator_name("strata::add.Tensor("), Error);
}

// --- Malformed input: the message names the column, draws a caret, and gives a hint. ---

std::string error_for(std::string_view text) {
  try {
    parse_schema(text);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << text;
  return "";
}

void expect_error(std::string_view text, size_t column, std::string_view headline,
                  std::string_view hint) {
  std::string message = error_for(text);
  SCOPED_TRACE(message);
  std::string expected_head = "[schema] " + std::string(headline) + " at column " +
                              std::to_string(column) + " in schema:\n";
  EXPECT_EQ(message.rfind(expected_head, 0), 0u) << "expected head: " << expected_head;
  std::string echo = "\n  " + std::string(text) + "\n  " + std::string(column, ' ') + "^\n";
  EXPECT_NE(message.find(echo), std::string::npos) << "expected caret block: " << echo;
  EXPECT_NE(message.find(hint), std::string::npos) << "expected hint: " << hint;
}

TEST(SchemaErrorTest, ExactMessageForMissingArgumentName) {
  EXPECT_EQ(error_for("strata::f(Tensor )"),
            std::string("[schema] unexpected ')' at column 17 in schema:\n"
                        "  strata::f(Tensor )\n") +
                "  " + std::string(17, ' ') + "^\n" + "expected an argument name");
}

TEST(SchemaErrorTest, EmptyInput) {
  expect_error("", 0, "unexpected end of input", "expected an operator name");
  expect_error("   ", 3, "unexpected end of input", "expected an operator name");
}

TEST(SchemaErrorTest, MissingNamespace) {
  expect_error("add.Tensor(Tensor self) -> Tensor", 0, "missing namespace in operator name 'add'",
               "expected a namespace, e.g. strata::name");
  EXPECT_THROW(parse_operator_name("add"), Error);
}

TEST(SchemaErrorTest, UnknownType) {
  expect_error("strata::f(Tensr self) -> Tensor", 10, "unknown type 'Tensr'",
               "expected a type: Tensor, int");
  expect_error("strata::f(Tensor self) -> Tensorr", 26, "unknown type 'Tensorr'",
               "expected a type");
}

TEST(SchemaErrorTest, UnbalancedParentheses) {
  expect_error("strata::f(Tensor self -> Tensor", 22, "unexpected '->'",
               "expected ',' or ')' after an argument");
  expect_error("strata::f(Tensor self)) -> Tensor", 22, "unexpected ')'",
               "expected '->' followed by the return type(s)");
  expect_error("strata::f(Tensor self) -> (Tensor, Tensor", 41, "unexpected end of input",
               "expected ',' or ')' after a return type");
  expect_error("strata::f Tensor self) -> Tensor", 10, "unexpected 'Tensor'",
               "expected '(' to open the argument list");
}

TEST(SchemaErrorTest, MissingArrow) {
  expect_error("strata::f(Tensor self) Tensor", 23, "unexpected 'Tensor'",
               "expected '->' followed by the return type(s)");
  expect_error("strata::f(Tensor self)", 22, "unexpected end of input",
               "expected '->' followed by the return type(s)");
}

TEST(SchemaErrorTest, DuplicateArgumentName) {
  expect_error("strata::f(Tensor self, int self) -> Tensor", 27, "duplicate argument name 'self'",
               "each argument needs a distinct name");
  expect_error("strata::f(Tensor a) -> (Tensor x, Tensor x)", 41, "duplicate return name 'x'",
               "distinct name");
}

TEST(SchemaErrorTest, BadDefaultLiteral) {
  expect_error("strata::f(Tensor self, int x=1.5) -> Tensor", 29,
               "invalid default '1.5' for type 'int'", "an int default is an integer literal");
  expect_error("strata::f(Tensor? t=0) -> Tensor", 20, "invalid default '0' for type 'Tensor?'",
               "can only default to None");
  expect_error("strata::f(int x=None) -> int", 16, "invalid default 'None' for type 'int'",
               "only an optional type");
  expect_error("strata::f(int[] x=1) -> int", 18, "invalid default '1' for type 'int[]'",
               "fixed-size list such as int[2]");
  expect_error("strata::f(bool b=1) -> int", 17, "invalid default '1' for type 'bool'",
               "True or False");
  expect_error("strata::f(float x=1.2.3) -> int", 18, "bad number literal '1.2.'",
               "expected a number");
  expect_error("strata::f(int x=99999999999999999999) -> int", 16,
               "bad number literal '99999999999999999999'", "64-bit integer");
  expect_error("strata::f(str s='abc) -> int", 16, "unterminated string literal",
               "expected a closing '");
  expect_error("strata::f(str s='a\\qb') -> int", 18, "unknown escape in string literal",
               "the escapes are");
  expect_error("strata::f(int x=) -> int", 16, "unexpected ')'", "expected a default value");
  expect_error("strata::f(int[2] x=[1, None]) -> int", 23, "invalid list element",
               "numbers, True or False");
}

TEST(SchemaErrorTest, GarbageAfterTheEnd) {
  expect_error("strata::f(Tensor self) -> Tensor junk", 33, "unexpected 'junk'",
               "a named return needs parentheses");
  expect_error("strata::f(Tensor self) -> Tensor)", 32, "unexpected ')'",
               "expected the end of the schema after the return type(s)");
}

TEST(SchemaErrorTest, StarTwiceOrDangling) {
  expect_error("strata::f(Tensor self, *, int a, *, int b) -> Tensor", 33, "unexpected '*'",
               "'*' may appear only once");
  expect_error("strata::f(Tensor self, *) -> Tensor", 24, "unexpected ')'",
               "expected a keyword-only argument after '*'");
}

TEST(SchemaErrorTest, UnterminatedAliasAnnotation) {
  expect_error("strata::f(Tensor(a! self) -> Tensor", 20, "unexpected 'self'",
               "expected ')' to close the alias annotation opened at column 16");
  expect_error("strata::f(Tensor(", 17, "unexpected end of input",
               "expected an alias set name such as 'a'");
  expect_error("strata::f(int(a) x) -> int", 13, "alias annotation on non-Tensor type 'int'",
               "only Tensor types carry alias annotations");
}

TEST(SchemaErrorTest, CaretStaysAlignedAcrossNewlines) {
  std::string message = error_for("strata::f(\n\tTensor self,\n\tbogus x) -> Tensor");
  // The echoed text has its newline and tab turned into spaces so the caret lines up.
  EXPECT_NE(message.find("unknown type 'bogus' at column 26"), std::string::npos) << message;
  EXPECT_NE(message.find("\n  strata::f(  Tensor self,  bogus x) -> Tensor\n  " +
                         std::string(26, ' ') + "^\n"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace strata
