#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/dispatcher.h"

namespace strata {

// Registers schemas, kernels and fallbacks; everything it registered is removed
// when it is destroyed. Usually created by the macros below:
//
//   STRATA_LIBRARY(myns, m) { m.def("myns::scale(Tensor self, float k) -> Tensor"); }
//   STRATA_LIBRARY_IMPL(myns, CPU, m) { m.impl("scale", &scale_cpu); }
//   STRATA_LIBRARY_IMPL(_, Mode, m) { m.fallback(KernelFunction::from_boxed(&f)); }
class Library {
 public:
  enum class Kind { Def, Impl };

  // ns "_" in an Impl library means "any namespace" (for fallbacks).
  Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file, int line);
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  Library(Library&&) = default;
  Library& operator=(Library&&) = default;

  // A schema string; its namespace may be omitted ("add(Tensor a) -> Tensor").
  Library& def(std::string_view schema);
  // def() plus a CompositeImplicitAutograd kernel: the op is defined by this function.
  template <class F>
  Library& def(std::string_view schema, F&& function) {
    OperatorName name = def_and_name(schema);
    register_kernel(name, DispatchKey::CompositeImplicitAutograd,
                    KernelFunction::from_unboxed(std::forward<F>(function)));
    return *this;
  }

  // "add.Tensor" (or "ns::add.Tensor") at the library's key or at an explicit one.
  template <class F>
  Library& impl(std::string_view name, F&& function) {
    return impl(name, required_key(name), std::forward<F>(function));
  }
  template <class F>
  Library& impl(std::string_view name, DispatchKey key, F&& function) {
    register_kernel(qualified_name(name), key, to_kernel(std::forward<F>(function)));
    return *this;
  }

  // A boxed kernel used for every op that has no kernel of its own at this
  // library's key.
  Library& fallback(KernelFunction kernel);

 private:
  template <class F>
  static KernelFunction to_kernel(F&& function) {
    if constexpr (std::is_same_v<std::decay_t<F>, KernelFunction>) {
      return std::forward<F>(function);
    } else {
      return KernelFunction::from_unboxed(std::forward<F>(function));
    }
  }
  OperatorName def_and_name(std::string_view schema);
  OperatorName qualified_name(std::string_view name) const;
  DispatchKey required_key(std::string_view name) const;
  void register_kernel(const OperatorName& name, DispatchKey key, KernelFunction kernel);
  std::string debug() const;

  Kind kind_;
  std::string ns_;
  std::optional<DispatchKey> key_;
  const char* file_;
  int line_;
  std::vector<RegistrationHandle> registrations_;
};

namespace detail {
// Runs a library's init function at static-initialization time and keeps the
// Library (and so its registrations) alive for the program's life.
class StaticLibrary {
 public:
  StaticLibrary(Library::Kind kind, const char* ns, std::optional<DispatchKey> key,
                void (*init)(Library&), const char* file, int line)
      : library_(kind, ns, key, file, line) {
    init(library_);
  }

 private:
  Library library_;
};
}  // namespace detail

}  // namespace strata

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)

// Several STRATA_LIBRARY blocks may define ops of one namespace (one per op family).
#define STRATA_LIBRARY(ns, m)                                                            \
  static void STRATA_CONCAT(strata_library_init_##ns##_, __LINE__)(::strata::Library&);  \
  static const ::strata::detail::StaticLibrary STRATA_CONCAT(strata_library_##ns##_,     \
                                                             __LINE__)(                  \
      ::strata::Library::Kind::Def, #ns, std::nullopt,                                   \
      &STRATA_CONCAT(strata_library_init_##ns##_, __LINE__), __FILE__, __LINE__);        \
  static void STRATA_CONCAT(strata_library_init_##ns##_, __LINE__)(::strata::Library & m)

#define STRATA_LIBRARY_IMPL(ns, key, m)                                                     \
  static void STRATA_CONCAT(strata_impl_init_##ns##_##key##_, __LINE__)(::strata::Library&);  \
  static const ::strata::detail::StaticLibrary STRATA_CONCAT(strata_impl_##ns##_##key##_,     \
                                                             __LINE__)(                     \
      ::strata::Library::Kind::Impl, #ns, ::strata::DispatchKey::key,                       \
      &STRATA_CONCAT(strata_impl_init_##ns##_##key##_, __LINE__), __FILE__, __LINE__);      \
  static void STRATA_CONCAT(strata_impl_init_##ns##_##key##_, __LINE__)(::strata::Library & m)
