#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tensor/allocator.h"
#include "tensor/device.h"
#include "tensor/generator.h"
#include "tensor/scalar.h"
#include "tensor/scalar_type.h"
#include "tensor/tensor.h"

namespace strata {

// A boxed value: any argument or result an operator can take, so one boxed
// kernel (a fallback, a mode, the tracer) can handle every operator through a
// Stack of them.
class IValue {
 public:
  enum class Tag : uint8_t {
    None,
    Tensor,
    Double,
    Int,
    Bool,
    Scalar,
    ScalarType,
    Device,
    String,
    IntList,
    DoubleList,
    BoolList,
    TensorList,
    Generator,
  };

  IValue() = default;
  IValue(std::nullopt_t) {}
  IValue(Tensor t) : value_(std::move(t)) {}
  IValue(double v) : value_(v) {}
  IValue(int64_t v) : value_(v) {}
  IValue(int v) : value_(static_cast<int64_t>(v)) {}
  IValue(bool v) : value_(v) {}
  IValue(const Scalar& v) : value_(v) {}
  IValue(ScalarType v) : value_(v) {}
  IValue(Device v) : value_(v) {}
  IValue(std::string v) : value_(std::move(v)) {}
  IValue(const char* v) : value_(std::string(v)) {}
  IValue(std::vector<int64_t> v) : value_(std::move(v)) {}
  IValue(std::vector<double> v) : value_(std::move(v)) {}
  IValue(std::vector<bool> v) : value_(std::move(v)) {}
  IValue(std::vector<Tensor> v) : value_(std::move(v)) {}
  IValue(Generator g) : value_(std::move(g)) {}
  template <class T>
  IValue(const std::optional<T>& v) {
    if (v) *this = IValue(*v);
  }

  Tag tag() const { return static_cast<Tag>(value_.index()); }
  bool is_none() const { return tag() == Tag::None; }
  bool is_tensor() const { return tag() == Tag::Tensor; }
  bool is_tensor_list() const { return tag() == Tag::TensorList; }
  // Int, Double, Bool and Scalar all convert to a Scalar.
  bool is_number() const;

  // Accessors throw strata::Error naming the expected and actual tags. The tensor
  // ones are inline: every boxed kernel and fallback reads its tensors through them.
  const Tensor& to_tensor() const {
    if (const Tensor* t = std::get_if<Tensor>(&value_)) [[likely]]
      return *t;
    throw_wrong_tag(Tag::Tensor);
  }
  Tensor& to_tensor() {
    if (Tensor* t = std::get_if<Tensor>(&value_)) [[likely]]
      return *t;
    throw_wrong_tag(Tag::Tensor);
  }
  double to_double() const;
  int64_t to_int() const;
  bool to_bool() const;
  Scalar to_scalar() const;
  ScalarType to_scalar_type() const;
  Device to_device() const;
  const std::string& to_string_ref() const;
  const std::vector<int64_t>& to_int_list() const;
  const std::vector<double>& to_double_list() const;
  const std::vector<bool>& to_bool_list() const;
  const std::vector<Tensor>& to_tensor_list() const;
  std::vector<Tensor>& to_tensor_list();
  const Generator& to_generator() const;

 private:
  [[noreturn]] void throw_wrong_tag(Tag expected) const;

  std::variant<std::monostate, Tensor, double, int64_t, bool, Scalar, ScalarType, Device,
               std::string, std::vector<int64_t>, std::vector<double>, std::vector<bool>,
               std::vector<Tensor>, Generator>
      value_;
};

const char* to_string(IValue::Tag tag);
// Short description for traces and errors: "Tensor[2, 3] Float32", "1.5", "[0, 1]".
std::ostream& operator<<(std::ostream& out, const IValue& v);

// Operators' boxed arguments, pushed in schema order; results replace them. One
// is made per boxed call, so its memory comes from the per-thread cache.
using Stack = std::vector<IValue, CachedAllocator<IValue>>;

// Whether pred holds for a tensor argument, or an element of a tensor-list
// argument, among stack[first, stack.size()).
template <class Pred>
bool any_tensor_argument(const Stack& stack, size_t first, Pred&& pred) {
  for (size_t i = first; i < stack.size(); ++i) {
    const IValue& arg = stack[i];
    if (arg.is_tensor() && pred(arg.to_tensor())) return true;
    if (arg.is_tensor_list()) {
      for (const Tensor& t : arg.to_tensor_list()) {
        if (pred(t)) return true;
      }
    }
  }
  return false;
}

// Calls f(Tensor&) on each tensor argument and each element of a tensor-list
// argument among stack[first, stack.size()), in order.
template <class F>
void for_each_tensor_argument(Stack& stack, size_t first, F&& f) {
  for (size_t i = first; i < stack.size(); ++i) {
    IValue& arg = stack[i];
    if (arg.is_tensor()) {
      f(arg.to_tensor());
    } else if (arg.is_tensor_list()) {
      for (Tensor& t : arg.to_tensor_list()) f(t);
    }
  }
}

}  // namespace strata
