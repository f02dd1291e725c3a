// The in-memory cache: one value per key, built once; find() looks without building.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "cache/memory_cache.h"

namespace kjit::cache {
namespace {

TEST(MemoryCache, FindSeesOnlyFinishedValues) {
  MemoryCache<const int> cache;
  EXPECT_EQ(cache.find("a"), nullptr);
  int builds = 0;
  auto build = [&] {
    ++builds;
    return std::make_shared<const int>(41 + builds);
  };
  std::shared_ptr<const int> made = cache.get_or_build("a", build);
  ASSERT_NE(made, nullptr);
  EXPECT_EQ(*made, 42);
  EXPECT_EQ(cache.find("a"), made);
  EXPECT_EQ(cache.get_or_build("a", build), made);
  EXPECT_EQ(builds, 1);
  EXPECT_EQ(cache.find("b"), nullptr);
}

TEST(MemoryCache, AFailedBuildLeavesNothingToFind) {
  MemoryCache<const int> cache;
  EXPECT_THROW(cache.get_or_build(
                   "a", []() -> std::shared_ptr<const int> { throw std::runtime_error("no"); }),
               std::runtime_error);
  EXPECT_EQ(cache.find("a"), nullptr);
  EXPECT_EQ(*cache.get_or_build("a", [] { return std::make_shared<const int>(7); }), 7);
  EXPECT_EQ(*cache.find("a"), 7);
}

}  // namespace
}  // namespace kjit::cache
