#include <string>
#include <unordered_map>
#include <utility>

#include "dispatcher/dispatch_mode.h"
#include "func/control_flow/lanes.h"
#include "func/control_flow/traced_lowered.h"
#include "func/grad/grad.h"
#include "ops/creation.h"
#include "tensor/error.h"
#include "transforms/grad/gradient_edge.h"
#include "transforms/grad/node.h"
#include "transforms/layer_stack.h"
#include "transforms/tensor_wrapper.h"

// Note [Control flow traced inside grad]
// trace(grad(f)) (and vjp, jacrev) with a cond whose predicate is concrete:
// the forward is recorded as one cond node on the values below the grad
// level, and the outputs get a backward node whose backward is itself a cond
// on the same predicate, of the branches' vjps, so the graph replays both the
// forward and the backward choice from its own data:
// - each branch is traced with the grad layer off the stack, on its operands'
//   values below it; a tensor of the grad level it captures (a closure over
//   x) is swapped for its value below as the branch uses it, so the subgraph
//   captures that value, and the capture becomes an input of the backward
//   node: it gets its gradient like an operand;
// - the backward node saves the subgraphs (a branch's own functions are gone
//   by the time the backward runs), and calls cond(pred, vjp of the true
//   subgraph, vjp of the false subgraph) on the operands, the captures and the
//   cotangents of the floating outputs; under trace that call is recorded like
//   any other cond (under jacrev's vmap, on the values below it).
// Only a grad level directly under trace is handled so: with more layers the
// node would have to lower them too (a grad level below others still refuses).

namespace strata::control_flow {

namespace {

// Swaps each tensor of grad level `level` reaching an op (its layer is off
// the stack while a branch is traced) for its value below, noting the pair.
class LiftGradCaptures final : public DispatchMode {
 public:
  explicit LiftGradCaptures(int64_t level) : level_(level) {}

  void dispatch(const OperatorHandle& op, Stack& stack) override {
    const size_t first = stack.size() - op.schema().arguments().size();
    bool lifted = false;
    for (size_t i = first; i < stack.size(); ++i) {
      if (stack[i].is_tensor()) {
        lifted = lift(stack[i].to_tensor()) || lifted;
      } else if (stack[i].is_tensor_list()) {
        for (Tensor& t : stack[i].to_tensor_list()) lifted = lift(t) || lifted;
      }
    }
    // The call's dispatch keys were the wrappers': a call with the values
    // below dispatches afresh (this mode hidden, the recorder below it not).
    if (lifted) {
      op.call_boxed(stack);
    } else {
      call_next(op, stack);
    }
  }

  // The grad-level tensor whose value below is `below`, or an undefined one.
  Tensor at_level(const Tensor& below) const {
    const auto it = lifted_.find(below.impl());
    return it == lifted_.end() ? Tensor() : it->second;
  }

 private:
  bool lift(Tensor& t) {
    if (!t.defined() || wrapper_at_level(t, level_) == nullptr) return false;
    Tensor below = unwrap_at_level(t, level_);
    lifted_.emplace(below.impl(), t);
    t = std::move(below);
    return true;
  }

  int64_t level_;
  std::unordered_map<const TensorImpl*, Tensor> lifted_;
};

bool floating(const Tensor& t) { return t.defined() && is_floating_point(t.dtype()); }

// A branch as a function of the operands and every grad-level capture (below
// values): its subgraph run on the operands and, for each of its captures,
// that capture's argument or the captured constant.
struct ExplicitBranch {
  std::shared_ptr<const Graph> graph;
  // Per capture of the subgraph: its index among the grad-level captures, or
  // -1 with the value in `constants`.
  std::vector<int64_t> capture_index;
  std::vector<Tensor> constants;

  std::vector<Tensor> operator()(const std::vector<Tensor>& args, size_t operands) const {
    std::vector<Tensor> inputs(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(operands));
    for (size_t j = 0; j < capture_index.size(); ++j) {
      inputs.push_back(capture_index[j] >= 0 ? args[operands + static_cast<size_t>(capture_index[j])]
                                             : constants[j]);
    }
    return graph->run(inputs);
  }
};

// The vjp of a branch: args are the inputs then one cotangent per floating
// output; the result one gradient per floating input (zeros where none flows).
std::vector<Tensor> branch_vjp(const ExplicitBranch& branch, size_t operands,
                               const std::vector<Tensor>& args, size_t inputs) {
  const std::vector<Tensor> cotangents(args.begin() + static_cast<std::ptrdiff_t>(inputs), args.end());
  std::vector<size_t> differentiated;
  std::vector<Tensor> primals;
  for (size_t i = 0; i < inputs; ++i) {
    if (!floating(args[i])) continue;
    differentiated.push_back(i);
    primals.push_back(args[i]);
  }
  auto f = [&](const std::vector<Tensor>& ps) {
    std::vector<Tensor> full(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(inputs));
    for (size_t k = 0; k < differentiated.size(); ++k) full[differentiated[k]] = ps[k];
    std::vector<Tensor> outs;
    for (Tensor& y : branch(full, operands)) {
      if (floating(y)) outs.push_back(std::move(y));
    }
    return outs;
  };
  auto [outs, pullback] = vjp(f, primals);
  std::vector<Tensor> grads = std::get<0>(pullback(cotangents));
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!grads[k].defined()) grads[k] = zeros_like(primals[k]);
  }
  return grads;
}

// The backward of a cond recorded under grad: a cond of the branches' vjps.
class TracedCondNode final : public autograd::Node {
 public:
  TracedCondNode(const HigherOrderOperator& op, autograd::EdgeList edges, Tensor pred,
                 std::vector<Tensor> inputs, size_t operands, std::vector<Tensor> outputs,
                 ExplicitBranch if_true, ExplicitBranch if_false)
      : Node(std::move(edges)),
        op_(op),
        pred_(std::move(pred)),
        inputs_(std::move(inputs)),
        operands_(operands),
        outputs_(std::move(outputs)),
        branches_{std::move(if_true), std::move(if_false)} {}

  autograd::GradList apply(autograd::NodeVector<Tensor>& grads_out) override {
    std::vector<Tensor> args = inputs_;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      if (!floating(outputs_[i])) continue;
      args.push_back(grads_out[i].defined() ? grads_out[i] : zeros_like(outputs_[i]));
    }
    const size_t inputs = inputs_.size();
    const size_t operands = operands_;
    auto vjp_of = [inputs, operands](const ExplicitBranch& branch) {
      return FlatFn([branch, inputs, operands](const std::vector<Tensor>& values) {
        return branch_vjp(branch, operands, values, inputs);
      });
    };
    HopArgs backward;
    backward.operands.push_back(pred_);
    backward.operands.insert(backward.operands.end(), args.begin(), args.end());
    backward.fns = {vjp_of(branches_[0]), vjp_of(branches_[1])};
    const std::vector<Tensor> grads = op_(backward);
    autograd::GradList result(inputs);
    size_t next = 0;
    for (size_t i = 0; i < inputs; ++i) {
      if (!floating(inputs_[i])) continue;
      if (next_edges()[i].node) result[i] = grads.at(next);
      ++next;
    }
    return result;
  }
  uint32_t num_outputs() const override { return static_cast<uint32_t>(outputs_.size()); }
  std::string name() const override { return op_.name() + " (traced)"; }

 private:
  const HigherOrderOperator& op_;
  Tensor pred_;
  std::vector<Tensor> inputs_;
  size_t operands_;
  std::vector<Tensor> outputs_;
  ExplicitBranch branches_[2];
};

}  // namespace

bool traced_under_one_grad() {
  return layer_stack_depth() == 1 && layer_kind(0) == TransformKind::Grad;
}

std::vector<Tensor> trace_cond_under_grad(const HigherOrderOperator& op, const HopArgs& args,
                                          const HigherOrderRecording& recording) {
  const char* name = op.name().c_str();
  const int64_t level = top_layer(name).level;
  std::vector<Tensor> inputs(args.operands.begin() + 1, args.operands.end());
  const size_t operands = inputs.size();
  std::vector<Tensor> below;
  for (const Tensor& t : inputs) below.push_back(unwrap_at_level(t, level));
  const Tensor pred = unwrap_at_level(args.operands.front(), level);
  auto lift = std::make_shared<LiftGradCaptures>(level);
  auto lifted_fn = [&](const FlatFn& fn) {
    return FlatFn([&lift, &fn](const std::vector<Tensor>& values) {
      const DispatchModeGuard guard(lift);
      return fn(values);
    });
  };
  ExplicitBranch branches[2];
  std::vector<Tensor> outputs;
  {
    const BelowTopLayer below_layer;
    TracedFn traced[2] = {recording.trace("true_fn", lifted_fn(args.fns[0]), below),
                          recording.trace("false_fn", lifted_fn(args.fns[1]), below)};
    check_same_leaves(name, "the branches' outputs", "true_fn", traced[0].outputs, "false_fn",
                      traced[1].outputs);
    // The grad-level captures, each once, as inputs after the operands.
    std::unordered_map<const TensorImpl*, int64_t> capture_of;
    for (size_t k = 0; k < 2; ++k) {
      branches[k].graph = traced[k].graph;
      for (const Tensor& c : traced[k].captures) {
        const Tensor at_level = lift->at_level(c);
        int64_t index = -1;
        if (at_level.defined()) {
          const auto [it, added] =
              capture_of.emplace(c.impl(), static_cast<int64_t>(inputs.size() - operands));
          if (added) {
            inputs.push_back(at_level);
            below.push_back(c);
          }
          index = it->second;
        }
        branches[k].capture_index.push_back(index);
        branches[k].constants.push_back(index < 0 ? c : Tensor());
      }
    }
    HopArgs lowered;
    lowered.operands.push_back(pred);
    lowered.operands.insert(lowered.operands.end(), below.begin(),
                            below.begin() + static_cast<std::ptrdiff_t>(operands));
    lowered.attrs = args.attrs;
    const std::vector<ValueType> types = value_types_of(traced[0].outputs);
    outputs = recording.finish(lowered, {std::move(traced[0]), std::move(traced[1])}, types);
  }
  autograd::EdgeList edges = autograd::gradient_edges(inputs, level);
  std::vector<Tensor> wrapped;
  for (const Tensor& y : outputs) wrapped.push_back(wrap_at_level(y, level));
  if (!autograd::any_tracked(edges)) return wrapped;
  auto node = make_intrusive<TracedCondNode>(op, std::move(edges), pred, std::move(below), operands,
                                             outputs, std::move(branches[0]), std::move(branches[1]));
  autograd::set_grad_fn(wrapped, node);
  return wrapped;
}

}  // namespace strata::control_flow
