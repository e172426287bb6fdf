#pragma once

#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "func/tree.h"
#include "func/tree_structure.h"
#include "func/vmap/vmap_call.h"

// vmap (see DESIGN.md, the public API): vmap(f)(xs) calls f on every sample of a
// batch at once; f is written for one sample.

namespace strata {
namespace batching::detail {

template <class T>
struct IsTupleLike : std::false_type {};
template <class... E>
struct IsTupleLike<std::tuple<E...>> : std::true_type {};
template <class A, class B>
struct IsTupleLike<std::pair<A, B>> : std::true_type {};

// Unwraps every tensor leaf of a chunk's result; out_dims apply per element of a
// tuple or pair result, else to the whole result.
template <class Out>
Out unwrap_result(const VmapCall& call, const Out& out) {
  if constexpr (IsTupleLike<Out>::value) {
    call.check_out_dims(std::tuple_size_v<Out>);
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return Out{tree::map(std::get<I>(out), [&](const Tensor& t) {
        return call.unwrap_output(t, call.out_dim(I));
      })...};
    }
    (std::make_index_sequence<std::tuple_size_v<Out>>());
  } else {
    return tree::map(
        out, [&](const Tensor& t) { return call.unwrap_output(t, call.out_dim(std::nullopt)); });
  }
}

// The out_dim of every tensor leaf of a result, in leaf order.
template <class Out>
std::vector<std::optional<int64_t>> leaf_out_dims(const VmapCall& call, const Out& out) {
  std::vector<std::optional<int64_t>> dims;
  if constexpr (IsTupleLike<Out>::value) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      (dims.insert(dims.end(), tree::num_leaves(std::get<I>(out)), call.out_dim(I)), ...);
    }
    (std::make_index_sequence<std::tuple_size_v<Out>>());
  } else {
    dims.assign(tree::num_leaves(out), call.out_dim(std::nullopt));
  }
  return dims;
}

template <class F>
class VmapTransform {
 public:
  VmapTransform(F f, VmapOptions options) : f_(std::move(f)), options_(std::move(options)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    VmapCall call(options_, sizeof...(Args));
    auto observe = [&](size_t arg, const auto& value) {
      size_t leaf = 0;
      tree::for_each_leaf(value, [&](const Tensor& t) {
        if (!call.observe(arg, t)) {
          call.throw_batch_size_mismatch(arg, t, tree::leaf_path(value, leaf));
        }
        ++leaf;
      });
    };
    [&]<size_t... I>(std::index_sequence<I...>) { (observe(I, args), ...); }
    (std::index_sequence_for<Args...>());
    call.finish_observing();
    const auto chunks = call.chunks();
    if (chunks.size() == 1) return run_chunk(call, 0, call.batch_size(), args...);
    using Out = decltype(run_chunk(call, 0, 0, args...));
    std::vector<Out> outs;
    for (const auto& [start, size] : chunks) outs.push_back(run_chunk(call, start, size, args...));
    for (size_t c = 1; c < outs.size(); ++c) {
      const std::string difference = tree::structure_difference(outs.front(), outs[c]);
      if (!difference.empty()) call.throw_chunk_structure(chunks[c], difference);
    }
    const std::vector<std::optional<int64_t>> dims = leaf_out_dims(call, outs.front());
    std::vector<std::vector<Tensor>> leaves;
    for (const Out& out : outs) leaves.push_back(tree::flatten(out));
    std::vector<Tensor> joined;
    for (size_t leaf = 0; leaf < dims.size(); ++leaf) {
      std::vector<Tensor> parts;
      for (const auto& chunk : leaves) parts.push_back(chunk[leaf]);
      joined.push_back(VmapCall::join(parts, dims[leaf]));
    }
    return tree::unflatten_like(outs.front(), joined);
  }

 private:
  template <class... Args>
  auto run_chunk(VmapCall& call, int64_t start, int64_t size, const Args&... args) const {
    call.enter_chunk(start, size);
    struct Leave {
      VmapCall& call;
      ~Leave() { call.leave_chunk(); }
    } leave{call};
    auto wrapped = [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Args...>{
          tree::map(args, [&](const Tensor& t) { return call.wrap(I, t); })...};
    }
    (std::index_sequence_for<Args...>());
    using Out = std::decay_t<decltype(std::apply(f_, wrapped))>;
    const Out out = call_in_transform(
        "vmap", [&] { return std::apply(f_, wrapped); }, [&] { return call.error_note(); });
    // Batched outputs keep their values after the layer is gone.
    call.leave_chunk();
    return unwrap_result(call, out);
  }

  mutable F f_;
  VmapOptions options_;
};

}  // namespace batching::detail

template <class F>
auto vmap(F f, VmapOptions options = {}) {
  return batching::detail::VmapTransform<F>(std::move(f), std::move(options));
}

}  // namespace strata
