// Op-table entries: einsum, one per equation, and the loop kernel its
// decomposition falls back to (strata::_einsum_loop), which computes any equation.
// The reference is one loop over every combination of the equation's letters,
// written independently of the kernels.
#include <algorithm>
#include <map>
#include <string_view>

#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

struct ParsedEquation {
  std::vector<std::string> inputs;
  std::string output;
};

ParsedEquation split_equation(const std::string& equation) {
  ParsedEquation parsed;
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  size_t start = 0;
  for (size_t comma = lhs.find(',');; comma = lhs.find(',', start)) {
    parsed.inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    parsed.output = equation.substr(arrow + 2);
  } else {
    // Implicit output: the letters used once, sorted.
    std::map<char, int> uses;
    for (const std::string& in : parsed.inputs) {
      for (char c : in) ++uses[c];
    }
    for (const auto& [c, n] : uses) {
      if (n == 1) parsed.output += c;
    }
  }
  return parsed;
}

Tensor reference_einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  const ParsedEquation eq = split_equation(equation);
  std::map<char, int64_t> size_of;
  std::vector<HostArray> arrays;
  for (size_t t = 0; t < operands.size(); ++t) {
    arrays.push_back(HostArray::of(operands[t]));
    for (size_t d = 0; d < eq.inputs[t].size(); ++d) size_of[eq.inputs[t][d]] = arrays[t].sizes[d];
  }
  std::string letters = eq.output;
  for (const auto& [c, size] : size_of) {
    if (letters.find(c) == std::string::npos) letters += c;
  }
  std::vector<int64_t> loop_sizes;
  for (char c : letters) loop_sizes.push_back(size_of[c]);
  std::vector<int64_t> out_sizes(loop_sizes.begin(), loop_sizes.begin() + eq.output.size());
  int64_t out_numel = 1;
  for (int64_t s : out_sizes) out_numel *= s;
  std::vector<double> out(static_cast<size_t>(out_numel), 0.0);
  for_each_index(loop_sizes, [&](const std::vector<int64_t>& index) {
    double product = 1;
    for (size_t t = 0; t < arrays.size(); ++t) {
      int64_t flat = 0;
      for (size_t d = 0; d < eq.inputs[t].size(); ++d) {
        flat = flat * arrays[t].sizes[d] + index[letters.find(eq.inputs[t][d])];
      }
      product *= arrays[t].values[static_cast<size_t>(flat)];
    }
    int64_t out_flat = 0;
    for (size_t d = 0; d < out_sizes.size(); ++d) out_flat = out_flat * out_sizes[d] + index[d];
    out[static_cast<size_t>(out_flat)] += product;
  });
  return from_values(out, out_sizes, operands[0].dtype());
}

// Letter sizes of each sample: ordinary, all 1, and one letter of size 0.
std::vector<std::pair<std::string, std::map<char, int64_t>>> size_cases() {
  const std::map<char, int64_t> ordinary{{'b', 2}, {'i', 3}, {'j', 4}, {'k', 5}, {'l', 2}};
  std::map<char, int64_t> ones = ordinary;
  for (auto& [c, size] : ones) size = 1;
  std::map<char, int64_t> empty_i = ordinary;
  empty_i['i'] = 0;
  return {{"", ordinary}, {"size-1 ", ones}, {"i = 0 ", empty_i}};
}

std::vector<Sample> einsum_samples(const std::string& equation, ScalarType dtype) {
  const ParsedEquation eq = split_equation(equation);
  std::vector<Sample> samples;
  for (const auto& [label, sizes] : size_cases()) {
    for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Sliced}) {
      Sample sample;
      sample.description = label;
      sample.description += to_string(layout);
      for (size_t t = 0; t < eq.inputs.size(); ++t) {
        std::vector<int64_t> shape;
        for (char c : eq.inputs[t]) shape.push_back(sizes.at(c));
        sample.inputs.push_back(make_tensor(shape, dtype, layout, -2.0, 2.0, t + 1));
        sample.description += ' ';
        sample.description += shape_string(shape);
      }
      samples.push_back(std::move(sample));
    }
  }
  return samples;
}

using EinsumFn = Tensor (*)(std::string_view, ArrayRef<Tensor>);

Tensor einsum_loop(std::string_view equation, ArrayRef<Tensor> operands) {
  static const auto op = Dispatcher::singleton()
                             .findSchemaOrThrow("strata::_einsum_loop", "")
                             .typed<Tensor(std::string_view, ArrayRef<Tensor>)>();
  return op.call(equation, operands);
}

// The entry "<name>(<equation>)" of `op` (einsum or _einsum_loop).
OpInfo einsum_entry(const std::string& name, EinsumFn op, const std::string& equation) {
  OpInfo info;
  // Test names avoid '-', which starts a negative pattern in --gtest_filter.
  info.name = name + "(";
  for (char c : equation) {
    if (c != '-') info.name += c;
  }
  info.name += ')';
  info.dtypes = numeric_dtypes();
  info.samples = [equation](ScalarType dtype) { return einsum_samples(equation, dtype); };
  info.op = [equation, op](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{op(equation, in)};
  };
  info.reference = [equation](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{reference_einsum(equation, in)};
  };
  return info;
}

STRATA_OP_INFOS(linalg_einsum) {
  const std::vector<std::string> equations{
      // Pairwise bmm contractions, and their operand or output transposes.
      "bi,bj->bij",
      "bj,bi->bij",
      "bi,bj->bji",
      "bij,bj->bi",
      "bji,bj->bi",
      "ij,bj->bi",
      "ji,bj->bi",
      "bj,ij->bi",
      "ij,jk->ik",
      "ji,kj->ik",
      "ij,jk->ki",
      "jk,ij->ik",
      "bij,bjk->bik",
      "bji,bkj->bik",
      "bij,bjk->bki",
      "i,i->",
      "bi,bi->b",
      "ib,bi->b",
      "i,j->ij",
      "ij,jk",
      "ij,jk,kl->il",
      "bij,jk,bk->bi",
      // One operand: a permutation is a copy; the rest runs the general loop.
      "ij->ji",
      "bij->jib",
      "ij->i",
      "ii->i",
      "ii->",
      "iji->j",
      "ij,ij,ij->",
      // Several operands through the loop: a repeated letter, a letter summed in one.
      "iij,jk->ki",
      "ij,jk->i",
  };
  // The loop on its own, on equations einsum contracts with bmm and on those it
  // gives to the loop.
  const std::vector<std::string> loop_equations{
      "ij,jk->ik", "bi,bj->bij", "i,i->", "ij->ji", "ii->i", "iji->j", "ij,jk->i",
  };
  std::vector<OpInfo> infos;
  for (const std::string& equation : equations) {
    infos.push_back(einsum_entry("einsum", &einsum, equation));
  }
  for (const std::string& equation : loop_equations) {
    infos.push_back(einsum_entry("_einsum_loop", &einsum_loop, equation));
  }
  return infos;
}

}  // namespace
}  // namespace strata::testing
