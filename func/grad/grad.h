#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "func/grad/grad_call.h"
#include "func/tree.h"
#include "ops/creation.h"

// Reverse-mode transforms: grad, grad_and_value, vjp (see DESIGN.md, the public API).

namespace strata {

// Marks a function returning std::pair{output, aux}: grad(f, has_aux).
struct HasAux {};
inline constexpr HasAux has_aux{};

namespace autograd::detail {

template <size_t... I>
constexpr size_t max_index() {
  size_t m = 0;
  ((m = I > m ? I : m), ...);
  return m;
}

template <size_t K, size_t... I>
constexpr bool contains() {
  return ((K == I) || ...);
}

// No argnum appears twice: each is one input's gradient (grad<0, 0> would be
// the same gradient twice, or, as PyTorch's argnums=(0, 0), an error).
template <size_t... I>
constexpr bool distinct() {
  constexpr size_t n = sizeof...(I);
  constexpr size_t values[n == 0 ? 1 : n] = {I...};
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      if (values[a] == values[b]) return false;
    }
  }
  return true;
}

// Wraps every tensor leaf of each argument at the call's level; arguments
// listed in I... become differentiable leaves. Returns the wrapped arguments
// and, per argument, the index of its first differentiable leaf.
template <size_t... I, class... Args, size_t... K>
auto enter_arguments(GradCall& call, std::index_sequence<K...>, const Args&... args) {
  std::array<size_t, sizeof...(Args) + 1> first_leaf{};
  auto enter_one = [&]<size_t Index>(const auto& arg) {
    first_leaf[Index] = call.leaves().size();
    constexpr bool differentiable = contains<Index, I...>();
    return tree::map(arg, [&](const Tensor& t) { return call.enter(t, differentiable, Index); });
  };
  std::tuple<Args...> wrapped{enter_one.template operator()<K>(args)...};
  return std::pair{std::move(wrapped), first_leaf};
}

template <class Out, bool kAux>
const Tensor& primary_output(const Out& out) {
  if constexpr (kAux) {
    static_assert(std::is_same_v<std::decay_t<decltype(std::get<0>(out))>, Tensor>,
                  "with has_aux the function must return std::pair{Tensor, aux}");
    return std::get<0>(out);
  } else {
    static_assert(
        std::is_same_v<Out, Tensor>,
        "grad: the function must return a Tensor (or std::pair{Tensor, aux} with has_aux)");
    return out;
  }
}

template <bool kAux, bool kValue, class F, size_t... I>
class GradTransform {
 public:
  explicit GradTransform(F f) : f_(std::move(f)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    static_assert(sizeof...(I) > 0);
    static_assert(max_index<I...>() < sizeof...(Args),
                  "strata::grad: an argnum is out of range for the function's arguments");
    GradCall call(kValue ? "grad_and_value" : "grad");
    // Not a structured binding: clang before 16 cannot capture one in a lambda.
    auto entered = enter_arguments<I...>(call, std::index_sequence_for<Args...>(), args...);
    auto& wrapped = entered.first;
    auto& first_leaf = entered.second;
    using Out = std::decay_t<decltype(std::apply(f_, wrapped))>;
    Out out = call_in_transform(kValue ? "grad_and_value" : "grad",
                                [&] { return std::apply(f_, wrapped); });
    const Tensor& output = primary_output<Out, kAux>(out);
    call.check_scalar_output(output);
    call.end({output});
    std::vector<Tensor> leaf_grads = call.backward({output}, {ones_like(call.leave(output))});
    auto grad_of = [&]<size_t Index>() {
      return tree::unflatten_like(std::get<Index>(std::tuple<const Args&...>(args...)), leaf_grads,
                                  first_leaf[Index]);
    };
    auto grads = [&] {
      if constexpr (sizeof...(I) == 1) {
        return grad_of.template operator()<I...>();
      } else {
        return std::tuple{grad_of.template operator()<I>()...};
      }
    }();
    auto leave = [&](const Tensor& t) { return call.leave(t); };
    if constexpr (kAux && kValue) {
      return std::pair{std::move(grads),
                       std::pair{call.leave(std::get<0>(out)), tree::map(std::get<1>(out), leave)}};
    } else if constexpr (kAux) {
      return std::pair{std::move(grads), tree::map(std::get<1>(out), leave)};
    } else if constexpr (kValue) {
      return std::pair{std::move(grads), call.leave(out)};
    } else {
      return grads;
    }
  }

 private:
  mutable F f_;  // a stateful (mutable) lambda may be transformed too
};

}  // namespace autograd::detail

namespace autograd::detail {
// Argnums default to 0.
template <bool kAux, bool kValue, size_t... I, class F>
auto make_grad(F f) {
  static_assert(distinct<I...>(), "strata::grad: an argnum is repeated");
  if constexpr (sizeof...(I) == 0) {
    return GradTransform<kAux, kValue, F, 0>(std::move(f));
  } else {
    return GradTransform<kAux, kValue, F, I...>(std::move(f));
  }
}
}  // namespace autograd::detail

// d f / d(argument I...) of a function returning a 0-dim floating-point tensor.
// One argnum: the gradient has the argument's tree shape; several: a std::tuple.
template <size_t... I, class F>
auto grad(F f) {
  return autograd::detail::make_grad<false, false, I...>(std::move(f));
}
template <size_t... I, class F>
auto grad(F f, HasAux) {
  return autograd::detail::make_grad<true, false, I...>(std::move(f));
}
// std::pair{gradient, value} (with has_aux: {gradient, {value, aux}}).
template <size_t... I, class F>
auto grad_and_value(F f) {
  return autograd::detail::make_grad<false, true, I...>(std::move(f));
}
template <size_t... I, class F>
auto grad_and_value(F f, HasAux) {
  return autograd::detail::make_grad<true, true, I...>(std::move(f));
}

// The vector-Jacobian product function of f at `primals`, callable any number
// of times: vjp_fn(cotangents) returns a std::tuple with one gradient tree per primal.
template <class Out, class... Primals>
class VjpFunction {
 public:
  VjpFunction(std::shared_ptr<autograd::GradCall> call, std::vector<Tensor> outputs,
              std::tuple<Primals...> primals)
      : call_(std::move(call)), outputs_(std::move(outputs)), primals_(std::move(primals)) {}

  std::tuple<Primals...> operator()(const Out& cotangents) const {
    std::vector<Tensor> flat = tree::flatten(cotangents);
    std::vector<Tensor> output_values;
    for (const Tensor& o : outputs_) output_values.push_back(call_->leave(o));
    autograd::check_cotangents(output_values, flat);
    std::vector<Tensor> grads = call_->backward(outputs_, flat);
    size_t next = 0;
    return std::apply(
        [&](const auto&... primal) {
          return std::tuple<Primals...>{[&] {
            auto g = tree::unflatten_like(primal, grads, next);
            next += tree::num_leaves(primal);
            return g;
          }()...};
        },
        primals_);
  }

 private:
  std::shared_ptr<autograd::GradCall> call_;
  std::vector<Tensor> outputs_;  // wrappers at the vjp's level
  std::tuple<Primals...> primals_;
};

namespace autograd::detail {
template <class F, class... Primals, size_t... K>
auto vjp(F& f, std::index_sequence<K...> indices, const Primals&... primals) {
  auto call = std::make_shared<GradCall>("vjp");
  auto wrapped = enter_arguments<K...>(*call, indices, primals...).first;
  using Out = std::decay_t<decltype(std::apply(f, wrapped))>;
  Out out = call_in_transform("vjp", [&] { return std::apply(f, wrapped); });
  std::vector<Tensor> outputs = tree::flatten(out);
  call->end(outputs);
  Out values = tree::map(out, [&](const Tensor& t) { return call->leave(t); });
  VjpFunction<Out, Primals...> vjp_fn(call, std::move(outputs), std::tuple<Primals...>(primals...));
  return std::pair{std::move(values), std::move(vjp_fn)};
}
}  // namespace autograd::detail

// std::pair{f(primals...), vjp_fn}; every tensor leaf of the primals is differentiated.
template <class F, class... Primals>
auto vjp(F&& f, const Primals&... primals) {
  return autograd::detail::vjp(f, std::index_sequence_for<Primals...>(), primals...);
}

}  // namespace strata
