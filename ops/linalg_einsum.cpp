// einsum: Einstein summation over an explicit or implicit equation.
//
// Supported: subscripts are single letters a-z, A-Z (spaces are ignored); any
// number of operands; an explicit output ("ij,jk->ik") or an implicit one ("ij,jk":
// the letters that appear once, in alphabetical order). Every letter has one size
// in all operands (no broadcasting of size-1 dims), operands share a dtype (Int64,
// Float32, Float64). Not supported: ellipsis ("...").
//
// How it runs (CompositeImplicitAutograd): operands are contracted pairwise, left
// to right, each pair as one bmm. The letters of a pair sort into batch (in both,
// still needed), contracted (in both, not needed afterwards), left-only and
// right-only; each operand is permuted to [batch, left, contracted] resp.
// [batch, contracted, right], folded to 3-D and multiplied. A lone operand that is
// only permuted ("ij->ji") is copied in the output's order. Everything else (a
// letter repeated within an operand, a letter summed within a single operand)
// goes to strata::_einsum_loop, one loop nest over all letters.
#include <array>
#include <string>

#include "dispatcher/op_def.h"
#include "kernels/cpu/linalg.h"
#include "kernels/cuda/linalg.h"
#include "ops/linalg_views.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using EinsumSig = Tensor(std::string_view, ArrayRef<Tensor>);
constexpr const char* kOp = "strata::einsum";

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool contains(const std::string& s, char c) { return s.find(c) != std::string::npos; }

// A checked equation: the letters of each operand and of the output, every
// letter's size, and the operands' dtype.
struct Equation {
  std::vector<std::string> inputs;
  std::string output;
  std::array<int64_t, 128> size_of{};
  ScalarType dtype = kFloat32;

  DimVector sizes(const std::string& letters) const {
    DimVector sizes;
    for (char c : letters) sizes.push_back(size_of[static_cast<unsigned char>(c)]);
    return sizes;
  }
  // The einsum's result.
  TensorMeta result() const { return {sizes(output), dtype}; }
};

Equation parse(std::string_view text, ArrayRef<Tensor> operands) {
  Equation eq;
  eq.inputs.emplace_back();
  bool has_arrow = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '-' && i + 1 < text.size() && text[i + 1] == '>' && !has_arrow) {
      has_arrow = true;
      ++i;
    } else if (c == ',' && !has_arrow) {
      eq.inputs.emplace_back();
    } else if (is_letter(c)) {
      (has_arrow ? eq.output : eq.inputs.back()) += c;
    } else {
      STRATA_FAIL(kOp, "malformed equation '", text, "': unexpected '", c, "' at position ", i,
                  " (subscripts are letters a-z, A-Z; operands are separated by ',' and the "
                  "output follows one '->'; ellipsis is not supported)");
    }
  }
  STRATA_CHECK(eq.inputs.size() == operands.size(), kOp, "equation '", text, "' has ",
               eq.inputs.size(), " operand subscripts but ", operands.size(),
               " tensors were given");
  std::array<int, 128> count{};
  std::array<size_t, 128> first_operand{};
  for (size_t t = 0; t < operands.size(); ++t) {
    const std::string& letters = eq.inputs[t];
    const Tensor& operand = operands[t];
    STRATA_CHECK(static_cast<int64_t>(letters.size()) == operand.dim(), kOp, "operand ", t,
                 " of shape ", shape_string(operand.sizes()), " has ", operand.dim(),
                 " dims but its subscripts '", letters, "' name ", letters.size(), " in '", text,
                 "'");
    STRATA_CHECK(operand.dtype() == operands[0].dtype(), kOp,
                 "expected operands of one dtype, got ", operands[0].dtype(), " and ",
                 operand.dtype(), " (operand ", t, ")");
    for (size_t d = 0; d < letters.size(); ++d) {
      const auto c = static_cast<unsigned char>(letters[d]);
      const int64_t size = operand.sizes()[d];
      if (count[c]++ == 0) {
        eq.size_of[c] = size;
        first_operand[c] = t;
        continue;
      }
      STRATA_CHECK(eq.size_of[c] == size, kOp, "subscript '", letters[d], "' of '", text,
                   "' has size ", eq.size_of[c], " in operand ", first_operand[c], " (shape ",
                   shape_string(operands[first_operand[c]].sizes()), ") but size ", size,
                   " in operand ", t, " (shape ", shape_string(operand.sizes()), ")");
    }
  }
  if (!has_arrow) {
    for (int c = 0; c < 128; ++c) {
      if (count[c] == 1) eq.output += static_cast<char>(c);
    }
  }
  for (size_t i = 0; i < eq.output.size(); ++i) {
    const char c = eq.output[i];
    STRATA_CHECK(count[static_cast<unsigned char>(c)] > 0, kOp, "output subscript '", c, "' of '",
                 text, "' does not appear in any operand");
    STRATA_CHECK(eq.output.find(c) == i, kOp, "output subscript '", c, "' of '", text,
                 "' appears more than once");
  }
  // At least one operand: the equation always has one term, checked against the count.
  eq.dtype = operands[0].dtype();
  STRATA_CHECK(eq.dtype == kInt64 || eq.dtype == kFloat32 || eq.dtype == kFloat64, kOp,
               "unsupported dtype ", eq.dtype, " (expected Int64, Float32 or Float64)");
  return eq;
}

// Whether pairwise bmm contractions compute the equation: no operand repeats a
// letter, and every letter outside the output appears in at least two operands.
bool contracts_pairwise(const Equation& eq) {
  for (const std::string& letters : eq.inputs) {
    for (size_t i = 0; i < letters.size(); ++i) {
      const char c = letters[i];
      if (letters.find(c) != i) return false;
      if (contains(eq.output, c)) continue;
      int operands_with_c = 0;
      for (const std::string& other : eq.inputs) operands_with_c += contains(other, c);
      if (operands_with_c < 2) return false;
    }
  }
  return true;
}

DimVector positions(const std::string& letters, const std::string& order) {
  DimVector dims;
  for (char c : order) dims.push_back(static_cast<int64_t>(letters.find(c)));
  return dims;
}

struct Term {
  std::string letters;
  Tensor value;
};

// a and b as one bmm; `needed` holds the letters used after this pair.
Term contract(const Equation& eq, const Term& a, const Term& b, const std::string& needed) {
  std::string batch, left, summed, right;
  for (char c : a.letters) {
    if (!contains(b.letters, c)) {
      left += c;
    } else {
      (contains(needed, c) ? batch : summed) += c;
    }
  }
  for (char c : b.letters) {
    if (!contains(a.letters, c)) right += c;
  }
  auto as_3d = [](const Term& t, const std::string& outer, const std::string& middle,
                  const std::string& inner) {
    const Tensor permuted =
        linalg::permute_view(t.value, positions(t.letters, outer + middle + inner));
    return linalg::fold_dims(
        permuted, {static_cast<int64_t>(outer.size()), static_cast<int64_t>(middle.size()),
                   static_cast<int64_t>(inner.size())});
  };
  const Tensor product = bmm(as_3d(a, batch, left, summed), as_3d(b, batch, summed, right));
  return {batch + left + right,
          linalg::split_dims(product, {eq.sizes(batch), eq.sizes(left), eq.sizes(right)})};
}

// The term's value with its letters in the output's order, as a new tensor.
Tensor in_output_order(const Term& term, const std::string& output, bool value_is_fresh) {
  if (term.letters == output && value_is_fresh) return term.value;
  return linalg::contiguous_copy(linalg::permute_view(term.value, positions(term.letters, output)));
}

Tensor einsum_loop(std::string_view equation, ArrayRef<Tensor> operands) {
  return STRATA_OP("strata::_einsum_loop", "", EinsumSig).call(equation, operands);
}

Tensor einsum_composite(std::string_view equation, ArrayRef<Tensor> operands) {
  const Equation eq = parse(equation, operands);
  if (!contracts_pairwise(eq)) return einsum_loop(equation, operands);
  Term result{eq.inputs[0], operands[0]};
  for (size_t t = 1; t < operands.size(); ++t) {
    std::string needed = eq.output;
    for (size_t later = t + 1; later < operands.size(); ++later) needed += eq.inputs[later];
    result = contract(eq, result, {eq.inputs[t], operands[t]}, needed);
  }
  return in_output_order(result, eq.output, operands.size() > 1);
}

// The letters _einsum_loop runs over: the output's, then the summed ones in order
// of appearance.
std::string loop_letters(const Equation& eq) {
  std::string letters = eq.output;
  for (const std::string& input : eq.inputs) {
    for (char c : input) {
      if (!contains(letters, c)) letters += c;
    }
  }
  return letters;
}

using EinsumKernel = void (*)(const Tensor&, ArrayRef<Tensor>, const cpu::EinsumLoop&);

// One instance per backend's kernel (cpu:: or gpu::).
template <EinsumKernel kKernel>
Tensor einsum_loop_on(std::string_view equation, ArrayRef<Tensor> operands) {
  const Equation eq = parse(equation, operands);
  const std::string letters = loop_letters(eq);
  cpu::EinsumLoop loop;
  loop.sizes = eq.sizes(letters);
  loop.num_output_letters = static_cast<int64_t>(eq.output.size());
  for (size_t t = 0; t < operands.size(); ++t) {
    DimVector strides(letters.size(), 0);
    for (size_t d = 0; d < eq.inputs[t].size(); ++d) {
      strides[letters.find(eq.inputs[t][d])] += operands[t].strides()[d];
    }
    loop.operand_strides.push_back(strides);
  }
  const TensorMeta result = eq.result();
  Tensor out = make_empty_tensor(result.sizes, result.dtype, operands[0].device(), kOp);
  kKernel(out, operands, loop);
  return out;
}

// ---- derivatives (Note [Derivative formulas]); einsum differentiates through its
// decomposition, whose only op without a formula elsewhere is _einsum_loop.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

// The gradient of operand t with letters L: the output is linear in it, so its
// gradient is the einsum of the output's gradient with the other operands, over the
// letters of L that appear outside it. A letter only in L was summed over: the
// gradient is constant along it. A letter repeated in L reads the operand's diagonal:
// the gradient is zero off that diagonal.
Tensor einsum_operand_grad(const Equation& eq, const Tensor& grad, ArrayRef<Tensor> operands,
                           size_t t) {
  const std::string& letters = eq.inputs[t];
  std::string equation = eq.output;
  std::vector<Tensor> terms{grad};
  for (size_t other = 0; other < operands.size(); ++other) {
    if (other == t) continue;
    equation += "," + eq.inputs[other];
    terms.push_back(operands[other]);
  }
  // Each kept letter at its first position in L, size-1 dims at the others.
  std::string kept;
  DimVector kept_sizes;
  for (size_t p = 0; p < letters.size(); ++p) {
    const char c = letters[p];
    const bool first = letters.find(c) == p;
    const bool outside = contains(equation, c);
    if (first && outside) kept += c;
    kept_sizes.push_back(first && outside ? eq.size_of[static_cast<unsigned char>(c)] : 1);
  }
  const DimVector sizes = eq.sizes(letters);
  Tensor result = einsum(equation + "->" + kept, terms).reshape(kept_sizes).expand(sizes);
  auto positions_along = [&](size_t dim) {
    DimVector shape(letters.size(), 1);
    shape[dim] = sizes[dim];
    return arange(sizes[dim], kInt64, grad.device()).view(shape);
  };
  for (size_t p = 0; p < letters.size(); ++p) {
    const size_t first = letters.find(letters[p]);
    if (first == p) continue;
    result = result * (positions_along(first) == positions_along(p)).to(grad.dtype());
  }
  return result;
}

void einsum_loop_backward(BackwardContext& c) {
  const std::vector<Tensor>& operands = c.input_list(1);
  const Equation eq = parse(c.arg(0).to_string_ref(), operands);
  for (size_t t = 0; t < operands.size(); ++t) {
    if (c.needs_grad(1, t)) c.set_list_grad(1, t, einsum_operand_grad(eq, c.grad(), operands, t));
  }
}

// The output is linear in each operand: its tangent is one term per operand with a
// tangent, the same equation with that operand replaced by its tangent.
void einsum_loop_forward(ForwardContext& c) {
  const std::string_view equation = c.arg(0).to_string_ref();
  const std::vector<Tensor>& tangents = c.list_tangents(1);
  Tensor tangent;
  for (size_t t = 0; t < tangents.size(); ++t) {
    if (!tangents[t].defined()) continue;
    std::vector<Tensor> operands = c.input_list(1);
    operands[t] = tangents[t];
    tangent = autograd::sum_defined(std::move(tangent), einsum_loop(equation, operands));
  }
  c.set_tangent(0, std::move(tangent));
}

// ---- batching rules (Note [Batching rules]): the batch is one more letter of the
// equation, in the batched operands where their batch dim is and first in the
// output, so the samples are one einsum (whose contractions fold the batch into a
// GEMM's rows or a bmm's batch like any other letter).

// A letter the equation does not use, for the batch.
char unused_letter(const Equation& eq, std::string_view equation) {
  std::string used;
  for (const std::string& letters : eq.inputs) used += letters;
  for (const char* range : {"az", "AZ"}) {
    for (char c = range[0]; c <= range[1]; ++c) {
      if (!contains(used, c)) return c;
    }
  }
  STRATA_FAIL(kOp, "equation '", equation,
              "' uses every letter, so vmap has none left for its batch dim");
}

template <Tensor (*kOperator)(std::string_view, ArrayRef<Tensor>)>
Tensor einsum_batched(std::string_view equation, ArrayRef<Tensor> operands) {
  const Equation eq = parse(equation, operands);
  const batching::VmapLevel at = batching::current_vmap_level(kOp);
  const batching::BelowThisLevel below;
  const char batch = unused_letter(eq, equation);
  std::vector<Tensor> values;
  std::string batched_equation;
  bool any_batched = false;
  for (size_t t = 0; t < operands.size(); ++t) {
    const batching::BatchedArg operand = batching::unwrap(operands[t], at.level);
    std::string letters = eq.inputs[t];
    if (operand.batched()) letters.insert(static_cast<size_t>(*operand.bdim), 1, batch);
    any_batched |= operand.batched();
    values.push_back(operand.value);
    batched_equation += (t == 0 ? "" : ",") + letters;
  }
  if (!any_batched) return kOperator(equation, values);
  batched_equation += "->" + (batch + eq.output);
  return batching::make_batched(kOperator(batched_equation, values), 0, at.level);
}

// ---- the rows (Note [One op, one place]) ----

MetaList einsum_loop_shape(OpArgs args) {
  return {parse(args[0].to_string_ref(), args[1].to_tensor_list()).result()};
}

// Every combination of the loop letters multiplies the operands' values (one
// multiply per operand after the first) and adds the product to the output.
int64_t einsum_loop_flops(OpArgs args, const MetaList&) {
  const std::vector<Tensor>& operands = args[1].to_tensor_list();
  const Equation eq = parse(args[0].to_string_ref(), operands);
  int64_t combinations = 1;
  for (int64_t size : eq.sizes(loop_letters(eq))) combinations *= size;
  return static_cast<int64_t>(operands.size()) * combinations;
}

// einsum differentiates through its decomposition (whose contractions are bmm and
// _einsum_loop), but batches as one einsum with the batch as one more letter.
const OpFamily kEinsumOps("linalg_einsum", {
    {.schema = "einsum(str equation, Tensor[] tensors) -> Tensor",
     .decomposition = &einsum_composite,
     .batching = &einsum_batched<&einsum>},
    {.schema = "_einsum_loop(str equation, Tensor[] tensors) -> Tensor",
     .cpu = &einsum_loop_on<&cpu::einsum_loop_kernel>,
     .cuda = &einsum_loop_on<&gpu::einsum_loop_kernel>,
     .derivative = derivative({.backward = &einsum_loop_backward,
                               .forward = &einsum_loop_forward,
                               .saved_inputs = args(1)}),
     .batching = &einsum_batched<&einsum_loop>,
     .shape = &einsum_loop_shape,
     .flops = &einsum_loop_flops},
});

}  // namespace

Tensor einsum(std::string_view equation, ArrayRef<Tensor> operands) {
  return STRATA_OP("strata::einsum", "", EinsumSig).call(equation, operands);
}

}  // namespace strata
