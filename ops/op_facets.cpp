#include "ops/op_facets.h"

#include "ops/elementwise_util.h"
#include "tensor/shape_inference.h"

namespace strata::shape {
namespace {

// The broadcast shape of the Tensor arguments, with the Tensors themselves.
DimVector broadcast_tensor_args(OpArgs args, std::vector<Tensor>& tensors) {
  DimVector sizes;
  for (const IValue& v : args) {
    if (!v.is_tensor()) continue;
    const Tensor& t = v.to_tensor();
    sizes = tensors.empty() ? DimVector(t.sizes()) : broadcast_shapes(sizes, t.sizes(), "pointwise");
    tensors.push_back(t);
  }
  return sizes;
}

}  // namespace

const Tensor& tensor_arg(OpArgs args, size_t i) { return args[i].to_tensor(); }

MetaList single(IntArrayRef sizes, ScalarType dtype) {
  return {TensorMeta{DimVector(sizes), dtype}};
}

MetaList pointwise(OpArgs args) {
  std::vector<Tensor> tensors;
  DimVector sizes = broadcast_tensor_args(args, tensors);
  return single(sizes, result_type(tensors));
}

MetaList pointwise_floating(OpArgs args) {
  std::vector<Tensor> tensors;
  DimVector sizes = broadcast_tensor_args(args, tensors);
  return single(sizes, elementwise::floating_dtype(result_type(tensors)));
}

MetaList pointwise_bool(OpArgs args) {
  std::vector<Tensor> tensors;
  DimVector sizes = broadcast_tensor_args(args, tensors);
  return single(sizes, kBool);
}

MetaList same_as_self(OpArgs args) {
  const Tensor& self = tensor_arg(args, 0);
  return single(self.sizes(), self.dtype());
}

}  // namespace strata::shape

namespace strata::flops {

int64_t zero(OpArgs, const MetaList&) { return 0; }

}  // namespace strata::flops
