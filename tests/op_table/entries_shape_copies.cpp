// Op-table entries: the _copy forms of the primitive views (select_copy,
// view_copy, ...) and as_strided_scatter. A _copy form's entry is its view's
// entry (entries_shape.cpp: the same samples, reference and flags) with the op
// called by name, boxed; it keeps the view's expected failures but those of
// functionalize, which are about writes through the view. as_strided_scatter's
// is a scatter entry (scatter_entry.h) whose positions come from the region's
// memory locations.
#include <map>
#include <tuple>

#include "dispatcher/dispatcher.h"
#include "tests/op_table/reference.h"
#include "tests/op_table/scatter_entry.h"

namespace strata::testing {
namespace {

using Ints = std::vector<int64_t>;

// Calls the operator `name` on the first input and the sample's arguments.
OpFunction boxed_call(OperatorName name) {
  return [name](const std::vector<Tensor>& in, const Stack& args) {
    const std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(name);
    STRATA_CHECK(op.has_value(), "op table", "no operator ", name.to_string());
    Stack stack{in[0]};
    stack.insert(stack.end(), args.begin(), args.end());
    op->call_boxed(stack);
    return std::vector<Tensor>{stack[0].to_tensor()};
  };
}

OpInfo copy_entry(const OpInfo& view, const std::string& name, const std::string& overload) {
  OpInfo info = view;
  info.name = name + (view.name.find('(') == std::string::npos
                          ? ""
                          : view.name.substr(view.name.find('(')));
  info.op = boxed_call({"strata::" + name, overload});
  std::erase_if(info.expected_failures,
                [](const ExpectedFailure& f) { return f.check == Check::Functionalize; });
  return info;
}

// view_copy where view is refused (a new dim would span unevenly strided
// memory): the elements in row-major order, as reshape gives them.
OpInfo view_copy_unviewable_entry() {
  OpInfo info;
  info.name = "view_copy(unviewable)";
  info.dtypes = all_dtypes();
  info.samples = [](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const auto& [sizes, layout, shape] :
         std::vector<std::tuple<Ints, Layout, Ints>>{{{3, 4}, Layout::Transposed, {12}},
                                                     {{3, 4}, Layout::Transposed, {2, 6}},
                                                     {{3, 4}, Layout::Sliced, {-1}},
                                                     {{3, 4}, Layout::Expanded, {4, 3}},
                                                     {{2, 3, 4}, Layout::Transposed, {6, 4}}}) {
      samples.push_back({ShapeCase{sizes, layout}.description() + " to " + shape_string(shape),
                         {make_tensor(sizes, dtype, layout)},
                         {IValue(shape)}});
    }
    return samples;
  };
  info.op = boxed_call({"strata::view_copy", ""});
  info.reference = [](const std::vector<Tensor>& in, const Stack& a) {
    return std::vector<Tensor>{reshape_reference(in[0], int_list_arg(a, 0))};
  };
  return info;
}

Stack args_of(std::initializer_list<IValue> values) { return Stack(values); }

}  // namespace

STRATA_OP_INFOS(shape_copies) {
  // The view entries whose op has a _copy form, and that form's name and overload.
  const std::map<std::string, std::pair<std::string, std::string>> copies{
      {"view", {"view_copy", ""}},
      {"view(merging dims)", {"view_copy", ""}},
      {"t", {"t_copy", ""}},
      {"permute", {"permute_copy", ""}},
      {"transpose", {"transpose_copy", "int"}},
      {"unsqueeze", {"unsqueeze_copy", ""}},
      {"stop_gradient", {"stop_gradient_copy", ""}},
      {"squeeze", {"squeeze_copy", ""}},
      {"squeeze(dim)", {"squeeze_copy", "dim"}},
      {"expand", {"expand_copy", ""}},
      {"diagonal", {"diagonal_copy", ""}},
      {"as_strided", {"as_strided_copy", ""}},
      {"select", {"select_copy", "int"}},
      {"slice", {"slice_copy", "Tensor"}},
  };
  std::vector<OpInfo> infos;
  for (const OpInfo& view : view_op_entries()) {
    auto it = copies.find(view.name);
    if (it == copies.end()) continue;
    infos.push_back(copy_entry(view, it->second.first, it->second.second));
    // view_copy copies what reshape gives where view refuses (a sample viewed
    // across the batch dim): it has none of view's failures under vmap.
    if (it->second.first == "view_copy") {
      std::erase_if(infos.back().expected_failures,
                    [](const ExpectedFailure& f) { return f.check == Check::Vmap; });
    }
  }
  infos.push_back(view_copy_unviewable_entry());
  // The samples' self is contiguous from storage offset 0, so the element at
  // memory location m is self's row-major element m.
  infos.push_back(scatter_entry(
      "as_strided_scatter",
      {{{12}, Layout::Contiguous, {4, 3}, args_of({Ints{4, 3}, Ints{1, 4}, std::nullopt})},
       {{3, 4}, Layout::Contiguous, {3}, args_of({Ints{3}, Ints{5}, std::nullopt})},
       {{3, 4}, Layout::Contiguous, {2, 2}, args_of({Ints{2, 2}, Ints{1, 4}, std::nullopt})},
       {{}, Layout::Contiguous, {}, args_of({Ints{}, Ints{}, std::nullopt})},
       {{2, 3}, Layout::Contiguous, {0, 2}, args_of({Ints{0, 2}, Ints{1, 1}, std::nullopt})}},
      [](const Tensor& self, const Tensor& src, const Stack& a) {
        return as_strided_scatter(self, src, int_list_arg(a, 0), int_list_arg(a, 1),
                                  optional_int_arg(a, 2));
      },
      [](const Stack& a, const Ints& self_sizes) -> Position {
        const Ints sizes = int_list_arg(a, 0), strides = int_list_arg(a, 1);
        const int64_t offset = optional_int_arg(a, 2).value_or(0);
        return [=](const Index& r) {
          int64_t location = offset;
          for (size_t d = 0; d < sizes.size(); ++d) location += r[d] * strides[d];
          return unravel(location, self_sizes);
        };
      }));
  return infos;
}

}  // namespace strata::testing
