#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "func/trace/graph.h"

// Note [Trace graph text]
// One line per value or node, values named %<id> and typed "Float64[2, 3]":
//   %0 : Float64[2, 3] = input
//   %1 : Float64[3] = constant [1.0, 2.0, 3.0]
//   %2 : Float64[2, 3] = strata::mul.Tensor(%0, %1)
//   %3 : Float64[] = strata::sum(%2, dtype=None)
//   [%4 : Float64[1, 3], %5 : Float64[1, 3]] = strata::unbind.int(%2, dim=0)
//   return %3, %5
// Tensor arguments are positional, every other argument is name=value with the
// schema's name; a node with several results lists them with commas, a tensor-list
// result in brackets, none as (). Numbers print exactly (17 significant digits); a
// floating value always has a '.' or an exponent, so 2 and 2.0 stay apart (they
// promote differently), and a constant made from a C++ number (`x * 2.5`) says
// `wrapped` after its value, as it promotes like one. A random op's generator prints as generator(seed=S, offset=O).
// A higher-order operator's node lists its operands, then the values each
// subgraph captures and its static attributes, then its subgraphs, each a
// graph's text indented two spaces inside braces:
//   %3 : Float64[2] = strata::cond(%2, %0, captures=[[], [%1]], attrs=[]) {
//     %0 : Float64[2] = input
//     %1 : Float64[2] = strata::sin(%0)
//     return %1
//   } {
//     ...
//   }

namespace strata {
namespace {

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%.17g", v);
  std::string s = buffer;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void print_value_ref(std::ostream& out, int64_t id) {
  if (id < 0) {
    out << "None";
  } else {
    out << '%' << id;
  }
}

template <class List, class F>
void print_list(std::ostream& out, const List& list, F&& each) {
  out << '[';
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out << ", ";
    each(list[i]);
  }
  out << ']';
}

void print_constant(std::ostream& out, const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None: out << "None"; break;
    case IValue::Tag::Double: out << format_double(v.to_double()); break;
    case IValue::Tag::Int: out << v.to_int(); break;
    case IValue::Tag::Bool: out << (v.to_bool() ? "True" : "False"); break;
    case IValue::Tag::Scalar: {
      const Scalar s = v.to_scalar();
      if (s.is_floating_point()) {
        out << format_double(s.to_double());
      } else if (s.is_bool()) {
        out << (s.to_bool() ? "True" : "False");
      } else {
        out << s.to_int();
      }
      break;
    }
    case IValue::Tag::ScalarType: out << v.to_scalar_type(); break;
    case IValue::Tag::Device: out << v.to_device().str(); break;
    case IValue::Tag::String: out << '\'' << v.to_string_ref() << '\''; break;
    case IValue::Tag::IntList: print_list(out, v.to_int_list(), [&](int64_t x) { out << x; }); break;
    case IValue::Tag::DoubleList:
      print_list(out, v.to_double_list(), [&](double x) { out << format_double(x); });
      break;
    case IValue::Tag::BoolList:
      print_list(out, v.to_bool_list(), [&](bool x) { out << (x ? "True" : "False"); });
      break;
    case IValue::Tag::Generator:
      out << "generator(seed=" << v.to_generator().seed() << ", offset=" << v.to_generator().offset()
          << ')';
      break;
    case IValue::Tag::Tensor:
    case IValue::Tag::TensorList: out << "<tensor>"; break;
  }
}

}  // namespace

std::string constant_text(const IValue& v) {
  std::ostringstream out;
  print_constant(out, v);
  return out.str();
}

namespace {

void print_typed(std::ostream& out, const Graph& g, int64_t id) {
  out << '%' << id << " : " << to_string(g.values()[static_cast<size_t>(id)].type);
}

void print_hop_call(std::ostream& out, const Graph& g, const GraphNode& node) {
  out << node.hop->name() << '(';
  const ArrayRef<NodeArg> args = g.args(node);
  const size_t operands = args.size() - node.subgraphs.size();
  for (size_t i = 0; i < operands; ++i) {
    if (i > 0) out << ", ";
    print_value_ref(out, args[i].values[0]);
  }
  out << (operands > 0 ? ", " : "") << "captures=";
  print_list(out, ArrayRef<NodeArg>(args.begin() + operands, args.size() - operands),
             [&](const NodeArg& arg) { print_list(out, arg.values, [&](int64_t id) { print_value_ref(out, id); }); });
  out << ", attrs=";
  print_list(out, node.attrs, [&](int64_t a) { out << a; });
  out << ") {\n";
  for (size_t s = 0; s < node.subgraphs.size(); ++s) {
    if (s > 0) out << "} {\n";
    std::istringstream lines(node.subgraphs[s]->to_string());
    for (std::string line; std::getline(lines, line);) out << "  " << line << '\n';
  }
  out << "}\n";
}

void print_node(std::ostream& out, const Graph& g, const GraphNode& node) {
  if (node.results.empty()) out << "()";
  for (size_t r = 0; r < node.results.size(); ++r) {
    if (r > 0) out << ", ";
    const NodeResult& result = node.results[r];
    if (result.is_list) {
      print_list(out, result.values, [&](int64_t id) { print_typed(out, g, id); });
    } else {
      print_typed(out, g, result.values[0]);
    }
  }
  out << " = ";
  if (node.hop != nullptr) {
    print_hop_call(out, g, node);
    return;
  }
  out << node.op.operator_name().to_string() << '(';
  const std::vector<Argument>& schema_args = node.op.schema().arguments();
  const ArrayRef<NodeArg> args = g.args(node);
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) out << ", ";
    const NodeArg& arg = args[i];
    switch (arg.kind) {
      case NodeArg::Kind::Value: print_value_ref(out, arg.values[0]); break;
      case NodeArg::Kind::ValueList:
        print_list(out, arg.values, [&](int64_t id) { print_value_ref(out, id); });
        break;
      case NodeArg::Kind::Constant:
        out << schema_args[i].name << '=';
        print_constant(out, arg.constant);
        break;
    }
  }
  out << ")\n";
}

void print_source(std::ostream& out, const Graph& g, size_t id) {
  const GraphValue& v = g.values()[id];
  print_typed(out, g, static_cast<int64_t>(id));
  if (v.kind == GraphValue::Kind::Input) {
    out << " = input\n";
    return;
  }
  out << " = constant ";
  if (is_floating_point(v.type.dtype)) {
    print_list(out, v.constant.to_vector<double>(), [&](double x) { out << format_double(x); });
  } else {
    print_list(out, v.constant.to_vector<int64_t>(), [&](int64_t x) { out << x; });
  }
  if (v.constant.impl()->is_wrapped_number()) out << " wrapped";
  out << '\n';
}

}  // namespace

// Lines in id order: each input or constant just before the first node whose
// results have larger ids, so a parse numbers the values as the text does.
std::string Graph::to_string() const {
  std::ostringstream out;
  size_t next_value = 0;
  auto print_sources_below = [&](size_t end) {
    for (; next_value < end; ++next_value) {
      if (values_[next_value].kind != GraphValue::Kind::NodeOutput) print_source(out, *this, next_value);
    }
  };
  for (const GraphNode& node : nodes_) {
    print_sources_below(values_before(*this, node));
    print_node(out, *this, node);
  }
  print_sources_below(values_.size());
  out << "return";
  for (size_t i = 0; i < outputs_.size(); ++i) out << (i == 0 ? " %" : ", %") << outputs_[i];
  out << '\n';
  return out.str();
}

}  // namespace strata
