// Matrix products: mm, bmm, addmm and dot run GEMM/dot kernels (kernels/cpu/linalg);
// matmul and outer decompose onto them (CompositeImplicitAutograd). einsum is in
// ops/linalg_einsum.cpp.
//
// Operands of one product must share a dtype (Int64, Float32 or Float64): like
// PyTorch's mm/bmm/dot/matmul, mixed dtypes are an error, not promoted.
#include "kernels/cpu/linalg.h"

#include <initializer_list>

#include "dispatcher/op_def.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/linalg.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_util.h"
#include "ops/linalg_views.h"
#include "ops/op_facets.h"
#include "ops/op_handle.h"
#include "ops/ops.h"
#include "tensor/error.h"
#include "tensor/shape_inference.h"
#include "transforms/grad/derivative.h"
#include "transforms/vmap/batching.h"

namespace strata {
namespace {

using linalg::expand_view;
using linalg::fold_dims;
using linalg::split_dims;
using linalg::unsqueeze_view;

using BinarySig = Tensor(const Tensor&, const Tensor&);
using AddmmSig = Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&);

std::string shapes_text(const Tensor& a, const Tensor& b) {
  return shape_string(a.sizes()) + " and " + shape_string(b.sizes());
}

void check_product_dtypes(const char* op, std::initializer_list<const Tensor*> operands) {
  const Tensor& first = **operands.begin();
  for (const Tensor* t : operands) {
    STRATA_CHECK(t->dtype() == first.dtype(), op, "expected operands of one dtype, got ",
                 first.dtype(), " and ", t->dtype(), " (convert one with .to())");
    STRATA_CHECK(t->device() == first.device(), op, "expected operands on one device, got ",
                 first.device(), " and ", t->device());
  }
  const ScalarType dtype = first.dtype();
  STRATA_CHECK(dtype == kInt64 || dtype == kFloat32 || dtype == kFloat64, op, "unsupported dtype ",
               dtype, " (expected Int64, Float32 or Float64)");
}

void check_ranks(const char* op, const Tensor& a, const Tensor& b, int64_t rank) {
  STRATA_CHECK(a.dim() == rank && b.dim() == rank, op, "expected ", rank, "-D tensors, got shapes ",
               shapes_text(a, b));
}

void check_inner_sizes(const char* op, const Tensor& a, const Tensor& b, int64_t a_inner,
                       int64_t b_inner) {
  STRATA_CHECK(a_inner == b_inner, op, "cannot multiply shapes ", shapes_text(a, b),
               ": inner sizes ", a_inner, " and ", b_inner, " differ");
}

void check_mm_operands(const char* op, const Tensor& a, const Tensor& b) {
  check_ranks(op, a, b, 2);
  check_inner_sizes(op, a, b, a.sizes()[1], b.sizes()[0]);
}

// The result of a product (the kernel's and the shape function's), after checking
// the operands.
TensorMeta mm_result(const Tensor& a, const Tensor& b) {
  check_mm_operands("strata::mm", a, b);
  check_product_dtypes("strata::mm", {&a, &b});
  return {{a.sizes()[0], b.sizes()[1]}, a.dtype()};
}

// mm, bmm and addmm serve every backend (registered as cpu and cuda): the
// product runs on the output's device.
void mm_on_device(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
                  const Scalar& alpha) {
  if (out.device().is_cuda()) return gpu::mm_kernel(out, a, b, beta, alpha);
  on_device::check_host_inputs("strata::mm", out, a, b);
  cpu::mm_kernel(out, a, b, beta, alpha);
}

Tensor mm_cpu(const Tensor& a, const Tensor& b) {
  const TensorMeta result = mm_result(a, b);
  Tensor out = make_empty_tensor(result.sizes, result.dtype, a.device(), "strata::mm");
  mm_on_device(out, a, b, 0, 1);
  return out;
}

void check_bmm_operands(const char* op, const Tensor& a, const Tensor& b) {
  check_ranks(op, a, b, 3);
  STRATA_CHECK(a.sizes()[0] == b.sizes()[0], op, "batch sizes ", a.sizes()[0], " and ",
               b.sizes()[0], " differ (shapes ", shapes_text(a, b), ")");
  check_inner_sizes(op, a, b, a.sizes()[2], b.sizes()[1]);
}

TensorMeta bmm_result(const Tensor& a, const Tensor& b) {
  check_bmm_operands("strata::bmm", a, b);
  check_product_dtypes("strata::bmm", {&a, &b});
  return {{a.sizes()[0], a.sizes()[1], b.sizes()[2]}, a.dtype()};
}

Tensor bmm_cpu(const Tensor& a, const Tensor& b) {
  const TensorMeta result = bmm_result(a, b);
  Tensor out = make_empty_tensor(result.sizes, result.dtype, a.device(), "strata::bmm");
  if (out.device().is_cuda()) {
    gpu::bmm_kernel(out, a, b);
  } else {
    on_device::check_host_inputs("strata::bmm", out, a, b);
    cpu::bmm_kernel(out, a, b);
  }
  return out;
}

// The shape of addmm's result, after checking its arguments.
DimVector check_addmm_arguments(const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                                const Scalar& beta, const Scalar& alpha) {
  const char* op = "strata::addmm";
  check_mm_operands(op, mat1, mat2);
  check_product_dtypes(op, {&self, &mat1, &mat2});
  const ScalarType dtype = mat1.dtype();
  STRATA_CHECK(
      is_floating_point(dtype) || (!beta.is_floating_point() && !alpha.is_floating_point()), op,
      "beta ", beta, " and alpha ", alpha, " must be integers for ", dtype, " operands");
  const DimVector shape{mat1.sizes()[0], mat2.sizes()[1]};
  STRATA_CHECK(IntArrayRef(broadcast_shapes(self.sizes(), shape, op)) == IntArrayRef(shape), op,
               "self of shape ", shape_string(self.sizes()),
               " cannot be broadcast to the product's shape ", shape_string(shape));
  return shape;
}

Tensor addmm_cpu(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                 const Scalar& alpha) {
  const DimVector shape = check_addmm_arguments(self, mat1, mat2, beta, alpha);
  Tensor out = make_empty_tensor(shape, mat1.dtype(), mat1.device(), "strata::addmm");
  // beta == 0 ignores self entirely (NaNs in it do not propagate), as in BLAS.
  const bool reads_self = beta.to_double() != 0.0;
  if (reads_self) on_device::copy_kernel(out, self);
  mm_on_device(out, mat1, mat2, reads_self ? beta : Scalar(0), alpha);
  return out;
}

// addmm in ordinary ops (its decomposition facet); beta == 0 ignores self, as the
// kernel does.
Tensor addmm_composite(const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                       const Scalar& beta, const Scalar& alpha) {
  check_addmm_arguments(self, mat1, mat2, beta, alpha);
  Tensor product = mat1.mm(mat2);
  if (alpha.to_double() != 1.0) product = product * alpha;
  if (beta.to_double() == 0.0) return product;
  return (beta.to_double() == 1.0 ? self : self * beta) + product;
}

void check_dot_operands(const Tensor& a, const Tensor& b) {
  const char* op = "strata::dot";
  check_ranks(op, a, b, 1);
  STRATA_CHECK(a.sizes()[0] == b.sizes()[0], op, "cannot take the dot product of shapes ",
               shapes_text(a, b), ": lengths ", a.sizes()[0], " and ", b.sizes()[0], " differ");
  check_product_dtypes(op, {&a, &b});
}

TensorMeta dot_result(const Tensor& a, const Tensor& b) {
  check_dot_operands(a, b);
  return {{}, a.dtype()};
}

Tensor dot_cpu(const Tensor& a, const Tensor& b) {
  const TensorMeta result = dot_result(a, b);
  Tensor out = make_empty_tensor(result.sizes, result.dtype, a.device(), "strata::dot");
  cpu::dot_kernel(out, a, b);
  return out;
}

// On the GPU: the [1, n] @ [n, 1] product (cuBLAS for floating types), written
// through a [1, 1] view of the 0-dim result; empty vectors give 0.
Tensor dot_cuda(const Tensor& a, const Tensor& b) {
  const TensorMeta result = dot_result(a, b);
  Tensor out = make_empty_tensor(result.sizes, result.dtype, a.device(), "strata::dot");
  if (a.numel() == 0) {
    on_device::fill_kernel(out, 0);
    return out;
  }
  gpu::mm_kernel(unsqueeze_view(unsqueeze_view(out, 0), 1), unsqueeze_view(a, 0),
                 unsqueeze_view(b, 1), 0, 1);
  return out;
}

Tensor outer_composite(const Tensor& a, const Tensor& b) {
  check_ranks("strata::outer", a, b, 1);
  check_product_dtypes("strata::outer", {&a, &b});
  return mul(unsqueeze_view(a, 1), unsqueeze_view(b, 0));
}

// NumPy's matmul. A 1-D left operand is a row and a 1-D right operand a column,
// whose added dim is dropped from the result; the dims before the last two are
// batch dims and broadcast.
Tensor matmul_composite(const Tensor& a, const Tensor& b) {
  const char* op = "strata::matmul";
  const int64_t ra = a.dim();
  const int64_t rb = b.dim();
  STRATA_CHECK(ra >= 1 && rb >= 1, op, "expected tensors with at least 1 dim, got shapes ",
               shapes_text(a, b));
  check_inner_sizes(op, a, b, a.sizes()[ra - 1], b.sizes()[rb == 1 ? 0 : rb - 2]);
  check_product_dtypes(op, {&a, &b});
  if (ra == 1 && rb == 1) return dot(a, b);
  if (ra == 2 && rb == 2) return mm(a, b);

  const Tensor a_mat = ra == 1 ? unsqueeze_view(a, 0) : a;  // [..., n, k]
  const Tensor b_mat = rb == 1 ? unsqueeze_view(b, 1) : b;  // [..., k, m]
  const int64_t n = a_mat.sizes()[a_mat.dim() - 2];
  const int64_t k = a_mat.sizes()[a_mat.dim() - 1];
  const int64_t m = b_mat.sizes()[b_mat.dim() - 1];
  // The result is [batch..., n, m] with n and m dropped again for 1-D operands.
  auto result_groups = [&](DimVector batch) {
    return std::vector<DimVector>{std::move(batch), ra == 1 ? DimVector{} : DimVector{n},
                                  rb == 1 ? DimVector{} : DimVector{m}};
  };
  if (ra <= 2 && rb <= 2) {
    return split_dims(unsqueeze_view(mm(a_mat, b_mat), 0), result_groups({}));
  }
  if (rb <= 2) {
    // A stack of matrices times one matrix: a single GEMM over every row of the
    // stack, when those rows are one strided run.
    if (std::optional<Tensor> rows = linalg::try_fold_dims(a_mat, {ra - 1, 1})) {
      DimVector row_dims(IntArrayRef(a.sizes().data(), static_cast<size_t>(ra - 1)));
      return split_dims(mm(*rows, b_mat), {row_dims, rb == 1 ? DimVector{} : DimVector{m}});
    }
  }
  const IntArrayRef a_batch(a_mat.sizes().data(), static_cast<size_t>(a_mat.dim() - 2));
  const IntArrayRef b_batch(b_mat.sizes().data(), static_cast<size_t>(b_mat.dim() - 2));
  const DimVector batch = broadcast_shapes(a_batch, b_batch, op);
  auto batched = [&](const Tensor& t, int64_t rows, int64_t cols) {
    DimVector sizes = batch;
    sizes.push_back(rows);
    sizes.push_back(cols);
    const int64_t batch_rank = static_cast<int64_t>(batch.size());
    return fold_dims(expand_view(t, sizes), {batch_rank, 1, 1});
  };
  const Tensor product = bmm(batched(a_mat, n, k), batched(b_mat, k, m));
  return split_dims(product, result_groups(batch));
}

// ---- derivatives (Note [Derivative formulas]); matmul and outer differentiate
// through their decompositions.

using autograd::args;
using autograd::BackwardContext;
using autograd::derivative;
using autograd::ForwardContext;

using elementwise::scaled;

// d(A B) = dA B + A dB: A gets g B^T and B gets A^T g, per matrix of a batch.
template <bool kBatched>
void product_backward(BackwardContext& c, size_t a_arg, size_t b_arg, const Scalar& alpha) {
  const int64_t rows = kBatched ? 1 : 0;
  const Tensor& g = c.grad();
  if (c.needs_grad(a_arg)) {
    const Tensor b_t = c.input(b_arg).transpose(rows, rows + 1);
    c.set_grad(a_arg, scaled(kBatched ? bmm(g, b_t) : mm(g, b_t), alpha));
  }
  if (c.needs_grad(b_arg)) {
    const Tensor a_t = c.input(a_arg).transpose(rows, rows + 1);
    c.set_grad(b_arg, scaled(kBatched ? bmm(a_t, g) : mm(a_t, g), alpha));
  }
}

void mm_backward(BackwardContext& c) { product_backward<false>(c, 0, 1, 1); }

void bmm_backward(BackwardContext& c) { product_backward<true>(c, 0, 1, 1); }

void addmm_backward(BackwardContext& c) {
  const Scalar beta = c.scalar_arg(3);
  // beta == 0 ignores self, so it gets no gradient.
  if (c.needs_grad(0) && beta.to_double() != 0.0) c.set_grad(0, scaled(c.grad(), beta));
  product_backward<false>(c, 1, 2, c.scalar_arg(4));
}

void dot_backward(BackwardContext& c) {
  if (c.needs_grad(0)) c.set_grad(0, c.grad() * c.input(1));
  if (c.needs_grad(1)) c.set_grad(1, c.grad() * c.input(0));
}

// The same d(A B) = dA B + A dB forward: one product per operand with a tangent
// (an operand without one contributes nothing), so under jacfwd's vmap each term
// is the batched product of a batched tangent and an unbatched primal, one GEMM.
template <Tensor (*kProduct)(const Tensor&, const Tensor&)>
void product_forward(ForwardContext& c) {
  c.set_tangent(0, autograd::bilinear_tangent(c, 0, 1, kProduct));
}

void addmm_forward(ForwardContext& c) {
  const Scalar beta = c.scalar_arg(3);
  Tensor tangent = autograd::bilinear_tangent(c, 1, 2, &mm);
  if (tangent.defined()) tangent = scaled(tangent, c.scalar_arg(4));
  // beta == 0 ignores self, so its tangent does not reach the output.
  if (c.has_tangent(0) && beta.to_double() != 0.0) {
    tangent = autograd::sum_defined(std::move(tangent), scaled(c.tangent(0), beta));
  }
  c.set_tangent(0, tangent);
}

// ---- batching rules (Note [Batching rules]); matmul and outer batch through their
// decompositions, which end in these and in view ops. Each rule computes under
// BelowThisLevel (see batching.h).

using batching::BatchedArg;

// mm for rank 2, bmm for rank 3.
Tensor matrix_product(int64_t rank, const Tensor& a, const Tensor& b) {
  return rank == 2 ? mm(a, b) : bmm(a, b);
}

// Every sample's product of a [..., n, k] and b [..., k, m], samples of rank `rank`
// (2: mm, 3: bmm), with at least one operand batched. When one operand is shared
// by all samples, the batch joins the other's rows (or columns): one GEMM, or one
// bmm over bmm's own batch (Note [Folding the vmap batch into a dim]). Otherwise
// the samples are the batch of one bmm.
BatchedArg batched_product(const BatchedArg& a, const BatchedArg& b, int64_t rank) {
  const int64_t lead = rank - 2;
  const Tensor x = batching::batch_first(a);
  const Tensor y = batching::batch_first(b);
  // With k = 1 each product is an outer product (a per-sample weight gradient of a
  // single row): a broadcast multiply writes it at memory speed, several times
  // faster than GEMMs of depth 1, and rounds the same (one multiply per element).
  if (x.sizes().back() == 1) return {x * y, 0};
  // A shared matrix times a batch of vectors: the vectors as the rows of one GEMM
  // against the matrix transposed, so each sample's result is contiguous (folding
  // them into columns would leave every sample strided by the batch size, which
  // slows down every elementwise op after it).
  if (rank == 2 && !a.batched() && y.sizes()[2] == 1) {
    return {mm(y.select(2, 0), a.value.t()).unsqueeze(2), 0};
  }
  if (!a.batched() || !b.batched()) {
    const bool into_rows = a.batched();
    const linalg::BatchFold fold = into_rows ? linalg::fold_batch(a.value, *a.bdim, lead)
                                             : linalg::fold_batch(b.value, *b.bdim, lead + 1);
    const Tensor result = into_rows ? matrix_product(rank, fold.value, b.value)
                                    : matrix_product(rank, a.value, fold.value);
    auto [value, bdim] = linalg::unfold_batch(result, fold.dim, fold);
    return {value, bdim};
  }
  if (lead == 0) return {bmm(x, y), 0};
  const Tensor result = bmm(fold_dims(x, {2, 1, 1}), fold_dims(y, {2, 1, 1}));
  return {split_dims(result, {{x.sizes()[0], x.sizes()[1]}, {x.sizes()[2]}, {y.sizes()[3]}}), 0};
}

template <int64_t kRank>
Tensor product_batched(const Tensor& a, const Tensor& b) {
  const char* op = kRank == 2 ? "strata::mm" : "strata::bmm";
  if constexpr (kRank == 2) {
    check_mm_operands(op, a, b);
  } else {
    check_bmm_operands(op, a, b);
  }
  check_product_dtypes(op, {&a, &b});
  const batching::VmapLevel at = batching::current_vmap_level(op);
  const batching::BelowThisLevel below;
  const BatchedArg x = batching::unwrap(a, at.level);
  const BatchedArg y = batching::unwrap(b, at.level);
  if (!x.batched() && !y.batched()) return matrix_product(kRank, x.value, y.value);
  const BatchedArg out = batched_product(x, y, kRank);
  return batching::make_batched(out.value, out.bdim, at.level);
}

// beta * self + alpha * product, self broadcast against every sample's product.
Tensor addmm_batched(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                     const Scalar& alpha) {
  check_addmm_arguments(self, mat1, mat2, beta, alpha);
  const batching::VmapLevel at = batching::current_vmap_level("strata::addmm");
  const batching::BelowThisLevel below;
  const BatchedArg s = batching::unwrap(self, at.level);
  const BatchedArg x = batching::unwrap(mat1, at.level);
  const BatchedArg y = batching::unwrap(mat2, at.level);
  if (!s.batched() && !x.batched() && !y.batched()) {
    return addmm(s.value, x.value, y.value, beta, alpha);
  }
  const BatchedArg product =
      x.batched() || y.batched() ? batched_product(x, y, 2) : BatchedArg{mm(x.value, y.value), {}};
  Tensor result = scaled(batching::batch_first(product), alpha);
  // beta == 0 ignores self, NaNs included.
  if (beta.to_double() != 0.0) {
    result = result + scaled(batching::batch_first_padded(s, 2), beta);
  } else if (!product.batched()) {
    // self, the only batched argument, is ignored: every sample gets the same product.
    result = batching::batch_first_expanded({result, std::nullopt}, at.batch_size);
  }
  return batching::make_batched(result, 0, at.level);
}

// A sample's dot product is the 1 x 1 product of a as a row and b as a column.
Tensor dot_batched(const Tensor& a, const Tensor& b) {
  check_dot_operands(a, b);
  const batching::VmapLevel at = batching::current_vmap_level("strata::dot");
  const batching::BelowThisLevel below;
  const BatchedArg x = batching::unwrap(a, at.level);
  const BatchedArg y = batching::unwrap(b, at.level);
  if (!x.batched() && !y.batched()) return dot(x.value, y.value);
  auto as_matrix = [](const BatchedArg& v, int64_t new_dim) {
    return v.batched() ? BatchedArg{batching::batch_first(v).unsqueeze(new_dim + 1), 0}
                       : BatchedArg{v.value.unsqueeze(new_dim), {}};
  };
  const BatchedArg out = batched_product(as_matrix(x, 0), as_matrix(y, 1), 2);
  return batching::make_batched(out.value.reshape({at.batch_size}), 0, at.level);
}

// ---- the rows (Note [One op, one place]) ----

template <TensorMeta (*kResult)(const Tensor&, const Tensor&)>
MetaList product_shape(OpArgs args) {
  return {kResult(shape::tensor_arg(args, 0), shape::tensor_arg(args, 1))};
}

MetaList addmm_shape(OpArgs args) {
  const Tensor& mat1 = shape::tensor_arg(args, 1);
  return shape::single(
      check_addmm_arguments(shape::tensor_arg(args, 0), mat1, shape::tensor_arg(args, 2),
                            args[3].to_scalar(), args[4].to_scalar()),
      mat1.dtype());
}

int64_t numel(const TensorMeta& meta) {
  int64_t n = 1;
  for (int64_t size : meta.sizes) n *= size;
  return n;
}

// A multiply and an add for each of the k terms of every output element, k the
// last dim of argument kLeft (mm, bmm, dot: 2 n m k).
template <size_t kLeft>
int64_t product_flops(OpArgs args, const MetaList& outputs) {
  return 2 * shape::tensor_arg(args, kLeft).sizes().back() * numel(outputs.at(0));
}

// The product, then per output element the scaling by alpha and, unless beta is 0
// (self ignored), the scaling of self by beta and the add.
int64_t addmm_flops(OpArgs args, const MetaList& outputs) {
  const int64_t epilogue = args[3].to_scalar().to_double() != 0.0 ? 3 : 1;
  return product_flops<1>(args, outputs) + epilogue * numel(outputs.at(0));
}

const OpFamily kLinalgOps("linalg", {
    {.schema = "mm(Tensor self, Tensor mat2) -> Tensor",
     .cpu = &mm_cpu,
     .cuda = &mm_cpu,
     .derivative = derivative({.backward = &mm_backward,
                               .forward = &product_forward<&mm>,
                               .saved_inputs = args(0, 1)}),
     .batching = &product_batched<2>,
     .shape = &product_shape<&mm_result>,
     .flops = &product_flops<0>},
    {.schema = "bmm(Tensor self, Tensor mat2) -> Tensor",
     .cpu = &bmm_cpu,
     .cuda = &bmm_cpu,
     .derivative = derivative({.backward = &bmm_backward,
                               .forward = &product_forward<&bmm>,
                               .saved_inputs = args(0, 1)}),
     .batching = &product_batched<3>,
     .shape = &product_shape<&bmm_result>,
     .flops = &product_flops<0>},
    {.schema =
         "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
     .cpu = &addmm_cpu,
     .cuda = &addmm_cpu,
     .decomposition = &addmm_composite,
     .derivative = derivative(
         {.backward = &addmm_backward, .forward = &addmm_forward, .saved_inputs = args(1, 2)}),
     .batching = &addmm_batched,
     .shape = &addmm_shape,
     .flops = &addmm_flops},
    {.schema = "dot(Tensor self, Tensor tensor) -> Tensor",
     .cpu = &dot_cpu,
     .cuda = &dot_cuda,
     .derivative = derivative({.backward = &dot_backward,
                               .forward = &product_forward<&dot>,
                               .saved_inputs = args(0, 1)}),
     .batching = &dot_batched,
     .shape = &product_shape<&dot_result>,
     .flops = &product_flops<0>},
    {.schema = "outer(Tensor self, Tensor vec2) -> Tensor", .decomposition = &outer_composite},
    {.schema = "matmul(Tensor self, Tensor other) -> Tensor", .decomposition = &matmul_composite},
});

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::mm", "", BinarySig).call(a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::bmm", "", BinarySig).call(a, b);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::matmul", "", BinarySig).call(a, b);
}

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  return STRATA_OP("strata::addmm", "", AddmmSig).call(self, mat1, mat2, beta, alpha);
}

Tensor dot(const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::dot", "", BinarySig).call(a, b);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  return STRATA_OP("strata::outer", "", BinarySig).call(a, b);
}

Tensor Tensor::matmul(const Tensor& other) const { return strata::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return strata::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return strata::bmm(*this, other); }
Tensor Tensor::dot(const Tensor& other) const { return strata::dot(*this, other); }
Tensor Tensor::outer(const Tensor& other) const { return strata::outer(*this, other); }

}  // namespace strata
