#include <sstream>

#include "dispatcher/dispatch_mode.h"
#include "func/trace/graph.h"
#include "tensor/error.h"
#include "transforms/layer_stack.h"

// Note [Replay]
// Replay walks the nodes once, keeping every value in a vector indexed by its id.
// With no transform running and no dispatch mode pushed, and every input a plain
// tensor of its backend, nothing above the backend could act on a call, so each
// node calls the kernel resolved when it was made (GraphNode::kernel): no key
// computation, no layer stack, no table lookup; a typed call where the kernel's
// signature allows (Note [Typed replay] in typed_replay.cpp), else a boxed one. Otherwise (a replay inside grad or
// vmap, or under a FLOP counter) every node is an ordinary dispatched call, so
// transforms and modes see the replayed ops as they would any others.
//
// A random op's Generator argument is the state its generator had when the op was
// traced (Note [Trace of random ops] in recorder.cpp); each replay draws from a
// fresh generator in that state, so every replay gives the traced numbers.

namespace strata {
namespace {

void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  const size_t expected = g.inputs().size();
  STRATA_CHECK(inputs.size() == expected, "Graph", "replay takes ", expected,
               " input tensor(s) (%", expected > 0 ? g.inputs().front() : 0, "..), got ",
               inputs.size());
  for (size_t i = 0; i < expected; ++i) {
    const int64_t id = g.inputs()[i];
    const ValueType& want = g.values()[static_cast<size_t>(id)].type;
    const Tensor& t = inputs[i];
    STRATA_CHECK(t.defined(), "Graph", "input ", i, " (%", id, ") is an undefined tensor");
    const ValueType got = value_type_of(t);
    STRATA_CHECK(got == want, "Graph", "input ", i, " (%", id, ") was traced as ",
                 to_string(want), " but replay got ", to_string(got));
  }
}

bool plain_backend_tensor(const Tensor& t) {
  return t.key_set() == DispatchKeySet(backend_key(t.device().type));
}

IValue argument_value(const NodeArg& arg, const std::vector<Tensor>& env) {
  switch (arg.kind) {
    case NodeArg::Kind::Value: return env[static_cast<size_t>(arg.values[0])];
    case NodeArg::Kind::ValueList: {
      std::vector<Tensor> list;
      list.reserve(arg.values.size());
      for (int64_t id : arg.values) list.push_back(id < 0 ? Tensor() : env[static_cast<size_t>(id)]);
      return list;
    }
    case NodeArg::Kind::Constant:
      if (arg.constant.tag() == IValue::Tag::Generator) {
        const Generator& traced = arg.constant.to_generator();
        Generator fresh(traced.seed());
        fresh.set_offset(traced.offset());
        return fresh;
      }
      return arg.constant;
  }
  return IValue();
}

// The call a higher-order operator's node stands for, on this replay's values;
// it takes the operator's current key, so a predicate or a trip count comes from
// this replay's data.
void run_hop_node(const Graph& g, const GraphNode& node, std::vector<Tensor>& env) {
  const ArrayRef<NodeArg> node_args = g.args(node);
  const size_t operands = node_args.size() - node.subgraphs.size();
  HopArgs args;
  args.operands.reserve(operands);
  for (size_t i = 0; i < operands; ++i) {
    args.operands.push_back(env[static_cast<size_t>(node_args[i].values[0])]);
  }
  for (size_t s = 0; s < node.subgraphs.size(); ++s) {
    std::vector<Tensor> captured;
    for (int64_t id : node_args[operands + s].values) captured.push_back(env[static_cast<size_t>(id)]);
    args.fns.push_back(subgraph_fn(node.subgraphs[s], std::move(captured)));
  }
  args.attrs = node.attrs;
  const std::vector<Tensor> out = (*node.hop)(args);
  STRATA_CHECK(out.size() == node.results.size(), "Graph", node.hop->name(), " returned ",
               out.size(), " tensors on replay but ", node.results.size(), " when traced");
  for (size_t r = 0; r < out.size(); ++r) env[static_cast<size_t>(node.results[r].values[0])] = out[r];
}

}  // namespace

FlatFn subgraph_fn(std::shared_ptr<const Graph> g, std::vector<Tensor> captured) {
  return [g = std::move(g), captured = std::move(captured)](const std::vector<Tensor>& args) {
    if (captured.empty()) return g->run(args);
    std::vector<Tensor> inputs = args;
    inputs.insert(inputs.end(), captured.begin(), captured.end());
    return g->run(inputs);
  };
}

std::vector<Tensor> Graph::run(const std::vector<Tensor>& inputs) const {
  check_inputs(*this, inputs);
  std::vector<Tensor> env(values_.size());
  bool direct = layer_stack_empty() && dispatch_mode_stack_size() == 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    env[static_cast<size_t>(inputs_[i])] = inputs[i];
    direct = direct && plain_backend_tensor(inputs[i]);
  }
  for (size_t id = 0; id < values_.size(); ++id) {
    if (values_[id].kind == GraphValue::Kind::Constant) env[id] = values_[id].constant;
  }
  Stack stack;
  for (const GraphNode& node : nodes_) {
    if (node.hop != nullptr) {
      run_hop_node(*this, node, env);
      continue;
    }
    if (direct && node.typed) {
      node.typed(node, args_.data() + node.first_arg, env.data());
      continue;
    }
    stack.clear();
    for (const NodeArg& arg : args(node)) stack.push_back(argument_value(arg, env));
    if (direct) {
      node.kernel->call_boxed(node.op, node.keys, stack);
    } else {
      node.op.call_boxed(stack);
    }
    size_t slot = 0;
    for (const NodeResult& result : node.results) {
      if (result.is_list) {
        const std::vector<Tensor>& list = stack[slot].to_tensor_list();
        STRATA_CHECK(list.size() == result.values.size(), "Graph",
                     node.op.operator_name().to_string(), " returned ", list.size(),
                     " tensors on replay but ", result.values.size(), " when traced");
        for (size_t k = 0; k < list.size(); ++k) env[static_cast<size_t>(result.values[k])] = list[k];
      } else {
        env[static_cast<size_t>(result.values[0])] = stack[slot].to_tensor();
      }
      ++slot;
    }
  }
  std::vector<Tensor> outs;
  outs.reserve(outputs_.size());
  for (int64_t id : outputs_) outs.push_back(env[static_cast<size_t>(id)]);
  return outs;
}

}  // namespace strata
