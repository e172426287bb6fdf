#include "func/trace/typed_replay.h"

#include <mutex>
#include <optional>
#include <tuple>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "func/trace/graph.h"
#include "tensor/error.h"

// Note [Typed replay]
// A node whose kernel was registered unboxed with one of the signatures listed
// below is replayed by a typed call of that kernel: its tensor arguments are read
// straight from the value slots, its constants converted from their IValues as the
// kernel's own boxing would (the same FromIValue conversions, so a typed call
// accepts exactly what a boxed one does), and its results written to their slots.
// No Stack, no IValue per argument, no heap allocation of the replay's own. The
// signature is matched exactly (typeid of the kernel's C++ function type) when the
// node is made, so the typed call's parameter types are the kernel's. Signatures
// with a Generator (replay gives it a fresh copy, Note [Replay]) or a tensor list
// argument (which would need a vector built per call) stay boxed.

namespace strata {
namespace {

// How a node argument becomes the kernel's C++ argument of type A.
template <class A>
struct ArgFrom {
  using T = std::decay_t<A>;
  static bool fits(const NodeArg& arg) { return arg.kind == NodeArg::Kind::Constant; }
  static decltype(auto) get(const NodeArg& arg, const Tensor*) {
    return boxing::FromIValue<T>::get(arg.constant);
  }
};
template <>
struct ArgFrom<const Tensor&> {
  static bool fits(const NodeArg& arg) { return arg.kind == NodeArg::Kind::Value; }
  static const Tensor& get(const NodeArg& arg, const Tensor* slots) {
    return slots[static_cast<size_t>(arg.values[0])];
  }
};
template <>
struct ArgFrom<const std::optional<Tensor>&> {
  static bool fits(const NodeArg& arg) {
    return arg.kind == NodeArg::Kind::Value ||
           (arg.kind == NodeArg::Kind::Constant && arg.constant.is_none());
  }
  static std::optional<Tensor> get(const NodeArg& arg, const Tensor* slots) {
    if (arg.kind != NodeArg::Kind::Value) return std::nullopt;
    return slots[static_cast<size_t>(arg.values[0])];
  }
};

[[noreturn]] void bad_results(const GraphNode& node) {
  STRATA_FAIL("Graph", node.op.operator_name().to_string(),
              "'s results in the graph do not match its schema's returns");
}

void store(const GraphNode& node, size_t index, Tensor* slots, Tensor value) {
  if (node.results.size() <= index || node.results[index].is_list ||
      node.results[index].values.size() != 1) {
    bad_results(node);
  }
  slots[static_cast<size_t>(node.results[index].values[0])] = std::move(value);
}

template <class Sig>
struct Typed;
template <class Ret, class... Args>
struct Typed<Ret(Args...)> {
  static bool fits(const NodeArg* args, size_t num_args) {
    if (num_args != sizeof...(Args)) return false;
    size_t i = 0;
    return (ArgFrom<Args>::fits(args[i++]) && ...);
  }

  static void run(const GraphNode& node, const NodeArg* args, Tensor* slots) {
    const auto call = [&]<size_t... I>(std::index_sequence<I...>) -> Ret {
      return node.kernel->call<Ret, Args...>(node.op, node.keys,
                                             ArgFrom<Args>::get(args[I], slots)...);
    };
    if constexpr (std::is_same_v<std::decay_t<Ret>, Tensor>) {
      store(node, 0, slots, call(std::index_sequence_for<Args...>()));
    } else {
      auto results = call(std::index_sequence_for<Args...>());
      std::apply([&](auto&... parts) {
        size_t k = 0;
        (store(node, k++, slots, std::move(parts)), ...);
      }, results);
    }
  }
};

struct Entry {
  const std::type_info* signature;
  bool (*fits)(const NodeArg*, size_t);
  TypedReplayFn run;
};
template <class Sig>
constexpr Entry entry() {
  return {&typeid(Sig), &Typed<Sig>::fits, &Typed<Sig>::run};
}

using T = const Tensor&;
using OptT = const std::optional<Tensor>&;
using S = const Scalar&;
using OptDtype = std::optional<ScalarType>;
const Entry kTyped[] = {
    // elementwise
    entry<Tensor(T)>(),
    entry<Tensor(T, T)>(),
    entry<Tensor(T, T, S)>(),
    entry<Tensor(T, S)>(),
    entry<Tensor(T, S, S)>(),
    entry<Tensor(T, T, T)>(),
    entry<Tensor(T, T, T, T)>(),
    entry<Tensor(T, T, T, S)>(),
    entry<Tensor(T, T, T, S, S)>(),
    entry<const Tensor&(T)>(),
    entry<const Tensor&(T, T)>(),
    entry<const Tensor&(T, T, S)>(),
    entry<const Tensor&(T, S)>(),
    // reductions, softmax, losses
    entry<Tensor(T, IntArrayRef, bool)>(),
    entry<Tensor(T, IntArrayRef, int64_t, bool)>(),
    entry<Tensor(T, int64_t, bool)>(),
    entry<Tensor(T, std::optional<int64_t>, bool)>(),
    entry<std::tuple<Tensor, Tensor>(T, int64_t, bool)>(),
    entry<Tensor(T, OptDtype)>(),
    entry<Tensor(T, ScalarType)>(),
    entry<Tensor(T, int64_t)>(),
    entry<Tensor(T, T, int64_t)>(),
    entry<Tensor(T, T, OptT)>(),
    entry<Tensor(T, T, OptT, int64_t, int64_t)>(),
    entry<Tensor(T, IntArrayRef, OptT, OptT, double)>(),
    // shapes and indexing
    entry<Tensor(T, IntArrayRef)>(),
    entry<Tensor(T, int64_t, int64_t)>(),
    entry<Tensor(T, int64_t, int64_t, int64_t)>(),
    entry<Tensor(T, int64_t, T)>(),
    // creation
    entry<Tensor(IntArrayRef, OptDtype, std::optional<Device>)>(),
    entry<Tensor(T, S, OptDtype)>(),
};

// The entry for a kernel signature, or null. The usual case, the same type_info
// object, is an address compare without a lock; type_info equality may compare
// names (another shared object's copy), so those are looked up once and cached.
const Entry* scan_for(const std::type_info& signature) {
  for (const Entry& e : kTyped) {
    if (e.signature == &signature) return &e;
  }
  static std::mutex mutex;
  static std::unordered_map<const std::type_info*, const Entry*> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto [it, inserted] = cache.try_emplace(&signature, nullptr);
  if (inserted) {
    for (const Entry& e : kTyped) {
      if (*e.signature == signature) it->second = &e;
    }
  }
  return it->second;
}

// A trace resolves the same few kernels again and again: each thread remembers
// the entries it found in a small direct-mapped table in front of the scan (a
// plain initial-exec thread_local: no TLS call, no lock).
struct Memo {
  const std::type_info* signature;
  const Entry* entry;
};
thread_local Memo tls_memo[16] __attribute__((tls_model("initial-exec")));

const Entry* entry_for(const std::type_info& signature) {
  Memo& memo = tls_memo[(reinterpret_cast<uintptr_t>(&signature) >> 4) & 15];
  if (memo.signature != &signature) memo = {&signature, scan_for(signature)};
  return memo.entry;
}

}  // namespace

TypedReplayFn typed_replay_for(const GraphNode& node, const NodeArg* args, size_t num_args) {
  if (node.kernel == nullptr || !node.kernel->has_unboxed() || !node.kernel->cpp_signature()) {
    return nullptr;
  }
  const Entry* e = entry_for(*node.kernel->cpp_signature()->type);
  return e != nullptr && e->fits(args, num_args) ? e->run : nullptr;
}

}  // namespace strata
