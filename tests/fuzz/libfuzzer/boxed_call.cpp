// libFuzzer target: boxed operator calls (tests/fuzz/README.md). The input picks a
// registered operator and a stack of arguments shaped by its schema (random dtypes,
// shapes incl. 0-dim and empty, views, undefined tensors, extreme integers, NaN,
// sometimes a wrong type or a missing argument). OperatorHandle::call_boxed must
// return results or throw strata::Error: never crash, read out of bounds or hang.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <strata/strata.h>

#include "dispatcher/dispatcher.h"
#include "tests/fuzz/libfuzzer/byte_reader.h"
#include "tests/fuzz/libfuzzer/sanitizer_options.h"

namespace {

using strata::IValue;
using strata::SchemaType;
using strata::Tensor;
using Kind = SchemaType::Kind;

std::vector<strata::OperatorHandle> operators() {
  strata::Dispatcher& d = strata::Dispatcher::singleton();
  std::vector<strata::OperatorName> names = d.registered_operators();
  std::sort(names.begin(), names.end(), [](const auto& a, const auto& b) {
    return a.to_string() < b.to_string();
  });
  std::vector<strata::OperatorHandle> ops;
  for (const strata::OperatorName& name : names) {
    if (auto op = d.find_schema(name)) ops.push_back(*op);
  }
  return ops;
}

int64_t random_int(strata::fuzz::ByteReader& in) {
  static constexpr int64_t kInteresting[] = {
      0, 1, 2, 3, -1, -2, 4, 5, INT64_MAX, INT64_MIN, int64_t{1} << 62, -(int64_t{1} << 62),
      int64_t{1} << 31, 7};
  return in.pick(kInteresting);
}

double random_double(strata::fuzz::ByteReader& in) {
  static constexpr double kInteresting[] = {0.0, 1.0, -1.0, 0.5, 2.0, -0.0, 1e-300, 1e300,
                                            __builtin_nan(""), __builtin_inf(), -__builtin_inf(), 3.0};
  return in.pick(kInteresting);
}

Tensor random_tensor(strata::fuzz::ByteReader& in) {
  static constexpr strata::ScalarType kDtypes[] = {strata::kFloat32, strata::kFloat64, strata::kInt64,
                                                   strata::kBool};
  if (in.chance(16)) return Tensor();
  const strata::ScalarType dtype = in.pick(kDtypes);
  std::vector<int64_t> sizes(in.below(4));
  int64_t numel = 1;
  for (int64_t& s : sizes) {
    s = static_cast<int64_t>(in.below(4));
    numel *= s;
  }
  std::vector<double> values(static_cast<size_t>(numel));
  for (double& v : values) {
    v = strata::is_floating_point(dtype) && in.chance(8) ? random_double(in)
                                                          : static_cast<double>(in.below(9)) - 4.0;
  }
  Tensor t = strata::tensor(values, sizes).to(dtype);
  switch (in.below(6)) {  // sometimes a view: transposed, broadcast or sliced
    case 0: return t.dim() >= 2 ? t.transpose(0, t.dim() - 1) : t;
    case 1: {
      std::vector<int64_t> broadcast{2};
      broadcast.insert(broadcast.end(), sizes.begin(), sizes.end());
      return t.expand(broadcast);
    }
    case 2: return t.dim() >= 1 ? t.slice(0, 1) : t;
    default: return t;
  }
}

IValue random_scalar_value(Kind kind, strata::fuzz::ByteReader& in) {
  switch (kind) {
    case Kind::Tensor: return random_tensor(in);
    case Kind::Int:
    case Kind::SymInt: return random_int(in);
    case Kind::Float: return random_double(in);
    case Kind::Bool: return in.chance(2);
    case Kind::Scalar:
      switch (in.below(3)) {
        case 0: return strata::Scalar(random_int(in));
        case 1: return strata::Scalar(random_double(in));
        default: return strata::Scalar(in.chance(2));
      }
    case Kind::ScalarType: return static_cast<strata::ScalarType>(in.below(strata::kNumScalarTypes));
    case Kind::Device: return in.chance(4) ? strata::Device(strata::DeviceType::CUDA) : strata::Device();
    case Kind::Str: {
      static const char* kWords[] = {"mean", "sum", "none", "", "tanh", "reflect"};
      return in.pick(kWords);
    }
    case Kind::Generator: return strata::Generator(in.below(3));
    default: return random_scalar_value(Kind::Tensor, in);
  }
}

IValue random_list(const SchemaType& type, strata::fuzz::ByteReader& in) {
  const size_t n = type.list_size && !in.chance(8) ? static_cast<size_t>(*type.list_size) : in.below(5);
  switch (type.kind) {
    case Kind::Int:
    case Kind::SymInt: {
      std::vector<int64_t> v(n);
      for (int64_t& x : v) x = in.chance(4) ? random_int(in) : static_cast<int64_t>(in.below(5)) - 1;
      return v;
    }
    case Kind::Float: {
      std::vector<double> v(n);
      for (double& x : v) x = random_double(in);
      return v;
    }
    case Kind::Bool: {
      std::vector<bool> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = in.chance(2);
      return v;
    }
    default: {
      std::vector<Tensor> v(n);
      for (Tensor& t : v) t = random_tensor(in);
      return v;
    }
  }
}

IValue random_argument(const strata::Argument& arg, strata::fuzz::ByteReader& in) {
  const SchemaType& type = arg.type;
  if (type.is_optional && in.chance(4)) return IValue();
  if (in.chance(32)) {  // a value of another type: the schema check must refuse it
    return random_scalar_value(static_cast<Kind>(in.below(static_cast<size_t>(Kind::Any) + 1)), in);
  }
  return type.is_list ? random_list(type, in) : random_scalar_value(type.kind, in);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<strata::OperatorHandle> ops = operators();
  static const bool verbose = std::getenv("STRATA_FUZZ_VERBOSE") != nullptr;
  strata::fuzz::ByteReader in(data, size);
  const strata::OperatorHandle& op = ops[in.below(ops.size())];
  const auto& args = op.schema().arguments();
  size_t count = args.size();
  if (in.chance(32) && count > 0) count -= 1;  // one argument missing
  strata::Stack stack;
  for (size_t i = 0; i < count; ++i) stack.push_back(random_argument(args[i], in));
  if (verbose) {  // replaying a crash input: which call it makes
    std::cerr << op.operator_name().to_string() << "(";
    for (const IValue& v : stack) {
      std::cerr << v;
      if (v.is_tensor() && v.to_tensor().defined()) {
        std::cerr << " strides " << strata::shape_string(v.to_tensor().strides());
      }
      std::cerr << ", ";
    }
    std::cerr << ")" << std::endl;
  }
  try {
    op.call_boxed(stack);
  } catch (const strata::Error&) {
  }
  return 0;
}
