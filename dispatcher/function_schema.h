#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

// "strata::add" + "Tensor" names one overload of an operator; the overload name may be empty.
struct OperatorName {
  std::string name;           // namespace included, e.g. "strata::add"
  std::string overload_name;  // e.g. "Tensor", or "" for the default overload

  std::string to_string() const;  // "strata::add.Tensor", or "strata::add"
  bool operator==(const OperatorName&) const = default;
};

// An alias annotation such as (a), (a!) or (a|b): the argument (or return) may share memory
// with every other value annotated with one of the same sets; '!' says it is written to.
struct AliasInfo {
  std::vector<std::string> sets;
  bool is_write = false;

  std::string to_string() const;  // "(a!)", "(a|b)"
  bool operator==(const AliasInfo&) const = default;
};

struct SchemaType {
  enum class Kind : uint8_t {
    Tensor,
    Int,
    Float,
    Bool,
    Str,
    Scalar,
    ScalarType,
    Device,
    Generator,
    Layout,
    MemoryFormat,
    SymInt,
    Any
  };
  Kind kind = Kind::Tensor;
  bool is_list = false;              // T[] or T[N]
  std::optional<int64_t> list_size;  // N of T[N]; only meaningful when is_list
  bool element_optional = false;     // T?[]: a list whose elements may be None (Tensor?[])
  bool is_optional = false;          // T? or T[]?: the whole value may be None

  // The spelling of `kind` alone ("Tensor", "int", "SymInt", ...).
  static std::string_view kind_name(Kind kind);
  // The inverse of kind_name; nullopt for a word that names no type.
  static std::optional<Kind> kind_from_name(std::string_view name);
  // Without alias annotation: "int[2]", "Tensor?[]", "int[1]?".
  std::string to_string() const;
  bool operator==(const SchemaType&) const = default;
};

// A parsed default literal. The kind is what the argument's type makes of the literal:
// `float p=1` is stored as Double, `int[2] stride=1` keeps the single Int (it broadcasts),
// and Scalar/Any keep whatever was written.
struct DefaultValue {
  enum class Kind : uint8_t {
    None,
    Bool,
    Int,
    Double,
    String,
    Enum,  // a bare identifier such as `contiguous_format` or `long`, in string_value
    IntList,
    DoubleList,
    BoolList
  };
  Kind kind = Kind::None;
  bool bool_value = false;
  int64_t int_value = 0;
  double double_value = 0.0;
  std::string string_value;
  std::vector<int64_t> int_list;
  std::vector<double> double_list;
  std::vector<bool> bool_list;

  static DefaultValue none();
  static DefaultValue of_bool(bool value);
  static DefaultValue of_int(int64_t value);
  static DefaultValue of_double(double value);
  static DefaultValue of_string(std::string value);
  static DefaultValue of_enum(std::string identifier);
  static DefaultValue of_int_list(std::vector<int64_t> values);
  static DefaultValue of_double_list(std::vector<double> values);
  static DefaultValue of_bool_list(std::vector<bool> values);

  // Canonical literal: None, True, 1, -2, 1.5, 1e-05, 1.0, inf, nan, 'mean', [0, 1], [].
  std::string to_string() const;
};
// NaN equals NaN here, so a schema with a nan default compares equal to its own re-parse.
bool operator==(const DefaultValue& a, const DefaultValue& b);

struct Argument {
  std::string name;
  SchemaType type;
  std::optional<AliasInfo> alias;
  std::optional<DefaultValue> default_value;
  bool kwarg_only = false;

  bool operator==(const Argument&) const = default;
};

struct Return {
  std::string name;  // empty when the return is unnamed
  SchemaType type;
  std::optional<AliasInfo> alias;

  bool operator==(const Return&) const = default;
};

class FunctionSchema {
 public:
  FunctionSchema(OperatorName name, std::vector<Argument> arguments, std::vector<Return> returns,
                 bool is_vararg = false);

  const OperatorName& operator_name() const { return name_; }
  const std::string& name() const { return name_.name; }
  const std::string& overload_name() const { return name_.overload_name; }
  const std::vector<Argument>& arguments() const { return arguments_; }
  const std::vector<Return>& returns() const { return returns_; }

  // True when some argument carries a write alias (a!): in-place and out= overloads.
  bool is_mutable() const;
  // True when the argument list ends in "...": any number of extra arguments may follow.
  bool is_vararg() const { return is_vararg_; }
  // Position of the argument called `name`, if there is one.
  std::optional<size_t> argument_index(std::string_view name) const;

  // Canonical text: "ns::name.overload(Tensor self, *, Scalar alpha=1) -> Tensor".
  std::string to_string() const;

 private:
  OperatorName name_;
  std::vector<Argument> arguments_;
  std::vector<Return> returns_;
  bool is_vararg_ = false;
};

bool operator==(const FunctionSchema& a, const FunctionSchema& b);

// Both throw strata::Error ("[schema] ...") on malformed text, naming the column and
// drawing a caret under the offending character.
FunctionSchema parse_schema(std::string_view text);
OperatorName parse_operator_name(std::string_view text);

std::ostream& operator<<(std::ostream& out, const OperatorName& name);
std::ostream& operator<<(std::ostream& out, const FunctionSchema& schema);

}  // namespace strata

template <>
struct std::hash<strata::OperatorName> {
  size_t operator()(const strata::OperatorName& op) const noexcept {
    size_t h = std::hash<std::string>{}(op.name);
    // Mixed rather than XORed so that swapping name and overload changes the hash.
    return h ^ (std::hash<std::string>{}(op.overload_name) + 0x9e3779b97f4a7c15ULL + (h << 6) +
                (h >> 2));
  }
};
