#include "dispatcher/op_def.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include "dispatcher/dispatcher.h"
#include "tensor/error.h"

namespace strata {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<RegisteredOpDef> rows;
  std::unordered_map<OperatorName, const OpDef*> by_name;
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked: rows may be looked up during static teardown
  return *r;
}

}  // namespace

struct OpFamily::Registrations {
  std::vector<OpDef> rows;
  std::vector<OperatorName> names;
  std::vector<RegistrationHandle> handles;
};

OpFamily::OpFamily(const char* family, std::vector<OpDef> rows, const char* ns)
    : registrations_(new Registrations{std::move(rows), {}, {}}) {
  Dispatcher& dispatcher = Dispatcher::singleton();
  const std::string debug = std::string("op family ") + family;
  for (const OpDef& row : registrations_->rows) {
    STRATA_CHECK(row.schema != nullptr, "OpFamily", "a row of family ", family, " has no schema");
    std::string text = row.schema;
    const size_t paren = text.find('(');
    if (text.substr(0, paren).find("::") == std::string::npos) text = std::string(ns) + "::" + text;
    FunctionSchema schema = parse_schema(text);
    const OperatorName name = schema.operator_name();
    auto& handles = registrations_->handles;
    handles.push_back(dispatcher.register_def(std::move(schema), debug));
    const auto impl = [&](DispatchKey key, const Kernel& kernel) {
      if (kernel.valid()) handles.push_back(dispatcher.register_impl(name, key, kernel.function, debug));
    };
    impl(DispatchKey::CPU, row.cpu);
    impl(DispatchKey::CUDA, row.cuda);
    impl(DispatchKey::CompositeExplicitAutograd, row.all_backends);
    impl(DispatchKey::BackendSelect, row.backend_select);
    impl(DispatchKey::Autograd, row.derivative.value);
    impl(DispatchKey::Batched, row.batching.value);
    if (row.is_composite()) impl(DispatchKey::CompositeImplicitAutograd, row.decomposition.value);
    registrations_->names.push_back(name);
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.rows.push_back({name.to_string(), family, &row});
    r.by_name[name] = &row;
  }
}

OpFamily::~OpFamily() {
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const OperatorName& name : registrations_->names) r.by_name.erase(name);
    std::erase_if(r.rows, [&](const RegisteredOpDef& row) {
      return row.def >= registrations_->rows.data() &&
             row.def < registrations_->rows.data() + registrations_->rows.size();
    });
  }
  delete registrations_;
}

std::vector<RegisteredOpDef> registered_op_defs() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.rows;
}

const OpDef* find_op_def(const OperatorName& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

const OpDef* find_op_def(const OperatorHandle& op) { return find_op_def(op.operator_name()); }

}  // namespace strata
