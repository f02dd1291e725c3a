// The in-memory cache: one value per key, built once; find() looks without building; past its
// limits the least recently used values that nothing else holds are forgotten.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

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

std::shared_ptr<const int> make(int v) { return std::make_shared<const int>(v); }

// Keys of one byte, values of 10 bytes each: an entry takes 11.
MemoryCache<const int> limited(uint64_t entries, uint64_t bytes) {
  return MemoryCache<const int>({entries, bytes}, [](const int&) -> uint64_t { return 10; });
}

TEST(MemoryCache, ACountLimitForgetsTheLeastRecentlyUsed) {
  MemoryCache<const int> cache = limited(2, 1000);
  cache.get_or_build("a", [] { return make(1); });
  cache.get_or_build("b", [] { return make(2); });
  EXPECT_NE(cache.find("a"), nullptr);  // a is now the more recently used
  cache.get_or_build("c", [] { return make(3); });
  EXPECT_EQ(cache.find("b"), nullptr);
  EXPECT_EQ(*cache.find("a"), 1);
  EXPECT_EQ(*cache.find("c"), 3);
  const MemoryUsage u = cache.usage();
  EXPECT_EQ(u.entries, 2u);
  EXPECT_EQ(u.bytes, 22u);
  EXPECT_EQ(u.evictions, 1u);
  // A forgotten value is built again on demand.
  EXPECT_EQ(*cache.get_or_build("b", [] { return make(20); }), 20);
  EXPECT_EQ(cache.usage().evictions, 2u);
}

TEST(MemoryCache, AByteLimitForgetsTheLeastRecentlyUsed) {
  MemoryCache<const int> cache = limited(100, 35);  // three entries of 11 bytes
  for (const char* key : {"a", "b", "c", "d", "e"}) cache.get_or_build(key, [] { return make(0); });
  const MemoryUsage u = cache.usage();
  EXPECT_EQ(u.entries, 3u);
  EXPECT_EQ(u.bytes, 33u);
  EXPECT_EQ(u.evictions, 2u);
  EXPECT_EQ(cache.find("a"), nullptr);
  EXPECT_EQ(cache.find("b"), nullptr);
  EXPECT_NE(cache.find("e"), nullptr);
}

TEST(MemoryCache, AValueHeldElsewhereIsNeverForgotten) {
  MemoryCache<const int> cache = limited(1, 1000);
  std::vector<std::shared_ptr<const int>> held;
  for (int i = 0; i < 4; ++i) {
    const std::string key(1, static_cast<char>('a' + i));
    held.push_back(cache.get_or_build(key, [i] { return make(i); }));
  }
  EXPECT_EQ(cache.usage().entries, 4u);  // over the limit: every one is held
  EXPECT_EQ(cache.usage().evictions, 0u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(cache.find(std::string(1, static_cast<char>('a' + i))), held[i]);
  }
  // Released, they are forgotten at the next build, oldest first, down to the limit.
  std::weak_ptr<const int> first = held[0];
  held.clear();
  cache.get_or_build("e", [] { return make(4); });
  EXPECT_TRUE(first.expired());
  EXPECT_EQ(cache.usage().entries, 1u);
  EXPECT_EQ(cache.usage().evictions, 4u);
  EXPECT_EQ(*cache.find("e"), 4);
}

}  // namespace
}  // namespace kjit::cache
