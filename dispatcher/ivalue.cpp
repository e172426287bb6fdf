#include "dispatcher/ivalue.h"

#include <ostream>

#include "tensor/error.h"

namespace strata {

const char* to_string(IValue::Tag tag) {
  switch (tag) {
    case IValue::Tag::None: return "None";
    case IValue::Tag::Tensor: return "Tensor";
    case IValue::Tag::Double: return "float";
    case IValue::Tag::Int: return "int";
    case IValue::Tag::Bool: return "bool";
    case IValue::Tag::Scalar: return "Scalar";
    case IValue::Tag::ScalarType: return "ScalarType";
    case IValue::Tag::Device: return "Device";
    case IValue::Tag::String: return "str";
    case IValue::Tag::IntList: return "int[]";
    case IValue::Tag::DoubleList: return "float[]";
    case IValue::Tag::BoolList: return "bool[]";
    case IValue::Tag::TensorList: return "Tensor[]";
    case IValue::Tag::Generator: return "Generator";
  }
  return "unknown";
}

namespace {
[[noreturn]] void wrong_tag(IValue::Tag expected, IValue::Tag actual) {
  STRATA_FAIL("IValue", "expected a value of type ", to_string(expected), " but got ",
              to_string(actual));
}
}  // namespace

#define STRATA_IVALUE_ACCESSOR(RET, NAME, TAG, TYPE)   \
  RET IValue::NAME() const {                           \
    if (tag() != Tag::TAG) wrong_tag(Tag::TAG, tag()); \
    return std::get<TYPE>(value_);                     \
  }
STRATA_IVALUE_ACCESSOR(ScalarType, to_scalar_type, ScalarType, ScalarType)
STRATA_IVALUE_ACCESSOR(Device, to_device, Device, Device)
STRATA_IVALUE_ACCESSOR(const std::string&, to_string_ref, String, std::string)
STRATA_IVALUE_ACCESSOR(const std::vector<int64_t>&, to_int_list, IntList, std::vector<int64_t>)
STRATA_IVALUE_ACCESSOR(const std::vector<double>&, to_double_list, DoubleList, std::vector<double>)
STRATA_IVALUE_ACCESSOR(const std::vector<bool>&, to_bool_list, BoolList, std::vector<bool>)
STRATA_IVALUE_ACCESSOR(const std::vector<Tensor>&, to_tensor_list, TensorList, std::vector<Tensor>)
STRATA_IVALUE_ACCESSOR(const Generator&, to_generator, Generator, Generator)
#undef STRATA_IVALUE_ACCESSOR

void IValue::throw_wrong_tag(Tag expected) const { wrong_tag(expected, tag()); }

std::vector<Tensor>& IValue::to_tensor_list() {
  if (tag() != Tag::TensorList) wrong_tag(Tag::TensorList, tag());
  return std::get<std::vector<Tensor>>(value_);
}

bool IValue::is_number() const {
  Tag t = tag();
  return t == Tag::Double || t == Tag::Int || t == Tag::Bool || t == Tag::Scalar;
}

Scalar IValue::to_scalar() const {
  switch (tag()) {
    case Tag::Scalar: return std::get<Scalar>(value_);
    case Tag::Double: return Scalar(std::get<double>(value_));
    case Tag::Int: return Scalar(std::get<int64_t>(value_));
    case Tag::Bool: return Scalar(std::get<bool>(value_));
    default: wrong_tag(Tag::Scalar, tag());
  }
}

double IValue::to_double() const {
  if (tag() == Tag::Double) return std::get<double>(value_);
  if (is_number()) return to_scalar().to_double();
  wrong_tag(Tag::Double, tag());
}

int64_t IValue::to_int() const {
  if (tag() == Tag::Int) return std::get<int64_t>(value_);
  if (tag() == Tag::Scalar && to_scalar().is_integral()) return to_scalar().to_int();
  wrong_tag(Tag::Int, tag());
}

bool IValue::to_bool() const {
  if (tag() == Tag::Bool) return std::get<bool>(value_);
  if (tag() == Tag::Scalar && to_scalar().is_bool()) return to_scalar().to_bool();
  wrong_tag(Tag::Bool, tag());
}

std::ostream& operator<<(std::ostream& out, const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None: return out << "None";
    case IValue::Tag::Tensor: {
      const Tensor& t = v.to_tensor();
      if (!t.defined()) return out << "Tensor(undefined)";
      return out << "Tensor" << shape_string(t.sizes()) << ' ' << t.dtype();
    }
    case IValue::Tag::Double: return out << v.to_double();
    case IValue::Tag::Int: return out << v.to_int();
    case IValue::Tag::Bool: return out << (v.to_bool() ? "True" : "False");
    case IValue::Tag::Scalar: return out << v.to_scalar();
    case IValue::Tag::ScalarType: return out << v.to_scalar_type();
    case IValue::Tag::Device: return out << v.to_device();
    case IValue::Tag::String: return out << '\'' << v.to_string_ref() << '\'';
    case IValue::Tag::IntList: return out << shape_string(v.to_int_list());
    case IValue::Tag::DoubleList: {
      out << '[';
      const auto& list = v.to_double_list();
      for (size_t i = 0; i < list.size(); ++i) out << (i ? ", " : "") << list[i];
      return out << ']';
    }
    case IValue::Tag::BoolList: return out << "bool[" << v.to_bool_list().size() << ']';
    case IValue::Tag::TensorList: return out << "Tensor[" << v.to_tensor_list().size() << ']';
    case IValue::Tag::Generator: return out << "Generator(seed=" << v.to_generator().seed() << ')';
  }
  return out;
}

}  // namespace strata
