// Rank 1 throws while the others wait in an all-reduce: the job must end with
// the thrower's message (Note [A failing rank ends the job]), not hang. The test
// command checks the output.
#include <strata/strata.h>

#include <cstdio>

int main(int argc, char** argv) {
  const strata::dist::Group world = strata::dist::init(argc, argv);
  if (world.rank() == 1) throw strata::Error("[example] rank 1 failed on purpose");
  const strata::Tensor x = strata::ones({4});
  world.all_reduce(x);
  std::printf("rank %d: the all-reduce returned, which it must not\n", world.rank());
  return 0;
}
