#include <algorithm>
#include <charconv>
#include <limits>
#include <utility>

#include "dispatcher/function_schema.h"
#include "tensor/error.h"

// A hand-written recursive-descent parser over characters. There is no separate lexer:
// the grammar is small, and working on raw offsets keeps every error able to point at the
// exact column where the text stopped making sense.

namespace strata {
namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

constexpr std::string_view kTypeHint =
    "expected a type: Tensor, int, SymInt, float, bool, str, Scalar, ScalarType, Device, "
    "Generator, Layout, MemoryFormat or Any";

// A default literal before the argument's type has given it meaning.
struct Literal {
  DefaultValue scalar;  // None, Bool, Int, Double, String or Enum
  bool is_list = false;
  std::vector<DefaultValue> items;  // each Bool, Int or Double
};

class SchemaParser {
 public:
  explicit SchemaParser(std::string_view text) : text_(text) {}

  FunctionSchema schema() {
    OperatorName name = operator_name();
    std::vector<Argument> args;
    bool is_vararg = arguments(args);
    std::vector<Return> rets = returns();
    return FunctionSchema(std::move(name), std::move(args), std::move(rets), is_vararg);
  }

  OperatorName operator_name_only() {
    OperatorName name = operator_name();
    if (!at_end()) fail_unexpected("expected the end of the operator name");
    return name;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;

  // --- Character-level helpers. Each skips leading whitespace first. ---

  void skip_ws() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool at_end() {
    skip_ws();
    return pos_ >= text_.size();
  }
  char peek() {
    skip_ws();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool starts_with(std::string_view token) {
    skip_ws();
    return text_.substr(pos_).starts_with(token);
  }
  bool consume(std::string_view token) {
    if (!starts_with(token)) return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token, std::string_view hint) {
    if (!consume(token)) fail_unexpected(hint);
  }
  std::string identifier(std::string_view hint) {
    if (!is_ident_start(peek())) fail_unexpected(hint);
    size_t start = pos_;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // --- Errors: "<headline> at column N in schema:", the text, a caret, then the hint. ---

  [[noreturn]] void fail_at(size_t pos, std::string_view headline, std::string_view hint) {
    std::string shown(text_);
    // Control characters would break the caret's alignment with the echoed text.
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    std::string message = detail::concat(headline, " at column ", pos, " in schema:\n  ", shown,
                                         "\n  ", std::string(pos, ' '), "^");
    if (!hint.empty()) message += detail::concat("\n", hint);
    STRATA_FAIL("schema", message);
  }

  [[noreturn]] void fail_unexpected(std::string_view hint) {
    skip_ws();
    std::string what;
    if (pos_ >= text_.size()) {
      what = "end of input";
    } else if (text_.substr(pos_).starts_with("->")) {
      what = "'->'";
    } else if (is_ident_char(text_[pos_])) {
      size_t end = pos_;
      while (end < text_.size() && is_ident_char(text_[end])) ++end;
      what = detail::concat("'", text_.substr(pos_, end - pos_), "'");
    } else if (auto byte = static_cast<unsigned char>(text_[pos_]); byte < 0x20 || byte >= 0x7f) {
      what = detail::concat("byte ", static_cast<int>(byte));
    } else {
      what = detail::concat("'", text_[pos_], "'");
    }
    fail_at(pos_, detail::concat("unexpected ", what), hint);
  }

  // --- Grammar. ---

  OperatorName operator_name() {
    skip_ws();
    size_t start = pos_;
    std::string ns = identifier("expected an operator name such as strata::add");
    if (!starts_with("::")) {
      if (peek() == ':') fail_unexpected("expected '::' between the namespace and the name");
      fail_at(start, detail::concat("missing namespace in operator name '", ns, "'"),
              "expected a namespace, e.g. strata::name");
    }
    pos_ += 2;
    OperatorName name;
    name.name = ns + "::" + identifier("expected the operator name after '::'");
    if (consume(".")) name.overload_name = identifier("expected an overload name after '.'");
    return name;
  }

  // Fills `args`; returns whether the list ended in "...".
  bool arguments(std::vector<Argument>& args) {
    expect("(", "expected '(' to open the argument list");
    if (consume(")")) return false;
    bool kwarg_only = false;
    bool need_kwarg = false;  // a '*' was just read, so an argument must follow
    while (true) {
      if (starts_with("...")) {
        if (need_kwarg) fail_unexpected("expected a keyword-only argument after '*'");
        pos_ += 3;
        expect(")", "expected ')': '...' must be the last entry of the argument list");
        return true;
      }
      if (starts_with("*")) {
        if (kwarg_only) {
          fail_unexpected(
              "expected an argument; '*' may appear only once, as everything after the first "
              "'*' is keyword-only already");
        }
        ++pos_;
        kwarg_only = need_kwarg = true;
        if (peek() == ')') fail_unexpected("expected a keyword-only argument after '*'");
        expect(",", "expected ',' after '*'");
        continue;
      }
      args.push_back(argument(args, kwarg_only));
      need_kwarg = false;
      if (consume(",")) continue;
      if (consume(")")) return false;
      fail_unexpected("expected ',' or ')' after an argument");
    }
  }

  Argument argument(const std::vector<Argument>& previous, bool kwarg_only) {
    Argument arg;
    arg.kwarg_only = kwarg_only;
    arg.type = type(arg.alias);
    skip_ws();
    size_t name_pos = pos_;
    arg.name = identifier("expected an argument name");
    for (const Argument& other : previous) {
      if (other.name == arg.name) {
        fail_at(name_pos, detail::concat("duplicate argument name '", arg.name, "'"),
                "each argument needs a distinct name");
      }
    }
    if (consume("=")) arg.default_value = default_value(arg.type);
    return arg;
  }

  std::vector<Return> returns() {
    expect("->", "expected '->' followed by the return type(s)");
    std::vector<Return> rets;
    bool parenthesized = consume("(");
    if (!parenthesized) {
      Return ret;
      ret.type = type(ret.alias);
      rets.push_back(std::move(ret));
    } else if (!consume(")")) {
      while (true) {
        Return ret;
        ret.type = type(ret.alias);
        skip_ws();
        size_t name_pos = pos_;
        if (is_ident_start(peek())) ret.name = identifier("");
        for (const Return& other : rets) {
          if (!ret.name.empty() && other.name == ret.name) {
            fail_at(name_pos, detail::concat("duplicate return name '", ret.name, "'"),
                    "each named return needs a distinct name");
          }
        }
        rets.push_back(std::move(ret));
        if (consume(",")) continue;
        if (consume(")")) break;
        fail_unexpected("expected ',' or ')' after a return type");
      }
    }
    if (!at_end()) {
      fail_unexpected(!parenthesized && is_ident_start(peek())
                          ? "expected the end of the schema; a named return needs "
                            "parentheses, e.g. -> (Tensor out)"
                          : "expected the end of the schema after the return type(s)");
    }
    return rets;
  }

  // Base type, alias annotation, then modifiers: Tensor(a!)?[]?, int[2], Tensor?[].
  SchemaType type(std::optional<AliasInfo>& alias) {
    skip_ws();
    size_t start = pos_;
    std::string word = identifier(kTypeHint);
    std::optional<SchemaType::Kind> kind = SchemaType::kind_from_name(word);
    if (!kind) fail_at(start, detail::concat("unknown type '", word, "'"), kTypeHint);
    SchemaType t;
    t.kind = *kind;
    if (peek() == '(') {
      if (t.kind != SchemaType::Kind::Tensor) {
        fail_at(pos_, detail::concat("alias annotation on non-Tensor type '", word, "'"),
                "only Tensor types carry alias annotations such as Tensor(a!)");
      }
      alias = alias_info();
    }
    if (consume("?")) {
      if (peek() == '[') {
        t.element_optional = true;
      } else {
        t.is_optional = true;
        return t;
      }
    }
    if (consume("[")) {
      t.is_list = true;
      if (is_digit(peek())) t.list_size = integer("a list size");
      expect("]", "expected ']' to close the list type, e.g. int[] or int[2]");
      t.is_optional = consume("?");
    }
    return t;
  }

  AliasInfo alias_info() {
    size_t open = pos_;
    ++pos_;  // '('
    std::string where = detail::concat("the alias annotation opened at column ", open);
    AliasInfo info;
    do {
      if (consume("*")) {
        info.sets.emplace_back("*");
      } else {
        info.sets.push_back(
            identifier(detail::concat("expected an alias set name such as 'a' in ", where)));
      }
    } while (consume("|"));
    info.is_write = consume("!");
    expect(")", detail::concat("expected ')' to close ", where));
    return info;
  }

  // Parses an unsigned decimal integer at the current position.
  int64_t integer(std::string_view what) {
    skip_ws();
    size_t start = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, value);
    if (ec != std::errc() || ptr != text_.data() + pos_) {
      fail_at(start, detail::concat("invalid ", what), "expected a non-negative 64-bit integer");
    }
    return value;
  }

  // --- Default values. ---

  DefaultValue default_value(const SchemaType& type) {
    skip_ws();
    size_t start = pos_;
    Literal lit = literal();
    DefaultValue value;
    const char* problem = nullptr;
    if (!lit.is_list && lit.scalar.kind == DefaultValue::Kind::None) {
      value = lit.scalar;
      if (!type.is_optional) problem = "only an optional type such as int? can default to None";
    } else if (!type.is_list) {
      value = std::move(lit.scalar);
      problem = lit.is_list ? "a list default such as [0, 1] needs a list type such as int[]"
                            : convert_scalar(type.kind, value);
    } else if (!lit.is_list) {
      // int[2] stride=1 means [1, 1]; only a fixed size says how far to broadcast.
      value = std::move(lit.scalar);
      problem = type.list_size ? convert_scalar(type.kind, value)
                               : "a single value defaults only a fixed-size list such as int[2]";
    } else {
      problem = convert_list(type.kind, std::move(lit.items), value);
    }
    if (problem != nullptr) {
      fail_at(start,
              detail::concat("invalid default '", text_.substr(start, pos_ - start), "' for type '",
                             type.to_string(), "'"),
              problem);
    }
    return value;
  }

  // Gives `value` the kind the argument type asks for; returns why it cannot, or nullptr.
  static const char* convert_scalar(SchemaType::Kind kind, DefaultValue& value) {
    using K = SchemaType::Kind;
    using D = DefaultValue::Kind;
    switch (kind) {
      case K::Int:
      case K::SymInt:
        if (value.kind == D::Int) return nullptr;
        return "an int default is an integer literal such as 0 or -1";
      case K::Float:
        if (value.kind == D::Int) value = DefaultValue::of_double(double(value.int_value));
        if (value.kind == D::Double) return nullptr;
        return "a float default is a number such as 0.5, 1e-05 or -inf";
      case K::Bool:
        if (value.kind == D::Bool) return nullptr;
        return "a bool default is True or False";
      case K::Str:
        if (value.kind == D::String) return nullptr;
        return "a str default is a quoted string such as 'mean'";
      case K::Scalar:
        if (value.kind == D::Int || value.kind == D::Double || value.kind == D::Bool) {
          return nullptr;
        }
        return "a Scalar default is a number, True or False";
      case K::Device:
        if (value.kind == D::String) return nullptr;
        [[fallthrough]];
      case K::ScalarType:
      case K::Layout:
      case K::MemoryFormat:
        if (value.kind == D::Enum) return nullptr;
        return "expected a bare name such as long, strided or contiguous_format";
      case K::Any:
        return nullptr;
      case K::Tensor:
      case K::Generator:
        break;
    }
    return "this type can only default to None, and only when it is optional (e.g. Tensor?)";
  }

  static const char* convert_list(SchemaType::Kind kind, std::vector<DefaultValue> items,
                                  DefaultValue& value) {
    using K = SchemaType::Kind;
    using D = DefaultValue::Kind;
    if (kind == K::Scalar || kind == K::Any) {
      // These take their element kind from the literal itself.
      auto all = [&](auto pred) { return std::all_of(items.begin(), items.end(), pred); };
      if (!items.empty() && all([](const DefaultValue& v) { return v.kind == D::Bool; })) {
        kind = K::Bool;
      } else {
        kind = all([](const DefaultValue& v) { return v.kind == D::Int; }) ? K::Int : K::Float;
      }
    }
    for (DefaultValue& item : items) {
      if (const char* problem = convert_scalar(kind, item)) return problem;
    }
    // Only [] is left for element types whose literals never appear in a list.
    value = DefaultValue::of_int_list({});
    if (kind == K::Bool) value = DefaultValue::of_bool_list({});
    if (kind == K::Float) value = DefaultValue::of_double_list({});
    for (const DefaultValue& item : items) {
      if (kind == K::Bool) {
        value.bool_list.push_back(item.bool_value);
      } else if (kind == K::Float) {
        value.double_list.push_back(item.double_value);
      } else {
        value.int_list.push_back(item.int_value);
      }
    }
    return nullptr;
  }

  static constexpr std::string_view kLiteralHint =
      "expected a default value such as None, True, 0, 1.5, 'mean' or [0, 1]";

  Literal literal() {
    Literal lit;
    if (consume("[")) {
      lit.is_list = true;
      if (consume("]")) return lit;
      do {
        skip_ws();
        size_t start = pos_;
        DefaultValue item = scalar_literal();
        if (item.kind != DefaultValue::Kind::Int && item.kind != DefaultValue::Kind::Double &&
            item.kind != DefaultValue::Kind::Bool) {
          fail_at(start, "invalid list element", "list defaults hold numbers, True or False");
        }
        lit.items.push_back(std::move(item));
      } while (consume(","));
      expect("]", "expected ',' or ']' in the list default");
      return lit;
    }
    lit.scalar = scalar_literal();
    return lit;
  }

  DefaultValue scalar_literal() {
    char c = peek();
    if (c == '\'' || c == '"') return string_literal();
    if (c == '-' || c == '.' || is_digit(c)) return number_literal();
    if (!is_ident_start(c)) fail_unexpected(kLiteralHint);
    std::string word = identifier(kLiteralHint);
    if (word == "None") return DefaultValue::none();
    if (word == "True") return DefaultValue::of_bool(true);
    if (word == "False") return DefaultValue::of_bool(false);
    if (word == "inf") return DefaultValue::of_double(std::numeric_limits<double>::infinity());
    if (word == "nan") return DefaultValue::of_double(std::numeric_limits<double>::quiet_NaN());
    return DefaultValue::of_enum(std::move(word));
  }

  DefaultValue number_literal() {
    size_t start = pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
      return pos_ - from;
    };
    auto bad = [&](std::string_view hint) {
      fail_at(start, detail::concat("bad number literal '", text_.substr(start, pos_ - start), "'"),
              hint);
    };
    bool negative = pos_ < text_.size() && text_[pos_] == '-';
    if (negative) {
      ++pos_;
      if (text_.substr(pos_).starts_with("inf")) {
        pos_ += 3;
        if (pos_ < text_.size() && is_ident_char(text_[pos_])) {
          while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
          bad("expected -inf");
        }
        return DefaultValue::of_double(-std::numeric_limits<double>::infinity());
      }
    }
    size_t mantissa = digits();
    bool is_float = false;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      mantissa += digits();
      is_float = true;
    }
    if (mantissa == 0) bad("expected digits, e.g. -2, 0.5 or 1e-05");
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) bad("expected exponent digits, e.g. 1e-05");
      is_float = true;
    }
    if (pos_ < text_.size() && (is_ident_char(text_[pos_]) || text_[pos_] == '.')) {
      ++pos_;
      bad("expected a number such as -2, 0.5 or 1e-05");
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (is_float) {
      double value = 0.0;
      auto [ptr, ec] = std::from_chars(first, last, value);
      if (ec != std::errc() || ptr != last) bad("the value does not fit in a double");
      return DefaultValue::of_double(value);
    }
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last) bad("the value does not fit in a 64-bit integer");
    return DefaultValue::of_int(value);
  }

  DefaultValue string_literal() {
    size_t start = pos_;
    char quote = text_[pos_++];
    std::string value;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c != '\\') {
        value += c;
        continue;
      }
      // Pairs of (written after the backslash, meant).
      constexpr std::string_view kEscapes = "\\\\''\"\"n\nt\t";
      size_t k = 0;
      while (pos_ < text_.size() && k < kEscapes.size() && kEscapes[k] != text_[pos_]) k += 2;
      if (pos_ >= text_.size() || k >= kEscapes.size()) {
        fail_at(pos_ - 1, "unknown escape in string literal",
                "the escapes are \\\\, \\', \\\", \\n and \\t");
      }
      value += kEscapes[k + 1];
      ++pos_;
    }
    if (pos_ >= text_.size()) {
      fail_at(start, "unterminated string literal",
              detail::concat("expected a closing ", quote, " before the end of the schema"));
    }
    ++pos_;
    return DefaultValue::of_string(std::move(value));
  }
};

}  // namespace

FunctionSchema parse_schema(std::string_view text) { return SchemaParser(text).schema(); }

OperatorName parse_operator_name(std::string_view text) {
  return SchemaParser(text).operator_name_only();
}

}  // namespace strata
