// Tests of InlineVector: elements inline up to N, then in a block of the
// per-thread cache; moves steal the block or move the inline elements; every
// element constructed is destroyed exactly once.
#include "tensor/inline_vector.h"

#include <gtest/gtest.h>

#include "tensor/error.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace {

using strata::InlineVector;
using strata::detail::concat;

// Counts live instances, so a leak or a double destruction shows up.
struct Counted {
  static inline int live = 0;
  std::string value;
  explicit Counted(std::string v = "") : value(std::move(v)) { ++live; }
  Counted(Counted&& o) noexcept : value(std::move(o.value)) { ++live; }
  Counted& operator=(Counted&&) = default;
  ~Counted() { --live; }
};

TEST(InlineVector, GrowsPastItsInlineCapacityKeepingOrder) {
  {
    InlineVector<Counted, 2> v;
    for (int i = 0; i < 9; ++i) v.emplace_back(std::to_string(i));
    ASSERT_EQ(v.size(), 9u);
    for (int i = 0; i < 9; ++i) EXPECT_EQ(v[i].value, std::to_string(i));
    EXPECT_EQ(Counted::live, 9);
    v.resize(3);
    EXPECT_EQ(Counted::live, 3);
    EXPECT_EQ(v.back().value, "2");
  }
  EXPECT_EQ(Counted::live, 0);
}

TEST(InlineVector, MovesInlineAndSpilledElements) {
  for (int n : {1, 2, 5}) {
    {
      InlineVector<Counted, 2> a;
      for (int i = 0; i < n; ++i) a.emplace_back(concat("x", i));
      InlineVector<Counted, 2> b(std::move(a));
      EXPECT_TRUE(a.empty());
      ASSERT_EQ(b.size(), static_cast<size_t>(n));
      EXPECT_EQ(b[n - 1].value, concat("x", n - 1));
      InlineVector<Counted, 2> c;
      c.emplace_back("old");
      c = std::move(b);
      ASSERT_EQ(c.size(), static_cast<size_t>(n));
      EXPECT_EQ(c[0].value, "x0");
      EXPECT_EQ(Counted::live, n);
      // The moved-from vector is usable again.
      a.emplace_back("again");
      EXPECT_EQ(a.at(0).value, "again");
    }
    EXPECT_EQ(Counted::live, 0);
  }
}

TEST(InlineVector, AtChecksTheIndex) {
  InlineVector<int, 3> v(2);
  EXPECT_EQ(v.at(1), 0);
  EXPECT_THROW(v.at(2), std::out_of_range);
}

}  // namespace
