#include "dispatcher/function_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ostream>
#include <utility>

#include "tensor/error.h"

// The schema data model and its canonical printing; parsing lives in schema_parser.cpp.
// Printing is the inverse of parsing: every string produced here parses back to an equal
// schema, and canonical input prints back unchanged.

namespace strata {

std::string OperatorName::to_string() const {
  return overload_name.empty() ? name : name + "." + overload_name;
}

std::string AliasInfo::to_string() const {
  std::string out = "(";
  for (size_t i = 0; i < sets.size(); ++i) {
    if (i > 0) out += '|';
    out += sets[i];
  }
  if (is_write) out += '!';
  out += ')';
  return out;
}

std::string_view SchemaType::kind_name(Kind kind) {
  switch (kind) {
    case Kind::Tensor:
      return "Tensor";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::Bool:
      return "bool";
    case Kind::Str:
      return "str";
    case Kind::Scalar:
      return "Scalar";
    case Kind::ScalarType:
      return "ScalarType";
    case Kind::Device:
      return "Device";
    case Kind::Generator:
      return "Generator";
    case Kind::Layout:
      return "Layout";
    case Kind::MemoryFormat:
      return "MemoryFormat";
    case Kind::SymInt:
      return "SymInt";
    case Kind::Any:
      return "Any";
  }
  return "?";
}

std::optional<SchemaType::Kind> SchemaType::kind_from_name(std::string_view name) {
  for (int k = 0; k <= static_cast<int>(Kind::Any); ++k) {
    if (kind_name(static_cast<Kind>(k)) == name) return static_cast<Kind>(k);
  }
  return std::nullopt;
}

namespace {

// The alias annotation sits between the base type and its modifiers: Tensor(a!)?[].
std::string type_string(const SchemaType& type, const std::optional<AliasInfo>& alias) {
  std::string out(SchemaType::kind_name(type.kind));
  if (alias) out += alias->to_string();
  if (type.is_list) {
    if (type.element_optional) out += '?';
    out += '[';
    if (type.list_size) out += std::to_string(*type.list_size);
    out += ']';
  }
  if (type.is_optional) out += '?';
  return out;
}

// Shortest text that reads back as the same double and still looks like a float literal.
std::string double_string(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string out(buffer, end);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    switch (c) {
      case '\'':
        out += "\\'";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  out += '\'';
  return out;
}

template <class T, class Format>
std::string list_string(const std::vector<T>& values, Format format) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += format(values[i]);
  }
  out += ']';
  return out;
}

std::string bool_string(bool value) { return value ? "True" : "False"; }

bool same_double(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

std::string SchemaType::to_string() const { return type_string(*this, std::nullopt); }

DefaultValue DefaultValue::none() { return DefaultValue{}; }

DefaultValue DefaultValue::of_bool(bool value) {
  DefaultValue v;
  v.kind = Kind::Bool;
  v.bool_value = value;
  return v;
}

DefaultValue DefaultValue::of_int(int64_t value) {
  DefaultValue v;
  v.kind = Kind::Int;
  v.int_value = value;
  return v;
}

DefaultValue DefaultValue::of_double(double value) {
  DefaultValue v;
  v.kind = Kind::Double;
  v.double_value = value;
  return v;
}

DefaultValue DefaultValue::of_string(std::string value) {
  DefaultValue v;
  v.kind = Kind::String;
  v.string_value = std::move(value);
  return v;
}

DefaultValue DefaultValue::of_enum(std::string identifier) {
  DefaultValue v;
  v.kind = Kind::Enum;
  v.string_value = std::move(identifier);
  return v;
}

DefaultValue DefaultValue::of_int_list(std::vector<int64_t> values) {
  DefaultValue v;
  v.kind = Kind::IntList;
  v.int_list = std::move(values);
  return v;
}

DefaultValue DefaultValue::of_double_list(std::vector<double> values) {
  DefaultValue v;
  v.kind = Kind::DoubleList;
  v.double_list = std::move(values);
  return v;
}

DefaultValue DefaultValue::of_bool_list(std::vector<bool> values) {
  DefaultValue v;
  v.kind = Kind::BoolList;
  v.bool_list = std::move(values);
  return v;
}

std::string DefaultValue::to_string() const {
  switch (kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return bool_string(bool_value);
    case Kind::Int:
      return std::to_string(int_value);
    case Kind::Double:
      return double_string(double_value);
    case Kind::String:
      return quoted(string_value);
    case Kind::Enum:
      return string_value;
    case Kind::IntList:
      return list_string(int_list, [](int64_t v) { return std::to_string(v); });
    case Kind::DoubleList:
      return list_string(double_list, double_string);
    case Kind::BoolList:
      return list_string(bool_list, bool_string);
  }
  return "?";
}

// Only the field that `kind` selects takes part, so stale values in the others do not matter.
bool operator==(const DefaultValue& a, const DefaultValue& b) {
  if (a.kind != b.kind) return false;
  using Kind = DefaultValue::Kind;
  switch (a.kind) {
    case Kind::None:
      return true;
    case Kind::Bool:
      return a.bool_value == b.bool_value;
    case Kind::Int:
      return a.int_value == b.int_value;
    case Kind::Double:
      return same_double(a.double_value, b.double_value);
    case Kind::String:
    case Kind::Enum:
      return a.string_value == b.string_value;
    case Kind::IntList:
      return a.int_list == b.int_list;
    case Kind::DoubleList:
      return std::equal(a.double_list.begin(), a.double_list.end(), b.double_list.begin(),
                        b.double_list.end(), same_double);
    case Kind::BoolList:
      return a.bool_list == b.bool_list;
  }
  return false;
}

FunctionSchema::FunctionSchema(OperatorName name, std::vector<Argument> arguments,
                               std::vector<Return> returns, bool is_vararg)
    : name_(std::move(name)),
      arguments_(std::move(arguments)),
      returns_(std::move(returns)),
      is_vararg_(is_vararg) {
  for (size_t i = 0; i < arguments_.size(); ++i) {
    // to_string() marks the keyword-only tail with one '*', so there can be only one tail.
    STRATA_CHECK(i == 0 || arguments_[i].kwarg_only || !arguments_[i - 1].kwarg_only, "schema",
                 "operator ", name_.to_string(), ": positional argument '", arguments_[i].name,
                 "' follows a keyword-only one");
    for (size_t j = 0; j < i; ++j) {
      STRATA_CHECK(arguments_[i].name != arguments_[j].name, "schema", "operator ",
                   name_.to_string(), " has two arguments named '", arguments_[i].name, "'");
    }
  }
}

bool FunctionSchema::is_mutable() const {
  for (const Argument& arg : arguments_) {
    if (arg.alias && arg.alias->is_write) return true;
  }
  return false;
}

std::optional<size_t> FunctionSchema::argument_index(std::string_view name) const {
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (arguments_[i].name == name) return i;
  }
  return std::nullopt;
}

std::string FunctionSchema::to_string() const {
  std::string out = name_.to_string();
  out += '(';
  bool first = true;
  auto separate = [&] {
    if (!first) out += ", ";
    first = false;
  };
  bool in_kwargs = false;
  for (const Argument& arg : arguments_) {
    if (arg.kwarg_only && !in_kwargs) {
      separate();
      out += '*';
      in_kwargs = true;
    }
    separate();
    out += type_string(arg.type, arg.alias);
    out += ' ';
    out += arg.name;
    if (arg.default_value) {
      out += '=';
      out += arg.default_value->to_string();
    }
  }
  if (is_vararg_) {
    separate();
    out += "...";
  }
  out += ") -> ";
  // A lone unnamed return needs no parentheses; a name would read as trailing garbage.
  if (returns_.size() == 1 && returns_[0].name.empty()) {
    out += type_string(returns_[0].type, returns_[0].alias);
    return out;
  }
  out += '(';
  for (size_t i = 0; i < returns_.size(); ++i) {
    if (i > 0) out += ", ";
    out += type_string(returns_[i].type, returns_[i].alias);
    if (!returns_[i].name.empty()) {
      out += ' ';
      out += returns_[i].name;
    }
  }
  out += ')';
  return out;
}

bool operator==(const FunctionSchema& a, const FunctionSchema& b) {
  return a.operator_name() == b.operator_name() && a.arguments() == b.arguments() &&
         a.returns() == b.returns() && a.is_vararg() == b.is_vararg();
}

std::ostream& operator<<(std::ostream& out, const OperatorName& name) {
  return out << name.to_string();
}

std::ostream& operator<<(std::ostream& out, const FunctionSchema& schema) {
  return out << schema.to_string();
}

}  // namespace strata
