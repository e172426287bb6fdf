#pragma once

#include <cstdint>
#include <vector>

#include "dispatcher/ivalue.h"
#include "dispatcher/kernel_function.h"
#include "tensor/inline_vector.h"

namespace strata {
class OperatorHandle;
}

// Note [Derivative formulas]
// An operator's reverse-mode derivative is a formula registered at the Autograd
// key next to the op's schema and kernels:
//
//   STRATA_LIBRARY_IMPL(strata, Autograd, m) {
//     m.impl("sin", autograd::derivative({
//         .backward = [](autograd::BackwardContext& c) { c.set_grad(0, c.grad() *
//         c.input(0).cos()); }, .saved_inputs = autograd::args(0)}));
//   }
//
// The formula sees the gradients of the outputs, the op's arguments (non-tensor
// ones always; tensor ones when listed in saved_inputs, as of the forward call)
// and the outputs listed in saved_outputs. It computes with ordinary ops, so the
// backward pass is itself differentiable by an outer grad level. A gradient whose
// shape is a broadcast of its input's is summed back to the input's shape, and
// cast to the input's dtype, after the formula returns.
//
// The same struct holds the forward-mode formula (Note [Forward formulas]):
//
//   .forward = [](autograd::ForwardContext& c) {
//     c.set_tangent(0, c.tangent(0) * c.input(0).cos()); }
//
// It runs when the op is called at a jvp level with a tangent on some input. It
// sees the op's arguments and outputs as the level below sees them and each
// tensor argument's tangent (undefined: zero), and sets the tangent of each
// floating-point output. It too computes with ordinary ops, with the jvp layer
// taken off the stack, so outer levels (grad, vmap, jvp) see and transform it.
// A tangent that broadcasts to its output's shape is expanded to it, and cast
// to the output's dtype, after the formula returns.

namespace strata::autograd {

class FormulaNode;

// The gradients a backward node produces, one per next edge (input slot).
using GradList = InlineVector<Tensor, 2>;

// The arguments of the call a formula differentiates, as both modes read them.
class FormulaArguments {
 public:
  // args: one value per argument of the op.
  explicit FormulaArguments(const IValue* args) : args_(args) {}
  // Any argument as passed (in reverse mode, tensor arguments only if saved).
  const IValue& arg(size_t arg) const { return args_[arg]; }
  int64_t int_arg(size_t arg) const { return this->arg(arg).to_int(); }
  double double_arg(size_t arg) const { return this->arg(arg).to_double(); }
  bool bool_arg(size_t arg) const { return this->arg(arg).to_bool(); }
  Scalar scalar_arg(size_t arg) const { return this->arg(arg).to_scalar(); }
  const std::vector<int64_t>& int_list_arg(size_t arg) const {
    return this->arg(arg).to_int_list();
  }

 private:
  const IValue* args_;
};

class BackwardContext : public FormulaArguments {
 public:
  // Gradient of output i; zeros if nothing flowed into it.
  const Tensor& grad(size_t output = 0) const;
  // A tensor argument listed in saved_inputs (unwrapped to the level below).
  const Tensor& input(size_t arg) const;
  const std::vector<Tensor>& input_list(size_t arg) const;
  // An output listed in saved_outputs.
  const Tensor& output(size_t i = 0) const;
  // Shape and dtype of a tensor argument (element `element` of a tensor list), saved or not.
  IntArrayRef input_sizes(size_t arg, size_t element = 0) const;
  ScalarType input_dtype(size_t arg, size_t element = 0) const;
  size_t input_list_size(size_t arg) const;

  // Whether argument `arg` (any element of a list) needs a gradient.
  bool needs_grad(size_t arg) const { return arg < 32 && (needs_grad_args_ >> arg & 1u); }
  bool needs_grad(size_t arg, size_t element) const;
  // Whether tensor arguments a and b (both saved) are one tensor at this level,
  // as in x * x: the same value below it and the same gradient edge, so that one
  // gradient may stand for both. Arguments passed twice through grad<0, 1> are
  // two tensors here, with two edges.
  bool same_tensor(size_t a, size_t b) const;
  void set_grad(size_t arg, Tensor grad);
  void set_list_grad(size_t arg, size_t element, Tensor grad);

 private:
  friend class FormulaNode;
  using GradsOut = std::vector<Tensor, CachedAllocator<Tensor>>;
  BackwardContext(FormulaNode& node, GradsOut& grads_out, GradList& grads_in);
  size_t slot(size_t arg, size_t element) const;

  FormulaNode& node_;
  GradsOut& grads_out_;
  GradList& grads_in_;
  // Bit i: some element of argument i needs a gradient (asked per argument by
  // nearly every formula, so computed once per node).
  uint32_t needs_grad_args_ = 0;
};

// An op's outputs, or their tangents, at a jvp level.
using ForwardOutputs = std::vector<Tensor, CachedAllocator<Tensor>>;

// Defined in func/jvp/forward_context.cpp, with linear_forward and sum_defined
// below: they call zeros_like (Note [Operator calls live above ops/]).
class ForwardContext : public FormulaArguments {
 public:
  ForwardContext(const OperatorHandle& op, const Stack& primals, const Stack& tangents,
                 const ForwardOutputs& outputs, ForwardOutputs& output_tangents)
      : FormulaArguments(primals.data()),
        op_(op),
        tangents_(tangents),
        outputs_(outputs),
        output_tangents_(output_tangents) {}

  const OperatorHandle& op() const { return op_; }
  // Tensor argument `arg` as the level below sees it (an in-place op's self as
  // it was before the op wrote it).
  const Tensor& input(size_t arg) const { return this->arg(arg).to_tensor(); }
  const std::vector<Tensor>& input_list(size_t arg) const {
    return this->arg(arg).to_tensor_list();
  }

  // The tangent of tensor argument `arg`; undefined when it has none (zero).
  const Tensor& tangent(size_t arg) const;
  bool has_tangent(size_t arg) const { return tangent(arg).defined(); }
  // The tangent, or zeros shaped like the argument.
  Tensor tangent_or_zeros(size_t arg) const;
  // Per element of a tensor-list argument: its tangent or undefined.
  const std::vector<Tensor>& list_tangents(size_t arg) const;
  // Whether any element of a tensor-list argument has a tangent.
  bool list_has_tangent(size_t arg) const;

  const Tensor& output(size_t i = 0) const { return outputs_[i]; }
  size_t num_outputs() const { return outputs_.size(); }
  void set_tangent(size_t output, Tensor tangent);

 private:
  const OperatorHandle& op_;
  const Stack& tangents_;  // per argument: a tangent, a list of them, or none
  const ForwardOutputs& outputs_;
  ForwardOutputs& output_tangents_;
};

using BackwardFormula = void (*)(BackwardContext&);
using ForwardFormula = void (*)(ForwardContext&);

struct Derivative {
  BackwardFormula backward = nullptr;
  ForwardFormula forward = nullptr;
  uint32_t saved_inputs = 0;   // bit i: the formula reads tensor argument i
  uint32_t saved_outputs = 0;  // bit i: the formula reads output i
};

// A mask of argument (or output) positions for Derivative's saved_* fields.
template <class... I>
constexpr uint32_t args(I... positions) {
  return ((uint32_t{1} << positions) | ... | 0u);
}

// Forward formulas shared by many ops.
// An op linear in its floating-point tensor arguments (views, reshapes, sums,
// joins, gathers): the tangent is the op applied to the tangents (zeros for
// arguments without one), the other arguments (indices, masks) as they are.
void linear_forward(ForwardContext& c);

// The sum of the tangent terms that are defined (an input without a tangent
// contributes an undefined term); undefined if neither is.
Tensor sum_defined(Tensor a, const Tensor& b);

// The tangent of an op bilinear in arguments a and b: op(t_a, b) + op(a, t_b),
// one call per argument that has a tangent.
template <class Op>
Tensor bilinear_tangent(const ForwardContext& c, size_t a_arg, size_t b_arg, const Op& op) {
  const Tensor& ta = c.tangent(a_arg);
  const Tensor& tb = c.tangent(b_arg);
  return sum_defined(ta.defined() ? op(ta, c.input(b_arg)) : Tensor(),
                     tb.defined() ? op(c.input(a_arg), tb) : Tensor());
}

// The Autograd kernel of an op with this derivative.
KernelFunction derivative(Derivative d);
// The Autograd kernel of an op whose outputs never carry a gradient
// (comparisons, sign, random sampling, factories like zeros_like).
KernelFunction non_differentiable();

// Sums `grad` over the leading and size-1 dims it was broadcast along, back to `sizes`.
Tensor sum_to(const Tensor& grad, IntArrayRef sizes);

}  // namespace strata::autograd
