// The rules a custom function derives when the user leaves them out (Note
// [Custom functions]), and the checks of what the user's rules return.
#include "func/custom/custom_internal.h"
#include "func/grad/grad_call.h"
#include "func/vmap/vmap_call.h"
#include "ops/creation.h"
#include "tensor/error.h"

namespace strata::custom {
namespace {

// fn vmapped over `inputs`, input i batched along dims[i]: every output with its
// batch along dim 0 (undefined outputs stay undefined).
template <class Fn>
std::vector<Tensor> vmap_list(const Fn& fn, const std::vector<Tensor>& inputs, const BatchDims& dims) {
  const VmapOptions options{.in_dims = dims};
  batching::VmapCall call(options, inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined()) call.observe(i, inputs[i]);
  }
  call.finish_observing();
  call.enter_chunk(0, call.batch_size());
  struct Leave {
    batching::VmapCall& call;
    ~Leave() { call.leave_chunk(); }
  } leave{call};
  std::vector<Tensor> wrapped(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined()) wrapped[i] = call.wrap(i, inputs[i]);
  }
  std::vector<Tensor> outputs = fn(wrapped);
  call.leave_chunk();
  for (Tensor& t : outputs) {
    if (t.defined()) t = call.unwrap_output(t, 0);
  }
  return outputs;
}

BatchDims concat(const BatchDims& a, const BatchDims& b) {
  BatchDims out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<Tensor> concat(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  std::vector<Tensor> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace

void check_gradients(const FunctionImpl& f, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& grads) {
  const char* what = f.rules.name.c_str();
  STRATA_CHECK(grads.size() == inputs.size(), what, "the vjp rule returned ", grads.size(),
               " gradients for ", inputs.size(), " inputs; return one per input (undefined where "
               "there is none)");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& g = grads[i];
    if (!g.defined()) continue;
    STRATA_CHECK(inputs[i].defined(), what, "the vjp rule returned a gradient for input ", i,
                 ", which is undefined");
    STRATA_CHECK(g.sizes() == inputs[i].sizes(), what, "the vjp rule returned a gradient of shape ",
                 shape_string(g.sizes()), " for input ", i, " of shape ",
                 shape_string(inputs[i].sizes()));
    STRATA_CHECK(g.dtype() == inputs[i].dtype(), what, "the vjp rule returned a ",
                 to_string(g.dtype()), " gradient for input ", i, " of dtype ",
                 to_string(inputs[i].dtype()));
  }
}

std::vector<Tensor> jvp_from_vjp(const FunctionImpl& f, const std::vector<Tensor>& primals,
                                 const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& tangents) {
  // Any cotangent will do: the vjp is linear in it. Zeros, made below the new level.
  std::vector<Tensor> zeros(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k].defined() && is_floating_point(outputs[k].dtype())) zeros[k] = zeros_like(outputs[k]);
  }
  autograd::GradCall transposition("jvp derived from a custom vjp");
  std::vector<Tensor> cotangents(outputs.size());
  std::vector<size_t> leaf_of_output(outputs.size(), SIZE_MAX);
  size_t leaves = 0;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!zeros[k].defined()) continue;
    cotangents[k] = transposition.enter(zeros[k], true, k);
    leaf_of_output[k] = leaves++;
  }
  const std::vector<Tensor> grads = f.rules.vjp(primals, outputs, cotangents);
  check_gradients(f, primals, grads);
  std::vector<Tensor> linear_outputs, weights;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined() && tangents[i].defined()) {
      linear_outputs.push_back(grads[i]);
      weights.push_back(tangents[i]);
    }
  }
  std::vector<Tensor> result(outputs.size());
  if (linear_outputs.empty()) return result;
  const std::vector<Tensor> per_leaf = transposition.backward(linear_outputs, weights);
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (leaf_of_output[k] != SIZE_MAX) result[k] = per_leaf[leaf_of_output[k]];
  }
  return result;
}

std::shared_ptr<const FunctionImpl> FunctionImpl::vmapped(const BatchDims& in_dims) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto found = vmapped_.find(in_dims);
  if (found != vmapped_.end()) return found->second;
  auto derived = std::make_shared<FunctionImpl>();
  derived->rules.name = rules.name + " (vmapped)";
  // The derived rules keep copies of this function's, so they outlive nothing.
  derived->forward = [forward = forward, in_dims](const std::vector<Tensor>& xs) {
    return vmap_list(forward, xs, in_dims);
  };
  if (rules.vjp) {
    derived->rules.vjp = [vjp = rules.vjp, in_dims](const std::vector<Tensor>& xs,
                                                    const std::vector<Tensor>& ys,
                                                    const std::vector<Tensor>& cts) {
      const size_t n = xs.size();
      const BatchDims dims = concat(in_dims, BatchDims(ys.size() + cts.size(), int64_t{0}));
      auto per_sample = [&vjp, n, m = ys.size()](const std::vector<Tensor>& all) {
        return vjp({all.begin(), all.begin() + n}, {all.begin() + n, all.begin() + n + m},
                   {all.begin() + n + m, all.end()});
      };
      std::vector<Tensor> grads = vmap_list(per_sample, concat(concat(xs, ys), cts), dims);
      for (size_t i = 0; i < grads.size() && i < n; ++i) {
        if (!grads[i].defined()) continue;
        if (!in_dims[i]) {
          grads[i] = grads[i].sum({0});
        } else {
          const int64_t rank = grads[i].dim();
          const int64_t d = *in_dims[i] < 0 ? *in_dims[i] + rank : *in_dims[i];
          if (d != 0) grads[i] = grads[i].movedim(0, d);
        }
      }
      return grads;
    };
  }
  if (rules.jvp) {
    derived->rules.jvp = [jvp = rules.jvp, in_dims](const std::vector<Tensor>& xs,
                                                    const std::vector<Tensor>& ts) {
      const size_t n = xs.size();
      auto per_sample = [&jvp, n](const std::vector<Tensor>& all) {
        return jvp({all.begin(), all.begin() + n}, {all.begin() + n, all.end()});
      };
      return vmap_list(per_sample, concat(xs, ts), concat(in_dims, in_dims));
    };
  }
  vmapped_.emplace(in_dims, derived);
  return derived;
}

}  // namespace strata::custom
