// The op-table test binary: registers one test per (op, dtype) and check from the
// table, then runs them. `op_table_tests --coverage_matrix` prints the matrix.
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>

#include "tests/op_table/op_info.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--coverage_matrix") == 0) {
      strata::testing::print_coverage_matrix(std::cout);
      return 0;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  strata::testing::register_forward_tests();
  strata::testing::register_grad_tests();
  strata::testing::register_vmap_tests();
  strata::testing::register_jacobian_tests();
  strata::testing::register_facet_tests();
  strata::testing::register_trace_tests();
  strata::testing::register_functionalize_tests();
  return RUN_ALL_TESTS();
}
