#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include "func/trace/graph.h"
#include "ops/creation.h"
#include "tensor/error.h"

// Reads the text of Note [Trace graph text] (printer.cpp) back into a Graph.

namespace strata {
namespace {

// A parsed literal before the schema gives it a type.
struct Literal {
  enum class Kind { None, Bool, Int, Double, Ref, Word, String, List, Generator };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double d = 0.0;
  std::string text;  // Word, String
  std::vector<Literal> items;
  uint64_t seed = 0, offset = 0;
};

class LineParser {
 public:
  LineParser(std::string_view line, size_t line_number) : s_(line), line_(line_number) {}

  [[noreturn]] void fail(const std::string& what) const {
    std::ostringstream out;
    out << "line " << line_ << ", column " << pos_ + 1 << ": " << what << "\n  " << s_ << "\n  "
        << std::string(pos_, ' ') << '^';
    STRATA_FAIL("Graph::parse", out.str());
  }
  void skip_space() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  bool accept_word(std::string_view w) {
    skip_space();
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  std::string word() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                 s_[pos_] == '_' || s_[pos_] == ':' || s_[pos_] == '.')) {
      ++pos_;
    }
    if (pos_ == start) fail("expected a name");
    return std::string(s_.substr(start, pos_ - start));
  }
  int64_t integer() {
    skip_space();
    const std::string str(s_.substr(pos_));
    char* end = nullptr;
    const long long v = std::strtoll(str.c_str(), &end, 10);
    if (end == str.c_str()) fail("expected an integer");
    pos_ += static_cast<size_t>(end - str.c_str());
    return v;
  }
  int64_t ref() {
    expect('%');
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      fail("expected a value number after '%'");
    }
    return integer();
  }
  ValueType type() {
    ValueType t;
    skip_space();
    const size_t at = pos_;
    const std::string dtype = word();
    if (dtype == "Bool") t.dtype = kBool;
    else if (dtype == "Int64") t.dtype = kInt64;
    else if (dtype == "Float32") t.dtype = kFloat32;
    else if (dtype == "Float64") t.dtype = kFloat64;
    else {
      pos_ = at;
      fail("unknown dtype '" + dtype + "'");
    }
    expect('[');
    while (!accept(']')) {
      if (!t.sizes.empty()) expect(',');
      t.sizes.push_back(integer());
    }
    skip_space();
    if (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) {
      t.device = Device(word());
    }
    return t;
  }
  Literal literal() {
    skip_space();
    Literal l;
    if (peek('%')) {
      l.kind = Literal::Kind::Ref;
      l.i = ref();
    } else if (accept('[')) {
      l.kind = Literal::Kind::List;
      while (!accept(']')) {
        if (!l.items.empty()) expect(',');
        l.items.push_back(literal());
      }
    } else if (accept('\'')) {
      l.kind = Literal::Kind::String;
      const size_t close = s_.find('\'', pos_);
      if (close == std::string_view::npos) fail("unterminated string");
      l.text = std::string(s_.substr(pos_, close - pos_));
      pos_ = close + 1;
    } else if (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) ||
                                     s_[pos_] == '-' || s_[pos_] == '+')) {
      const std::string str(s_.substr(pos_));
      char* end = nullptr;
      const double d = std::strtod(str.c_str(), &end);
      if (end == str.c_str()) fail("expected a number");
      const std::string number = str.substr(0, static_cast<size_t>(end - str.c_str()));
      pos_ += number.size();
      if (number.find_first_of(".eEin") == std::string::npos) {
        l.kind = Literal::Kind::Int;
        l.i = std::strtoll(number.c_str(), nullptr, 10);
      } else {
        l.kind = Literal::Kind::Double;
        l.d = d;
      }
    } else {
      const std::string w = word();
      if (w == "None") {
        l.kind = Literal::Kind::None;
      } else if (w == "True" || w == "False") {
        l.kind = Literal::Kind::Bool;
        l.b = w == "True";
      } else if (w == "inf" || w == "nan") {
        l.kind = Literal::Kind::Double;
        l.d = std::strtod(w.c_str(), nullptr);
      } else if (w == "generator") {
        l.kind = Literal::Kind::Generator;
        expect('(');
        if (!accept_word("seed=")) fail("expected seed=");
        l.seed = static_cast<uint64_t>(integer());
        expect(',');
        if (!accept_word("offset=")) fail("expected offset=");
        l.offset = static_cast<uint64_t>(integer());
        expect(')');
      } else {
        l.kind = Literal::Kind::Word;
        l.text = w;
      }
    }
    return l;
  }

  size_t pos_ = 0;

 private:
  std::string_view s_;
  size_t line_;
};

struct ParseState {
  Graph graph;
  // text id -> graph id; a map, as the text may number its values sparsely
  // (%0, %1000000000000).
  std::unordered_map<int64_t, int64_t> ids;

  int64_t resolve(LineParser& p, int64_t text_id) const {
    const auto it = ids.find(text_id);
    if (it == ids.end()) p.fail("%" + std::to_string(text_id) + " is not defined before this line");
    return it->second;
  }
  void define(LineParser& p, int64_t text_id, int64_t id) {
    if (text_id < 0) p.fail("negative value number");
    if (!ids.emplace(text_id, id).second) p.fail("%" + std::to_string(text_id) + " is defined twice");
  }
};

Scalar scalar_of(LineParser& p, const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::Int: return Scalar(l.i);
    case Literal::Kind::Double: return Scalar(l.d);
    case Literal::Kind::Bool: return Scalar(l.b);
    default: p.fail("expected a number");
  }
}

template <class T, class F>
std::vector<T> list_of(LineParser& p, const Literal& l, F&& each) {
  std::vector<T> out;
  if (l.kind != Literal::Kind::List) {
    out.push_back(each(l));  // a single value broadcasts, as in schema defaults
    return out;
  }
  for (const Literal& item : l.items) out.push_back(each(item));
  (void)p;
  return out;
}

NodeArg node_arg(LineParser& p, const ParseState& st, const Argument& arg, const Literal& l) {
  NodeArg out;
  const SchemaType& type = arg.type;
  if (l.kind == Literal::Kind::None) {
    if (!type.is_optional && !(type.kind == SchemaType::Kind::Generator)) {
      p.fail("argument '" + arg.name + "' may not be None");
    }
    return out;
  }
  if (type.kind == SchemaType::Kind::Tensor) {
    if (type.is_list) {
      if (l.kind != Literal::Kind::List) p.fail("argument '" + arg.name + "' takes a list of values");
      out.kind = NodeArg::Kind::ValueList;
      for (const Literal& item : l.items) {
        if (item.kind == Literal::Kind::None) {
          out.values.push_back(-1);
        } else if (item.kind == Literal::Kind::Ref) {
          out.values.push_back(st.resolve(p, item.i));
        } else {
          p.fail("expected a value reference in '" + arg.name + "'");
        }
      }
    } else {
      if (l.kind != Literal::Kind::Ref) p.fail("argument '" + arg.name + "' takes a value (%n)");
      out.kind = NodeArg::Kind::Value;
      out.values.push_back(st.resolve(p, l.i));
    }
    return out;
  }
  auto as_int = [&](const Literal& x) -> int64_t {
    if (x.kind != Literal::Kind::Int) p.fail("argument '" + arg.name + "' takes integers");
    return x.i;
  };
  auto as_double = [&](const Literal& x) -> double {
    if (x.kind == Literal::Kind::Int) return static_cast<double>(x.i);
    if (x.kind != Literal::Kind::Double) p.fail("argument '" + arg.name + "' takes numbers");
    return x.d;
  };
  auto as_bool = [&](const Literal& x) -> bool {
    if (x.kind != Literal::Kind::Bool) p.fail("argument '" + arg.name + "' takes True or False");
    return x.b;
  };
  switch (type.kind) {
    case SchemaType::Kind::Int:
    case SchemaType::Kind::SymInt:
      out.constant = type.is_list ? IValue(list_of<int64_t>(p, l, as_int)) : IValue(as_int(l));
      break;
    case SchemaType::Kind::Float:
      out.constant = type.is_list ? IValue(list_of<double>(p, l, as_double)) : IValue(as_double(l));
      break;
    case SchemaType::Kind::Bool:
      out.constant = type.is_list ? IValue(list_of<bool>(p, l, as_bool)) : IValue(as_bool(l));
      break;
    case SchemaType::Kind::Scalar: out.constant = scalar_of(p, l); break;
    case SchemaType::Kind::Str:
      if (l.kind != Literal::Kind::String) p.fail("argument '" + arg.name + "' takes a 'string'");
      out.constant = l.text;
      break;
    case SchemaType::Kind::ScalarType: {
      static const std::pair<const char*, ScalarType> kNames[] = {
          {"Bool", kBool}, {"Int64", kInt64}, {"Float32", kFloat32}, {"Float64", kFloat64}};
      for (const auto& [name, dtype] : kNames) {
        if (l.kind == Literal::Kind::Word && l.text == name) out.constant = dtype;
      }
      if (out.constant.is_none()) p.fail("argument '" + arg.name + "' takes a dtype");
      break;
    }
    case SchemaType::Kind::Device:
      if (l.kind != Literal::Kind::Word) p.fail("argument '" + arg.name + "' takes a device");
      out.constant = Device(l.text);
      break;
    case SchemaType::Kind::Generator: {
      if (l.kind != Literal::Kind::Generator) p.fail("argument '" + arg.name + "' takes generator(...)");
      Generator gen(l.seed);
      gen.set_offset(l.offset);
      out.constant = gen;
      break;
    }
    default: p.fail("arguments of type " + type.to_string() + " cannot be parsed");
  }
  return out;
}

Tensor constant_tensor(LineParser& p, const ValueType& type, const Literal& l) {
  if (l.kind != Literal::Kind::List) p.fail("expected a list of values after 'constant'");
  int64_t numel = 1;
  for (int64_t s : type.sizes) numel *= s;
  if (static_cast<int64_t>(l.items.size()) != numel) {
    p.fail("a constant of " + to_string(type) + " needs " + std::to_string(numel) + " values, got " +
           std::to_string(l.items.size()));
  }
  if (type.dtype == kInt64 || type.dtype == kBool) {
    std::vector<int64_t> values;
    for (const Literal& item : l.items) {
      if (item.kind != Literal::Kind::Int) p.fail("expected integer values");
      values.push_back(item.i);
    }
    const Tensor t = tensor(values, type.sizes);
    return type.dtype == kBool ? t.to(kBool) : t;
  }
  std::vector<double> values;
  for (const Literal& item : l.items) {
    if (item.kind != Literal::Kind::Double && item.kind != Literal::Kind::Int) p.fail("expected numbers");
    values.push_back(item.kind == Literal::Kind::Int ? static_cast<double>(item.i) : item.d);
  }
  const Tensor t = tensor(values, type.sizes);
  return type.dtype == kFloat32 ? t.to(kFloat32) : t;
}

void parse_node(LineParser& p, ParseState& st,
                const std::vector<std::pair<bool, std::vector<std::pair<int64_t, ValueType>>>>& results) {
  const size_t name_at = p.pos_;
  const std::string name = p.word();
  const std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(parse_operator_name(name));
  if (!op) {
    p.pos_ = name_at;
    p.fail("unknown operator '" + name + "'");
  }
  const std::vector<Argument>& schema_args = op->schema().arguments();
  p.expect('(');
  std::vector<NodeArg> args;
  while (!p.accept(')')) {
    if (!args.empty()) p.expect(',');
    if (args.size() >= schema_args.size()) p.fail(name + " takes " + std::to_string(schema_args.size()) + " arguments");
    const Argument& arg = schema_args[args.size()];
    const size_t at = p.pos_;
    // Tensor arguments are positional, but a None one prints as name=None.
    if (!p.accept_word(arg.name + "=") && arg.type.kind != SchemaType::Kind::Tensor) {
      p.pos_ = at;
      p.skip_space();
      p.fail("expected argument '" + arg.name + "='");
    }
    args.push_back(node_arg(p, st, arg, p.literal()));
  }
  if (args.size() != schema_args.size()) {
    p.fail(name + " takes " + std::to_string(schema_args.size()) + " arguments, got " + std::to_string(args.size()));
  }
  if (results.size() != op->schema().returns().size()) {
    p.fail(name + " returns " + std::to_string(op->schema().returns().size()) + " results");
  }
  Device device;
  if (!results.empty() && !results[0].second.empty()) device = results[0].second[0].second.device;
  const size_t node = st.graph.add_node(*op, replay_keys(device), std::move(args));
  for (const auto& [is_list, values] : results) {
    st.graph.begin_result(node, is_list);
    for (const auto& [text_id, type] : values) st.define(p, text_id, st.graph.add_node_output(node, type));
  }
}

void parse_line(LineParser& p, ParseState& st, bool& returned) {
  if (p.at_end()) return;
  if (returned) p.fail("nothing may follow the return line");
  if (p.accept_word("return")) {
    returned = true;
    while (!p.at_end()) {
      if (!st.graph.outputs().empty()) p.expect(',');
      st.graph.add_output(st.resolve(p, p.ref()));
    }
    return;
  }
  std::vector<std::pair<bool, std::vector<std::pair<int64_t, ValueType>>>> results;
  auto typed = [&]() {
    const int64_t id = p.ref();
    p.expect(':');
    return std::pair{id, p.type()};
  };
  if (p.accept('(')) {
    p.expect(')');
  } else {
    do {
      if (p.accept('[')) {
        results.push_back({true, {}});
        while (!p.accept(']')) {
          if (!results.back().second.empty()) p.expect(',');
          results.back().second.push_back(typed());
        }
      } else {
        results.push_back({false, {typed()}});
      }
    } while (p.accept(','));
  }
  p.expect('=');
  if (results.size() == 1 && !results[0].first) {
    const auto [text_id, type] = results[0].second[0];
    if (p.accept_word("input")) {
      st.define(p, text_id, st.graph.add_input(type));
      if (!p.at_end()) p.fail("unexpected text after 'input'");
      return;
    }
    if (p.accept_word("constant")) {
      const Literal values = p.literal();
      Tensor constant = constant_tensor(p, type, values);
      if (p.accept_word("wrapped")) constant.impl()->set_wrapped_number(true);
      st.define(p, text_id, st.graph.add_constant(std::move(constant)));
      if (!p.at_end()) p.fail("unexpected text after the constant's values");
      return;
    }
  }
  parse_node(p, st, results);
  if (!p.at_end()) p.fail("unexpected text after the call");
}

}  // namespace

Graph Graph::parse(std::string_view text) {
  ParseState st;
  bool returned = false;
  size_t line_number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    LineParser p(text.substr(start, end - start), ++line_number);
    parse_line(p, st, returned);
    start = end + 1;
  }
  if (!returned) {
    LineParser p("", line_number);
    p.fail("the graph has no return line");
  }
  return std::move(st.graph);
}

}  // namespace strata
