// Op-table entries: elementwise binary ops.
#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

OpInfo binary_entry(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> op,
                    std::function<double(double, double)> f, std::vector<ScalarType> dtypes) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = [](ScalarType dtype) { return binary_samples(dtype); };
  info.op = [op](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{op(in[0], in[1])};
  };
  info.reference = [f](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{map_binary(in[0], in[1], reference_result_type(in), f)};
  };
  return info;
}

STRATA_OP_INFOS(elementwise_binary) {
  std::vector<OpInfo> infos;
  infos.push_back(binary_entry(
      "add", [](const Tensor& a, const Tensor& b) { return add(a, b); },
      [](double a, double b) { return a + b; }, numeric_dtypes()));
  infos.back().inplace_variant = "add_";
  infos.push_back(binary_entry(
      "add(alpha=2)", [](const Tensor& a, const Tensor& b) { return add(a, b, 2); },
      [](double a, double b) { return a + 2 * b; }, numeric_dtypes()));
  infos.push_back(binary_entry(
      "mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); },
      [](double a, double b) { return a * b; }, numeric_dtypes()));
  infos.back().inplace_variant = "mul_";
  return infos;
}

}  // namespace
}  // namespace strata::testing
