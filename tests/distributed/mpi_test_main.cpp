// main() of the test binaries that mpirun starts: every rank runs every test
// (collectives need all of them); rank 0 prints GoogleTest's report, the others
// print only their failures, tagged with the rank. The exit status is nonzero
// if any rank failed a test.
#include <gtest/gtest.h>
#include <strata/strata.h>

#include <cstdio>

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, result.file_name(),
                 result.line_number(), result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const strata::dist::Group world = strata::dist::init(argc, argv);
  if (world.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(world.rank()));
  }
  const int failed = RUN_ALL_TESTS();
  // Every rank's verdict: a rank that passed must still fail the job if another failed.
  strata::Tensor verdict = strata::full({}, static_cast<double>(failed != 0), strata::kFloat64);
  world.all_reduce(verdict);
  return verdict.item<double>() > 0 ? 1 : 0;
}
