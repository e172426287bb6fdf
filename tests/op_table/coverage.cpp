#include <iomanip>
#include <ostream>

#include "tests/op_table/op_info.h"

namespace strata::testing {

void print_coverage_matrix(std::ostream& out) {
  // A check is "ok" when the table runs it for the op, "xfail" when an expected
  // failure covers it, "n/a" when the op lacks the capability, "-" when the
  // check does not exist yet.
  const Check checks[] = {Check::Forward, Check::Grad,     Check::Jvp,     Check::JvpGrad,
                          Check::Vmap,    Check::VmapGrad, Check::Jacobian};
  out << "| op | dtypes |";
  for (Check c : checks) out << ' ' << to_string(c) << " |";
  out << "\n|---|---|";
  for (size_t k = 0; k < std::size(checks); ++k) out << "---|";
  out << '\n';
  size_t rows = 0;
  for (const OpInfo& info : op_infos()) {
    out << "| " << info.name << " | ";
    for (size_t i = 0; i < info.dtypes.size(); ++i)
      out << (i ? "," : "") << to_string(info.dtypes[i]);
    out << " |";
    for (size_t k = 0; k < std::size(checks); ++k) {
      const Check c = checks[k];
      const bool capable =
          c == Check::Forward ||
          (c == Check::Jvp || c == Check::Jacobian ? info.differentiable && info.forward_ad
           : c == Check::JvpGrad                   ? info.twice_differentiable && info.forward_ad
           : c == Check::Vmap                      ? info.batching_rule
                                                   : info.differentiable);
      const char* cell = !capable ? "n/a" : "ok";
      for (ScalarType dtype : info.dtypes) {
        if (capable && info.expected_failure(c, dtype)) cell = "xfail";
      }
      out << ' ' << cell << " |";
    }
    out << '\n';
    ++rows;
  }
  out << rows << " ops in the table\n";
}

}  // namespace strata::testing
