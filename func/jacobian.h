#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "func/grad/grad.h"
#include "func/jvp/jvp_call.h"
#include "func/tree.h"
#include "func/tree_structure.h"
#include "func/vmap/vmap_call.h"

// Jacobians: jacrev, jacfwd, hessian (see DESIGN.md, the public API).

namespace strata {

// Note [Jacobians]
// jacrev evaluates f once under a grad layer, then pulls back every vector of the
// standard basis of f's outputs (row k of the M x M identity, M the outputs' total
// numel, split per output leaf and shaped like it) through the recorded graph:
// vmap of the backward pass over the basis. jacfwd pushes the standard basis of
// the differentiated inputs (N rows) forward: vmap of a jvp of f. Either way the
// rows come back stacked, [M, input shape...] per input leaf (jacrev) or
// [N, output shape...] per output leaf (jacfwd), and the Jacobian of output leaf o
// w.r.t. input leaf l is the block of rows of o (of l), viewed as o's shape
// followed by l's (as torch.func lays it out). With chunk_size, jacrev builds and
// pulls back the basis chunk_size rows at a time, so only one chunk of the M x M
// identity and of the batched intermediates lives at once, and a chunk of one row
// is a plain call, without vmap; jacfwd hands chunk_size to its one vmap call, whose
// chunks replay the same random streams. M or N of 1 (hessian's inner jacrev) is a
// plain call too.
//
// Trees: the Jacobian of an output tree w.r.t. an input tree is the output tree
// with each tensor leaf replaced by a tree of the input's shape (JacobianTree); with
// several argnums, by a std::tuple of them. Non-tensor leaves of the output are
// constants and pass through unchanged.
struct JacobianOptions {
  // Basis vectors per vmapped call: bounds the memory of the batched pass (0: all
  // at once; 1: jacrev runs a plain loop).
  int64_t chunk_size = 0;
  // Random ops in f under jacfwd's vmap (jacrev runs f once, outside of vmap).
  Randomness randomness = Randomness::Error;
};

namespace jacobian {

// The tensors a basis vector is pushed to: those that depend on it (cotangents
// of the inputs, tangents of the outputs) and those that do not (jacfwd's aux).
using Pushed = std::pair<std::vector<Tensor>, std::vector<Tensor>>;
using BasisFunction = std::function<Pushed(const std::vector<Tensor>&)>;

// jacrev's untemplated part: the Jacobian blocks of `outputs` (wrappers at the
// call's level) w.r.t. the call's differentiable leaves, output-major.
std::vector<Tensor> reverse(autograd::GradCall& call, const std::vector<Tensor>& outputs,
                            const JacobianOptions& options);
// jacfwd's: `push` runs f with one tangent per leaf of `primals`. Returns the
// Jacobian blocks, output-major, and the aux leaves.
Pushed forward(const BasisFunction& push, const std::vector<Tensor>& primals,
               const JacobianOptions& options);
// Only floating-point outputs have a Jacobian.
void check_output(const char* transform, size_t index, const Tensor& value, int64_t level);
// A Jacobian needs at least one output tensor.
void check_has_outputs(const char* transform, size_t count, int64_t level);
// Raises that f returned a result structured otherwise on a later chunk of
// basis vectors than on the first (`difference` says where).
[[noreturn]] void throw_chunk_structure(const char* transform, int64_t chunk_size,
                                        const std::string& difference);

namespace detail {

// JacobianTree<Out, In>: Out with every Tensor leaf replaced by In (Note [Jacobians]).
template <class Out, class In>
struct JacobianTreeOf {
  static_assert(!tree::detail::HasFields<Out>::value,
                "strata::jacrev/jacfwd: a registered struct cannot be an output tree (its "
                "Jacobian has other leaf types); return a std::tuple, std::vector or std::map");
  using type = Out;  // a constant leaf
};
template <class Out, class In>
using JacobianTree = typename JacobianTreeOf<Out, In>::type;
template <class In>
struct JacobianTreeOf<Tensor, In> {
  using type = In;
};
template <class E, class A, class In>
struct JacobianTreeOf<std::vector<E, A>, In> {
  using type = std::vector<JacobianTree<E, In>>;
};
template <class E, size_t N, class In>
struct JacobianTreeOf<std::array<E, N>, In> {
  using type = std::array<JacobianTree<E, In>, N>;
};
template <class... E, class In>
struct JacobianTreeOf<std::tuple<E...>, In> {
  using type = std::tuple<JacobianTree<E, In>...>;
};
template <class A, class B, class In>
struct JacobianTreeOf<std::pair<A, B>, In> {
  using type = std::pair<JacobianTree<A, In>, JacobianTree<B, In>>;
};
template <class V, class C, class A, class In>
struct JacobianTreeOf<std::map<std::string, V, C, A>, In> {
  using type = std::map<std::string, JacobianTree<V, In>>;
};

// The JacobianTree of `out`: tensor leaf k (in tree order) becomes input_tree(k).
template <class In, class Out, class InputTree>
JacobianTree<Out, In> build(const Out& out, size_t& next, const InputTree& input_tree) {
  using Result = JacobianTree<Out, In>;
  if constexpr (std::is_same_v<Out, Tensor>) {
    return input_tree(next++);
  } else if constexpr (tree::detail::IsSequence<Out>::value) {
    Result result;
    if constexpr (requires { result.reserve(0); }) {
      result.reserve(out.size());
      for (const auto& element : out) result.push_back(build<In>(element, next, input_tree));
    } else {
      for (size_t i = 0; i < out.size(); ++i) result[i] = build<In>(out[i], next, input_tree);
    }
    return result;
  } else if constexpr (tree::detail::IsProduct<Out>::value) {
    // Braced initialization evaluates left to right: leaves stay in tree order.
    return std::apply(
        [&](const auto&... element) { return Result{build<In>(element, next, input_tree)...}; },
        out);
  } else if constexpr (tree::detail::IsStringMap<Out>::value) {
    Result result;
    for (const auto& [key, value] : out) result.emplace(key, build<In>(value, next, input_tree));
    return result;
  } else {
    return out;
  }
}

// Puts the flat blocks (output-major, `per_output` per output leaf, the input
// leaves of the arguments in argument order, argument K's first at first_leaf[K])
// into out's JacobianTree; the input trees are those of argnums I....
template <size_t... I, class Out, size_t N, class... Args>
auto assemble(const Out& out, const std::vector<Tensor>& blocks, size_t per_output,
              const std::array<size_t, N>& first_leaf, const Args&... args) {
  const std::tuple<const Args&...> all(args...);
  auto input_tree = [&](size_t output) {
    auto of = [&]<size_t K>() {
      return tree::unflatten_like(std::get<K>(all), blocks, output * per_output + first_leaf[K]);
    };
    if constexpr (sizeof...(I) == 1) {
      return of.template operator()<I...>();
    } else {
      return std::tuple{of.template operator()<I>()...};
    }
  };
  size_t next = 0;
  return build<decltype(input_tree(0))>(out, next, input_tree);
}

template <bool kAux, class Result>
const auto& output_of(const Result& result) {
  if constexpr (kAux) {
    static_assert(tree::detail::IsProduct<Result>::value && std::tuple_size_v<Result> == 2,
                  "with has_aux the function must return std::pair{output, aux}");
    return std::get<0>(result);
  } else {
    return result;
  }
}

template <bool kAux, class F, size_t... I>
class Jacrev {
 public:
  Jacrev(F f, JacobianOptions options) : f_(std::move(f)), options_(options) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    static_assert(autograd::detail::max_index<I...>() < sizeof...(Args),
                  "strata::jacrev: an argnum is out of range for the function's arguments");
    static_assert(autograd::detail::distinct<I...>(), "strata::jacrev: an argnum is repeated");
    autograd::GradCall call("jacrev");
    auto entered =
        autograd::detail::enter_arguments<I...>(call, std::index_sequence_for<Args...>(), args...);
    const auto result = call_in_transform("jacrev", [&] { return std::apply(f_, entered.first); });
    const auto& out = output_of<kAux>(result);
    call.end(tree::flatten(out));
    const std::vector<Tensor> blocks = reverse(call, tree::flatten(out), options_);
    auto jacobian = assemble<I...>(out, blocks, call.leaves().size(), entered.second, args...);
    if constexpr (kAux) {
      auto aux = tree::map(std::get<1>(result), [&](const Tensor& t) { return call.leave(t); });
      return std::pair{std::move(jacobian), std::move(aux)};
    } else {
      return jacobian;
    }
  }

 private:
  mutable F f_;
  JacobianOptions options_;
};

template <bool kAux, class F, size_t... I>
class Jacfwd {
 public:
  Jacfwd(F f, JacobianOptions options) : f_(std::move(f)), options_(options) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    static_assert(autograd::detail::max_index<I...>() < sizeof...(Args),
                  "strata::jacfwd: an argnum is out of range for the function's arguments");
    static_assert(autograd::detail::distinct<I...>(), "strata::jacfwd: an argnum is repeated");
    std::vector<Tensor> primals;
    std::array<size_t, sizeof...(Args) + 1> first_leaf{};
    auto collect = [&]<size_t K>(const auto& arg) {
      first_leaf[K] = primals.size();
      if constexpr (autograd::detail::contains<K, I...>()) {
        tree::for_each_leaf(arg, [&](const Tensor& t) { primals.push_back(t); });
      }
    };
    [&]<size_t... K>(std::index_sequence<K...>) { (collect.template operator()<K>(args), ...); }
    (std::index_sequence_for<Args...>());

    using Result = std::decay_t<decltype(std::apply(f_, std::declval<std::tuple<Args...>&>()))>;
    std::optional<Result> skeleton;  // f's result with undefined leaves: its tree shape
    const BasisFunction push = [&](const std::vector<Tensor>& tangents) {
      forward::JvpCall call("jacfwd");
      size_t next = 0;
      auto enter = [&]<size_t K>(const auto& arg) {
        if constexpr (autograd::detail::contains<K, I...>()) {
          return tree::map(arg,
                           [&](const Tensor& t) { return call.enter(t, tangents[next++], K); });
        } else {
          return arg;
        }
      };
      auto entered = [&]<size_t... K>(std::index_sequence<K...>) {
        return std::tuple<Args...>{enter.template operator()<K>(args)...};
      }
      (std::index_sequence_for<Args...>());
      const Result result = call_in_transform("jacfwd", [&] { return std::apply(f_, entered); });
      call.end(tree::flatten(output_of<kAux>(result)));
      Pushed pushed;
      tree::for_each_leaf(output_of<kAux>(result), [&](const Tensor& t) {
        check_output("jacfwd", pushed.first.size(), call.primal(t), call.level());
        pushed.first.push_back(call.tangent(t));
      });
      check_has_outputs("jacfwd", pushed.first.size(), call.level());
      if constexpr (kAux) {
        tree::for_each_leaf(std::get<1>(result),
                            [&](const Tensor& t) { pushed.second.push_back(call.primal(t)); });
      }
      if (!skeleton) {
        skeleton = tree::map(result, [](const Tensor&) { return Tensor(); });
      } else if (std::string difference = tree::structure_difference(*skeleton, result);
                 !difference.empty()) {
        throw_chunk_structure("jacfwd", options_.chunk_size, difference);
      }
      return pushed;
    };
    const Pushed blocks_and_aux = forward(push, primals, options_);
    auto jacobian = assemble<I...>(output_of<kAux>(*skeleton), blocks_and_aux.first, primals.size(),
                                   first_leaf, args...);
    if constexpr (kAux) {
      return std::pair{std::move(jacobian),
                       tree::unflatten_like(std::get<1>(*skeleton), blocks_and_aux.second)};
    } else {
      return jacobian;
    }
  }

 private:
  mutable F f_;
  JacobianOptions options_;
};

// Argnums default to 0.
template <template <bool, class, size_t...> class Transform, bool kAux, size_t... I, class F>
auto make(F f, JacobianOptions options) {
  if constexpr (sizeof...(I) == 0) {
    return Transform<kAux, F, 0>(std::move(f), options);
  } else {
    return Transform<kAux, F, I...>(std::move(f), options);
  }
}

}  // namespace detail
}  // namespace jacobian

// The Jacobian of f w.r.t. arguments I... (default 0) by reverse mode: one
// evaluation of f, then a batched backward pass per chunk of output directions.
// For Tensor -> Tensor, shape out.shape + in.shape; trees as in Note [Jacobians].
template <size_t... I, class F>
auto jacrev(F f, JacobianOptions options = {}) {
  return jacobian::detail::make<jacobian::detail::Jacrev, false, I...>(std::move(f), options);
}
// f returns std::pair{output, aux}: std::pair{jacobian, aux}.
template <size_t... I, class F>
auto jacrev(F f, HasAux, JacobianOptions options = {}) {
  return jacobian::detail::make<jacobian::detail::Jacrev, true, I...>(std::move(f), options);
}

// The same Jacobian by forward mode: f evaluated under vmap of jvp, once per
// chunk of input directions.
template <size_t... I, class F>
auto jacfwd(F f, JacobianOptions options = {}) {
  return jacobian::detail::make<jacobian::detail::Jacfwd, false, I...>(std::move(f), options);
}
template <size_t... I, class F>
auto jacfwd(F f, HasAux, JacobianOptions options = {}) {
  return jacobian::detail::make<jacobian::detail::Jacfwd, true, I...>(std::move(f), options);
}

// Second derivatives of a scalar f: jacfwd(jacrev(f)) with the same argnums.
template <size_t... I, class F>
auto hessian(F f) {
  return jacfwd<I...>(jacrev<I...>(std::move(f)));
}

}  // namespace strata
