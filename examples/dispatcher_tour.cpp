// A tour of Strata's foundation: tensors, operators called through the
// dispatcher, a user-defined operator with its own kernel, and a dispatch mode
// that watches every call.
#include <iostream>
#include <map>
#include <string>

#include <strata/strata.h>

namespace st = strata;

namespace {

// A user operator: schema in one place, CPU kernel in another, both registered
// at static-initialization time.
st::Tensor axpy_cpu(const st::Tensor& x, const st::Tensor& y, double a) {
  return st::add(y, x * st::full({}, a, x.dtype()));
}

STRATA_LIBRARY(tour, m) { m.def("axpy(Tensor x, Tensor y, float a) -> Tensor"); }
STRATA_LIBRARY_IMPL(tour, CPU, m) { m.impl("axpy", &axpy_cpu); }

// Counts the operators a piece of code runs, nested calls included.
class OpCounter : public st::DispatchMode {
 public:
  void dispatch(const st::OperatorHandle& op, st::Stack& stack) override {
    ++counts[op.operator_name().to_string()];
    call_next(op, stack);
  }
  std::map<std::string, int> counts;
};

}  // namespace

int main() {
  st::Tensor x = st::tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  st::Tensor row = st::tensor({10.0, 20.0}, {2});
  std::cout << "x =\n" << x << "\n";
  std::cout << "x + row (broadcast) =\n" << x + row << "\n";
  std::cout << "x * x =\n" << x * x << "\n";

  auto axpy = st::Dispatcher::singleton()
                  .findSchemaOrThrow("tour::axpy", "")
                  .typed<st::Tensor(const st::Tensor&, const st::Tensor&, double)>();
  auto counter = std::make_shared<OpCounter>();
  st::Tensor z;
  {
    st::DispatchModeGuard guard(counter);
    z = axpy.call(x, row, 0.5);
  }
  std::cout << "axpy(x, row, 0.5) =\n" << z << "\n";
  std::cout << "operators seen by the mode:\n";
  for (const auto& [name, count] : counter->counts) std::cout << "  " << name << " x" << count << "\n";

  // The same op through the boxed path, as a fallback or interpreter would call it.
  st::Stack stack{x, row, 2.0};
  st::Dispatcher::singleton().findSchemaOrThrow("tour::axpy", "").call_boxed(stack);
  std::cout << "boxed axpy(x, row, 2.0) sum of values = ";
  double total = 0;
  for (double v : stack.at(0).to_tensor().to_vector<double>()) total += v;
  std::cout << total << " (expected " << (1 + 2 + 3 + 4) * 2.0 + 2 * (10 + 20) << ")\n";

  try {
    x + st::ones({3});
  } catch (const st::Error& e) {
    std::cout << "error, as expected: " << e.what() << "\n";
  }
  return 0;
}
