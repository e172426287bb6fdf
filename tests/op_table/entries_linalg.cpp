// Op-table entries: matrix products (mm, bmm, matmul, addmm, dot, outer). The
// references are triple loops over the operands' row-major values.
#include <limits>

#include "tests/op_table/op_info.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/samples.h"

namespace strata::testing {
namespace {

using L = Layout;

// NumPy's matmul written out: a 1-D left operand is a row, a 1-D right operand a
// column (the added dim is dropped from the result), leading dims broadcast.
Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  HostArray x = HostArray::of(a);
  HostArray y = HostArray::of(b);
  const bool row = x.sizes.size() == 1;
  const bool column = y.sizes.size() == 1;
  if (row) x.sizes.insert(x.sizes.begin(), 1);
  if (column) y.sizes.push_back(1);
  const int64_t n = x.sizes[x.sizes.size() - 2];
  const int64_t k = x.sizes.back();
  const int64_t m = y.sizes.back();
  const std::vector<int64_t> batch =
      broadcast_sizes({std::vector<int64_t>(x.sizes.begin(), x.sizes.end() - 2),
                       std::vector<int64_t>(y.sizes.begin(), y.sizes.end() - 2)});
  std::vector<double> values;
  for_each_index(batch, [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> xi = index;
    std::vector<int64_t> yi = index;
    xi.resize(index.size() + 2);
    yi.resize(index.size() + 2);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          xi[index.size()] = i;
          xi[index.size() + 1] = p;
          yi[index.size()] = p;
          yi[index.size() + 1] = j;
          sum += x.at_broadcast(xi) * y.at_broadcast(yi);
        }
        values.push_back(sum);
      }
    }
  });
  std::vector<int64_t> sizes = batch;
  if (!row) sizes.push_back(n);
  if (!column) sizes.push_back(m);
  return from_values(values, sizes, a.dtype());
}

std::vector<Sample> pair_samples(ScalarType dtype, const std::vector<ShapePairCase>& cases) {
  std::vector<Sample> samples;
  for (const ShapePairCase& c : cases) {
    samples.push_back({c.description(),
                       {make_tensor(c.a.sizes, dtype, c.a.layout, -2.0, 2.0, 1),
                        make_tensor(c.b.sizes, dtype, c.b.layout, -2.0, 2.0, 2)},
                       {}});
  }
  return samples;
}

// Float32 products over long inner dims (up to 400 here, values in [-2, 2)) sum in
// the GEMM's blocked order, not the reference's: the expected rounding error is
// about sqrt(k) * eps * |row| * |column| ~ 3e-5, so 1e-4 relative with an absolute
// floor for sums that cancel to near zero.
const Tolerance kLongFloat32Sum{2e-4, 1e-4};

OpInfo product_entry(std::string name, std::vector<ShapePairCase> cases,
                     Tensor (*op)(const Tensor&, const Tensor&)) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = numeric_dtypes();
  info.samples = [cases](ScalarType dtype) { return pair_samples(dtype, cases); };
  info.op = [op](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{op(in[0], in[1])};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack&) {
    return std::vector<Tensor>{reference_matmul(in[0], in[1])};
  };
  info.tolerances[{Check::Forward, kFloat32}] = kLongFloat32Sum;
  return info;
}

std::vector<ShapePairCase> mm_cases() {
  return {
      {{{3, 4}, L::Contiguous}, {{4, 5}, L::Contiguous}},
      {{{1, 1}, L::Contiguous}, {{1, 1}, L::Contiguous}},
      {{{1, 4}, L::Contiguous}, {{4, 1}, L::Contiguous}},
      {{{3, 0}, L::Contiguous}, {{0, 5}, L::Contiguous}},  // k = 0: zeros
      {{{3, 1}, L::Contiguous}, {{1, 5}, L::Transposed}},  // k = 1: batched, a multiply
      {{{0, 4}, L::Contiguous}, {{4, 5}, L::Contiguous}},
      {{{3, 4}, L::Contiguous}, {{4, 0}, L::Contiguous}},
      {{{3, 4}, L::Transposed}, {{4, 5}, L::Contiguous}},
      {{{3, 4}, L::Contiguous}, {{4, 5}, L::Transposed}},
      {{{3, 4}, L::Transposed}, {{4, 5}, L::Transposed}},
      {{{3, 4}, L::Sliced}, {{4, 5}, L::Sliced}},        // no unit stride: packed
      {{{3, 4}, L::Expanded}, {{4, 5}, L::Transposed}},  // row stride 0
      {{{37, 29}, L::Contiguous}, {{29, 41}, L::Transposed}},
      {{{128, 256}, L::Contiguous}, {{256, 96}, L::Contiguous}},  // parallel row blocks
      {{{16, 64}, L::Transposed}, {{64, 1024}, L::Contiguous}},   // parallel column blocks
      // Large enough for BLAS (when built with it): transposed flags and packing.
      {{{64, 48}, L::Expanded}, {{48, 40}, L::Transposed}},
      {{{40, 64}, L::Sliced}, {{64, 48}, L::Sliced}},
  };
}

std::vector<ShapePairCase> bmm_cases() {
  return {
      {{{2, 3, 4}, L::Contiguous}, {{2, 4, 5}, L::Contiguous}},
      {{{1, 1, 1}, L::Contiguous}, {{1, 1, 1}, L::Contiguous}},
      {{{0, 3, 4}, L::Contiguous}, {{0, 4, 5}, L::Contiguous}},
      {{{2, 3, 0}, L::Contiguous}, {{2, 0, 5}, L::Contiguous}},  // k = 0: zeros
      {{{2, 3, 1}, L::Transposed}, {{2, 1, 5}, L::Contiguous}},  // k = 1
      {{{2, 3, 4}, L::Transposed}, {{2, 4, 5}, L::Contiguous}},
      {{{2, 3, 4}, L::Sliced}, {{2, 4, 5}, L::Transposed}},
      {{{3, 3, 4}, L::Expanded}, {{3, 4, 5}, L::Contiguous}},           // batch stride 0
      {{{64, 16, 32}, L::Contiguous}, {{64, 32, 16}, L::Transposed}},   // split over the batch
      {{{1, 128, 256}, L::Contiguous}, {{1, 256, 96}, L::Contiguous}},  // one parallel GEMM
  };
}

std::vector<ShapePairCase> matmul_cases() {
  return {
      {{{4}, L::Contiguous}, {{4}, L::Contiguous}},
      {{{3, 4}, L::Contiguous}, {{4}, L::Contiguous}},
      {{{4}, L::Contiguous}, {{4, 5}, L::Transposed}},
      {{{3, 4}, L::Contiguous}, {{4, 5}, L::Contiguous}},
      {{{2, 3, 4}, L::Contiguous}, {{4, 5}, L::Contiguous}},  // one GEMM over all rows
      {{{2, 3, 4}, L::Transposed}, {{4, 5}, L::Contiguous}},  // rows not one run: bmm
      {{{2, 3, 4}, L::Contiguous}, {{4}, L::Contiguous}},
      {{{4}, L::Contiguous}, {{2, 4, 5}, L::Contiguous}},
      {{{3, 4}, L::Sliced}, {{2, 4, 5}, L::Contiguous}},
      {{{2, 1, 3, 4}, L::Contiguous}, {{5, 4, 2}, L::Contiguous}},  // batch broadcast
      {{{2, 3, 3, 4}, L::Contiguous}, {{2, 3, 4, 5}, L::Transposed}},
      {{{3, 2, 4}, L::Expanded}, {{3, 4, 5}, L::Contiguous}},
      {{{0, 3, 4}, L::Contiguous}, {{4, 5}, L::Contiguous}},
      {{{2, 3, 0}, L::Contiguous}, {{0, 5}, L::Contiguous}},
      {{{1, 3, 4}, L::Contiguous}, {{6, 4, 1}, L::Contiguous}},
      {{{300}, L::Contiguous}, {{300, 400}, L::Transposed}},  // one row through BLAS
      {{{300, 400}, L::Transposed}, {{400}, L::Contiguous}},  // one column through BLAS
  };
}

OpInfo addmm_entry(std::string name, Scalar beta, Scalar alpha, std::vector<ScalarType> dtypes) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = std::move(dtypes);
  info.samples = [beta, alpha](ScalarType dtype) {
    const std::vector<std::pair<std::vector<int64_t>, Layout>> selves{{{3, 5}, L::Contiguous},
                                                                      {{5}, L::Contiguous},
                                                                      {{}, L::Contiguous},
                                                                      {{3, 1}, L::Contiguous},
                                                                      {{3, 5}, L::Transposed}};
    std::vector<Sample> samples;
    for (const auto& [sizes, layout] : selves) {
      samples.push_back({"self " + ShapeCase{sizes, layout}.description(),
                         {make_tensor(sizes, dtype, layout, -2.0, 2.0, 3),
                          make_tensor({3, 4}, dtype, L::Transposed, -2.0, 2.0, 1),
                          make_tensor({4, 5}, dtype, L::Contiguous, -2.0, 2.0, 2)},
                         {beta, alpha}});
    }
    samples.push_back({"k = 0",
                       {make_tensor({3, 5}, dtype, -2.0, 2.0, 3), make_tensor({3, 0}, dtype),
                        make_tensor({0, 5}, dtype)},
                       {beta, alpha}});
    if (is_floating_point(dtype)) {
      Tensor nans = full({3, 5}, std::numeric_limits<double>::quiet_NaN(), dtype);
      samples.push_back({"NaN self",
                         {nans, make_tensor({3, 4}, dtype), make_tensor({4, 5}, dtype)},
                         {beta, alpha}});
    }
    return samples;
  };
  info.op = [](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{
        addmm(in[0], in[1], in[2], args[0].to_scalar(), args[1].to_scalar())};
  };
  info.reference = [](const std::vector<Tensor>& in, const Stack& args) {
    const double beta = args[0].to_scalar().to_double();
    const double alpha = args[1].to_scalar().to_double();
    const Tensor product = reference_matmul(in[1], in[2]);
    // beta == 0 ignores self, NaNs included.
    return std::vector<Tensor>{map_binary(in[0], product, product.dtype(), [=](double s, double p) {
      return (beta == 0 ? 0.0 : beta * s) + alpha * p;
    })};
  };
  return info;
}

OpInfo vector_entry(std::string name, Tensor (*op)(const Tensor&, const Tensor&),
                    std::vector<ShapePairCase> cases, bool outer_product) {
  OpInfo info = product_entry(std::move(name), std::move(cases), op);
  info.reference = [outer_product](const std::vector<Tensor>& in, const Stack&) {
    if (!outer_product) return std::vector<Tensor>{reference_matmul(in[0], in[1])};
    const HostArray a = HostArray::of(in[0]);
    const HostArray b = HostArray::of(in[1]);
    std::vector<double> values;
    for (double x : a.values) {
      for (double y : b.values) values.push_back(x * y);
    }
    return std::vector<Tensor>{from_values(values, {a.numel(), b.numel()}, in[0].dtype())};
  };
  return info;
}

STRATA_OP_INFOS(linalg) {
  std::vector<OpInfo> infos;
  infos.push_back(product_entry("mm", mm_cases(), &mm));
  infos.push_back(product_entry("bmm", bmm_cases(), &bmm));
  infos.push_back(product_entry("matmul", matmul_cases(), &matmul));
  infos.push_back(addmm_entry("addmm", 1, 1, numeric_dtypes()));
  infos.push_back(addmm_entry("addmm(beta=0)", 0, 1, numeric_dtypes()));
  infos.push_back(addmm_entry("addmm(beta=2,alpha=3)", 2, 3, numeric_dtypes()));
  infos.push_back(addmm_entry("addmm(beta=0.5,alpha=-1.5)", 0.5, -1.5, floating_dtypes()));
  infos.push_back(vector_entry("dot", &dot,
                               {{{{5}, L::Contiguous}, {{5}, L::Contiguous}},
                                {{{1}, L::Contiguous}, {{1}, L::Contiguous}},
                                {{{0}, L::Contiguous}, {{0}, L::Contiguous}},
                                {{{6}, L::Sliced}, {{6}, L::Expanded}},
                                {{{1000}, L::Contiguous}, {{1000}, L::Sliced}}},
                               false));
  infos.push_back(vector_entry("outer", &outer,
                               {{{{3}, L::Contiguous}, {{4}, L::Contiguous}},
                                {{{1}, L::Contiguous}, {{1}, L::Contiguous}},
                                {{{0}, L::Contiguous}, {{4}, L::Contiguous}},
                                {{{3}, L::Sliced}, {{4}, L::Expanded}}},
                               true));
  return infos;
}

}  // namespace
}  // namespace strata::testing
