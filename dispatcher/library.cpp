#include "dispatcher/library.h"

#include "tensor/error.h"

namespace strata {

Library::Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file,
                 int line)
    : kind_(kind), ns_(std::move(ns)), key_(key), file_(file), line_(line) {}

std::string Library::debug() const {
  return std::string("registered at ") + file_ + ":" + std::to_string(line_);
}

Library& Library::def(std::string_view schema) {
  def_and_name(schema);
  return *this;
}

OperatorName Library::def_and_name(std::string_view schema_text) {
  STRATA_CHECK(kind_ == Kind::Def, "Library", "def() is only allowed in a STRATA_LIBRARY block (",
               debug(), ")");
  std::string text(schema_text);
  size_t paren = text.find('(');
  if (text.substr(0, paren).find("::") == std::string::npos) text = ns_ + "::" + text;
  FunctionSchema schema = parse_schema(text);
  STRATA_CHECK(schema.name().starts_with(ns_ + "::"), "Library", "schema ", schema.to_string(),
               " is not in this library's namespace '", ns_, "' (", debug(), ")");
  OperatorName name = schema.operator_name();
  registrations_.push_back(Dispatcher::singleton().register_def(std::move(schema), debug()));
  return name;
}

OperatorName Library::qualified_name(std::string_view name) const {
  std::string text(name);
  if (text.find("::") == std::string::npos) {
    STRATA_CHECK(ns_ != "_", "Library", "impl('", text,
                 "') needs a namespace in a library for any namespace (", debug(), ")");
    text = ns_ + "::" + text;
  } else {
    STRATA_CHECK(ns_ == "_" || text.starts_with(ns_ + "::"), "Library", "impl('", text,
                 "') is not in this library's namespace '", ns_, "' (", debug(), ")");
  }
  return parse_operator_name(text);
}

DispatchKey Library::required_key(std::string_view name) const {
  STRATA_CHECK(key_.has_value(), "Library", "impl('", name,
               "') needs a dispatch key: use STRATA_LIBRARY_IMPL or impl(name, key, fn) (",
               debug(), ")");
  return *key_;
}

void Library::register_kernel(const OperatorName& name, DispatchKey key, KernelFunction kernel) {
  registrations_.push_back(
      Dispatcher::singleton().register_impl(name, key, std::move(kernel), debug()));
}

Library& Library::fallback(KernelFunction kernel) {
  STRATA_CHECK(kind_ == Kind::Impl && key_.has_value(), "Library",
               "fallback() needs a STRATA_LIBRARY_IMPL block with a dispatch key (", debug(), ")");
  registrations_.push_back(
      Dispatcher::singleton().register_fallback(*key_, std::move(kernel), debug()));
  return *this;
}

}  // namespace strata
