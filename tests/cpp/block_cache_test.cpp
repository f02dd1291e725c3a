// The cache of small device blocks: pure bookkeeping, checked without a GPU.
#include <gtest/gtest.h>

#include "backend/cuda/block_cache.h"

namespace kjit::cuda {
namespace {

TEST(BlockCache, SizesArePowersOfTwoUpToTheLargest) {
  EXPECT_EQ(BlockCache::block_size(0), 512u);
  EXPECT_EQ(BlockCache::block_size(64), 512u);
  EXPECT_EQ(BlockCache::block_size(512), 512u);
  EXPECT_EQ(BlockCache::block_size(513), 1024u);
  EXPECT_EQ(BlockCache::block_size(300000), 524288u);
  EXPECT_EQ(BlockCache::block_size(BlockCache::kLargestBlock), BlockCache::kLargestBlock);
  EXPECT_EQ(BlockCache::block_size(BlockCache::kLargestBlock + 1), 0u);
}

TEST(BlockCache, BlocksComeBackOnlyToTheirStreamDeviceAndSize) {
  BlockCache cache;
  EXPECT_EQ(cache.take(0, 7, 512), 0u);
  ASSERT_TRUE(cache.keep(0, 7, 512, 0x1000));
  ASSERT_TRUE(cache.keep(0, 7, 512, 0x2000));
  EXPECT_EQ(cache.take(0, 8, 512), 0u);   // another stream
  EXPECT_EQ(cache.take(1, 7, 512), 0u);   // another device
  EXPECT_EQ(cache.take(0, 7, 1024), 0u);  // another size
  const uintptr_t a = cache.take(0, 7, 512), b = cache.take(0, 7, 512);
  EXPECT_TRUE((a == 0x1000 && b == 0x2000) || (a == 0x2000 && b == 0x1000));
  EXPECT_EQ(cache.take(0, 7, 512), 0u);  // each block once
}

TEST(BlockCache, HoldsNoMoreThanItsCapacity) {
  BlockCache cache;
  const size_t size = BlockCache::kLargestBlock;
  const size_t fits = BlockCache::kCapacity / size;
  for (size_t i = 0; i < fits; ++i) ASSERT_TRUE(cache.keep(0, 1, size, 0x1000 * (i + 1)));
  EXPECT_FALSE(cache.keep(0, 1, size, 0xdead000));  // full: the caller frees it
  EXPECT_NE(cache.take(0, 1, size), 0u);
  EXPECT_TRUE(cache.keep(0, 1, size, 0xdead000));  // room again
}

}  // namespace
}  // namespace kjit::cuda
