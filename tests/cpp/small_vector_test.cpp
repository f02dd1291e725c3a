// SmallVector: elements in place up to its capacity, on the heap beyond it, the same either way.
#include <gtest/gtest.h>

#include "support/small_vector.h"

namespace kjit {
namespace {

TEST(SmallVector, KeepsItsElementsInPlaceAndOnTheHeap) {
  SmallVector<int, 4> v;
  EXPECT_EQ(v.size(), 0u);
  for (int i = 0; i < 9; ++i) {
    v.push_back(10 * i);
    ASSERT_EQ(v.size(), static_cast<size_t>(i + 1));
    for (int j = 0; j <= i; ++j) ASSERT_EQ(v[j], 10 * j) << i;
  }
  // A copy holds the same elements in memory of its own.
  SmallVector<int, 4> copy = v;
  copy[0] = -1;
  EXPECT_EQ(v[0], 0);
  EXPECT_NE(copy.data(), v.data());
  // Shrunk back into place, then grown with zeros.
  v.resize(3);
  v.resize(6);
  const int expected[] = {0, 10, 20, 0, 0, 0};
  ASSERT_EQ(v.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(v[i], expected[i]) << i;
  int sum = 0;
  for (int x : v) sum += x;
  EXPECT_EQ(sum, 30);
}

TEST(SmallVector, MovingLeavesTheSourceEmpty) {
  for (size_t n : {3u, 7u}) {  // in place, on the heap
    SmallVector<int, 4> from;
    for (size_t i = 0; i < n; ++i) from.push_back(static_cast<int>(i) + 1);
    SmallVector<int, 4> to = std::move(from);
    EXPECT_EQ(from.size(), 0u) << n;  // NOLINT: the moved-from state is what is tested
    from.push_back(9);
    EXPECT_EQ(from[0], 9) << n;
    ASSERT_EQ(to.size(), n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(to[i], static_cast<int>(i) + 1) << n;
  }
}

TEST(SmallVector, PushesBackItsOwnElementsAsItGrows) {
  SmallVector<int, 2> v;
  v.push_back(5);
  for (int i = 0; i < 40; ++i) v.push_back(v[0]);  // the storage moves under the argument
  for (int x : v) EXPECT_EQ(x, 5);
}

TEST(SmallVector, StartsWithZerosWhenSized) {
  SmallVector<double, 2> in_place(2), on_heap(5);
  for (double x : in_place) EXPECT_EQ(x, 0.0);
  for (double x : on_heap) EXPECT_EQ(x, 0.0);
}

}  // namespace
}  // namespace kjit
