#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include "func/trace/graph.h"
#include "func/trace/line_parser.h"
#include "ops/creation.h"
#include "tensor/error.h"

// Reads the text of Note [Trace graph text] (printer.cpp) back into a Graph.

namespace strata {
namespace {

using graph_text::LineParser;
using graph_text::Literal;

using ResultLists = std::vector<std::pair<bool, std::vector<std::pair<int64_t, ValueType>>>>;

// A higher-order operator's line, waiting for its subgraphs' lines.
struct PendingHop {
  const HigherOrderOperator* hop = nullptr;
  NodeArgs args;
  std::vector<int64_t> attrs;
  ResultLists results;
  size_t subgraphs = 0;
};

struct ParseState {
  Graph graph;
  // text id -> graph id; a map, as the text may number its values sparsely
  // (%0, %1000000000000).
  std::unordered_map<int64_t, int64_t> ids;
  std::optional<PendingHop> pending;

  int64_t resolve(LineParser& p, int64_t text_id) const {
    const auto it = ids.find(text_id);
    if (it == ids.end()) p.fail(detail::concat("%", text_id, " is not defined before this line"));
    return it->second;
  }
  void define(LineParser& p, int64_t text_id, int64_t id) {
    if (text_id < 0) p.fail("negative value number");
    if (!ids.emplace(text_id, id).second) p.fail(detail::concat("%", text_id, " is defined twice"));
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

// "name(%a, %b, captures=[[%c], []], attrs=[1, 0]) {": the subgraphs follow.
void parse_hop_header(LineParser& p, ParseState& st, const HigherOrderOperator& hop,
                      const ResultLists& results) {
  PendingHop pending;
  pending.hop = &hop;
  p.expect('(');
  while (!p.accept_word("captures=")) {
    NodeArg arg;
    arg.kind = NodeArg::Kind::Value;
    arg.values.push_back(st.resolve(p, p.ref()));
    pending.args.push_back(std::move(arg));
    p.expect(',');
  }
  const Literal captures = p.literal();
  if (captures.kind != Literal::Kind::List) p.fail("expected a list of captured values per subgraph");
  for (const Literal& list : captures.items) {
    if (list.kind != Literal::Kind::List) p.fail("expected a list of captured values");
    NodeArg arg;
    arg.kind = NodeArg::Kind::ValueList;
    for (const Literal& ref : list.items) {
      if (ref.kind != Literal::Kind::Ref) p.fail("expected a value reference");
      arg.values.push_back(st.resolve(p, ref.i));
    }
    pending.args.push_back(std::move(arg));
  }
  pending.subgraphs = captures.items.size();
  p.expect(',');
  if (!p.accept_word("attrs=")) p.fail("expected 'attrs='");
  const Literal attrs = p.literal();
  if (attrs.kind != Literal::Kind::List) p.fail("expected a list of integers after 'attrs='");
  for (const Literal& a : attrs.items) {
    if (a.kind != Literal::Kind::Int) p.fail("expected integers after 'attrs='");
    pending.attrs.push_back(a.i);
  }
  p.expect(')');
  p.expect('{');
  for (const auto& [is_list, values] : results) {
    if (is_list || values.size() != 1) p.fail(hop.name() + "'s results are single tensors");
  }
  pending.results = results;
  st.pending = std::move(pending);
}

void parse_node(LineParser& p, ParseState& st, const ResultLists& results) {
  const size_t name_at = p.pos_;
  const std::string name = p.word();
  const std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(parse_operator_name(name));
  if (!op) {
    if (const HigherOrderOperator* hop = find_higher_order_op(name)) {
      parse_hop_header(p, st, *hop, results);
      return;
    }
    p.pos_ = name_at;
    p.fail("unknown operator '" + name + "'");
  }
  const std::vector<Argument>& schema_args = op->schema().arguments();
  p.expect('(');
  NodeArgs args;
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
  ResultLists results;
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

namespace {

Graph parse_block(std::string_view text, size_t first_line);

// The lines after a higher-order operator's header, up to its closing "}":
// each subgraph's lines indented two spaces, "} {" between subgraphs.
void parse_subgraphs(ParseState& st, std::string_view text, size_t& start, size_t& line_number) {
  PendingHop hop = std::move(*st.pending);
  st.pending.reset();
  std::vector<std::shared_ptr<const Graph>> subgraphs;
  std::string body;
  size_t body_first_line = line_number + 1;
  while (true) {
    if (start >= text.size()) {
      LineParser p("", line_number);
      p.fail("the subgraphs of " + hop.hop->name() + " have no closing '}'");
    }
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line == "}" || line == "} {") {
      subgraphs.push_back(std::make_shared<const Graph>(parse_block(body, body_first_line)));
      body.clear();
      body_first_line = line_number + 1;
      if (line == "}") break;
      continue;
    }
    if (line.substr(0, 2) != "  ") {
      LineParser p(line, line_number);
      p.fail("expected a subgraph line indented two spaces, '} {' or '}'");
    }
    body += line.substr(2);
    body += '\n';
  }
  if (subgraphs.size() != hop.subgraphs) {
    LineParser p("", line_number);
    p.fail(hop.hop->name() + " lists captures for " + std::to_string(hop.subgraphs) +
           " subgraphs but has " + std::to_string(subgraphs.size()));
  }
  const size_t node = st.graph.add_hop_node(*hop.hop, std::move(hop.args), std::move(subgraphs),
                                            std::move(hop.attrs));
  LineParser p("", line_number);
  for (const auto& [is_list, values] : hop.results) {
    st.graph.begin_result(node, false);
    st.define(p, values[0].first, st.graph.add_node_output(node, values[0].second));
  }
}

Graph parse_block(std::string_view text, size_t first_line) {
  ParseState st;
  bool returned = false;
  size_t line_number = first_line - 1;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    LineParser p(text.substr(start, end - start), ++line_number);
    parse_line(p, st, returned);
    start = end + 1;
    if (st.pending) parse_subgraphs(st, text, start, line_number);
  }
  if (!returned) {
    LineParser p("", line_number);
    p.fail("the graph has no return line");
  }
  return std::move(st.graph);
}

}  // namespace

Graph Graph::parse(std::string_view text) { return parse_block(text, 1); }

}  // namespace strata
