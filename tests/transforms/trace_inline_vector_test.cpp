// InlineVector, the container of a trace graph node's arguments and results:
// elements kept inline up to N, on the heap past it, through copies and moves.
#include "func/trace/inline_vector.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace strata {
namespace {

// Counts live objects, so a leaked or twice-destroyed element shows.
struct Counted {
  static int live;
  std::string text;
  explicit Counted(std::string t = "") : text(std::move(t)) { ++live; }
  Counted(const Counted& o) : text(o.text) { ++live; }
  Counted(Counted&& o) noexcept : text(std::move(o.text)) { ++live; }
  Counted& operator=(const Counted&) = default;
  Counted& operator=(Counted&&) noexcept = default;
  ~Counted() { --live; }
};
int Counted::live = 0;

using Vec = InlineVector<Counted, 3>;

Vec make(int n) {
  Vec v;
  for (int i = 0; i < n; ++i) v.emplace_back("element " + std::to_string(i));
  return v;
}

void expect_elements(const Vec& v, int n) {
  ASSERT_EQ(v.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(v[static_cast<size_t>(i)].text, "element " + std::to_string(i));
}

TEST(TraceInlineVector, KeepsItsElementsInlineAndOnTheHeap) {
  for (int n : {0, 1, 3, 4, 9}) {
    {
      Vec v = make(n);
      expect_elements(v, n);
      Vec copy(v);
      expect_elements(copy, n);
      Vec moved(std::move(v));
      expect_elements(moved, n);
      EXPECT_TRUE(v.empty());
      v = copy;  // into a moved-from vector
      expect_elements(v, n);
      Vec other = make(2);
      other = std::move(copy);  // over elements of its own
      expect_elements(other, n);
      const std::vector<Counted> as_vector(other.begin(), other.end());
      ASSERT_EQ(as_vector.size(), static_cast<size_t>(n));
      Vec from_range(as_vector.begin(), as_vector.end());
      expect_elements(from_range, n);
    }
    EXPECT_EQ(Counted::live, 0) << "n = " << n;
  }
}

TEST(TraceInlineVector, ReferencesStayValidUntilItGrows) {
  Vec v;
  v.reserve(5);
  Counted& first = v.emplace_back("element 0");
  for (int i = 1; i < 5; ++i) v.emplace_back("element " + std::to_string(i));
  EXPECT_EQ(&first, &v[0]);
  expect_elements(v, 5);
  v.clear();
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(Counted::live, 0);
}

}  // namespace
}  // namespace strata
