// Names and printing of the small value types of tensor/.
#include <ostream>

#include "tensor/device.h"
#include "tensor/dispatch_key.h"
#include "tensor/error.h"
#include "tensor/scalar.h"
#include "tensor/scalar_type.h"

namespace strata {

const char* to_string(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "Bool";
    case ScalarType::Int64: return "Int64";
    case ScalarType::Float32: return "Float32";
    case ScalarType::Float64: return "Float64";
  }
  return "UnknownScalarType";
}

std::ostream& operator<<(std::ostream& out, ScalarType t) { return out << to_string(t); }

Device::Device(const std::string& spec) {
  std::string kind = spec.substr(0, spec.find(':'));
  if (kind == "cpu") {
    type = DeviceType::CPU;
  } else if (kind == "cuda") {
    type = DeviceType::CUDA;
  } else {
    STRATA_FAIL("Device", "unknown device '", spec, "': expected cpu, cuda or cuda:N");
  }
  if (kind.size() < spec.size()) {
    std::string digits = spec.substr(kind.size() + 1);
    bool ok = !digits.empty() && digits.size() <= 2 &&
              digits.find_first_not_of("0123456789") == std::string::npos;
    STRATA_CHECK(ok, "Device", "bad device index in '", spec, "': expected cuda:N");
    index = static_cast<int8_t>(std::stoi(digits));
  }
}

std::string Device::str() const {
  if (type == DeviceType::CPU) return "cpu";
  return "cuda:" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& out, Device d) { return out << d.str(); }

std::ostream& operator<<(std::ostream& out, const Scalar& s) {
  switch (s.kind()) {
    case ScalarType::Bool: return out << (s.to_bool() ? "true" : "false");
    case ScalarType::Int64: return out << s.to_int();
    default: return out << s.to_double();
  }
}

const char* to_string(DispatchKey k) {
  switch (k) {
    case DispatchKey::Undefined: return "Undefined";
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::DynamicLayerBack: return "DynamicLayerBack";
    case DispatchKey::BackendSelect: return "BackendSelect";
    case DispatchKey::AutogradCPU: return "AutogradCPU";
    case DispatchKey::AutogradCUDA: return "AutogradCUDA";
    case DispatchKey::Functionalize: return "Functionalize";
    case DispatchKey::Batched: return "Batched";
    case DispatchKey::Mode: return "Mode";
    case DispatchKey::DynamicLayerFront: return "DynamicLayerFront";
    case DispatchKey::CompositeImplicitAutograd: return "CompositeImplicitAutograd";
    case DispatchKey::CompositeExplicitAutograd: return "CompositeExplicitAutograd";
    case DispatchKey::Autograd: return "Autograd";
    case DispatchKey::EndOfKeys: break;
  }
  return "UnknownDispatchKey";
}

std::ostream& operator<<(std::ostream& out, DispatchKey k) { return out << to_string(k); }

std::ostream& operator<<(std::ostream& out, DispatchKeySet s) {
  out << "DispatchKeySet(";
  bool first = true;
  s.for_each_key([&](DispatchKey k) {
    out << (first ? "" : ", ") << to_string(k);
    first = false;
  });
  return out << ")";
}

}  // namespace strata
