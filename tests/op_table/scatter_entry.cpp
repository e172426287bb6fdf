#include "tests/op_table/scatter_entry.h"

#include <sstream>

#include "tests/op_table/reference.h"

namespace strata::testing {
namespace {

Tensor scatter_reference(const Tensor& self, const Tensor& src, const Position& position) {
  HostArray out = HostArray::of(self);
  const HostArray values = HostArray::of(src);
  for_each_index(values.sizes, [&](const Index& r) {
    out.values[static_cast<size_t>(ravel(position(r), out.sizes))] =
        values.values[static_cast<size_t>(ravel(r, values.sizes))];
  });
  return from_values(out.values, out.sizes, self.dtype());
}

}  // namespace

OpInfo scatter_entry(std::string name, std::vector<ScatterCase> cases, ScatterFn op,
                     PositionFn position) {
  OpInfo info;
  info.name = std::move(name);
  info.dtypes = all_dtypes();
  info.samples = [cases = std::move(cases)](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const ScatterCase& c : cases) {
      std::ostringstream what;
      what << ShapeCase{c.self_sizes, c.layout}.description() << " src "
           << shape_string(c.src_sizes) << " args";
      for (const IValue& arg : c.args) what << ' ' << arg;
      samples.push_back({what.str(),
                         {make_tensor(c.self_sizes, dtype, c.layout),
                          make_tensor(c.src_sizes, dtype, -2.0, 2.0, 7)},
                         c.args});
    }
    return samples;
  };
  info.op = [op = std::move(op)](const std::vector<Tensor>& in, const Stack& args) {
    return std::vector<Tensor>{op(in[0], in[1], args)};
  };
  info.reference = [position = std::move(position)](const std::vector<Tensor>& in,
                                                    const Stack& args) {
    return std::vector<Tensor>{
        scatter_reference(in[0], in[1], position(args, in[0].sizes().vec()))};
  };
  return info;
}

}  // namespace strata::testing
