// The cache of released device blocks: pure bookkeeping (blocks, streams and events are opaque
// numbers here), checked without a GPU.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cuda/block_cache.h"

namespace kjit::cuda {
namespace {

TEST(BlockCache, SizesArePowersOfTwoThenWholeMebibytes) {
  EXPECT_EQ(BlockCache::block_size(0), 512u);
  EXPECT_EQ(BlockCache::block_size(64), 512u);
  EXPECT_EQ(BlockCache::block_size(512), 512u);
  EXPECT_EQ(BlockCache::block_size(513), 1024u);
  EXPECT_EQ(BlockCache::block_size(300000), 524288u);
  EXPECT_EQ(BlockCache::block_size(1 << 20), 1u << 20);
  EXPECT_EQ(BlockCache::block_size((1 << 20) + 1), 2u << 20);
  EXPECT_EQ(BlockCache::block_size(5 << 20), 5u << 20);
}

TEST(BlockCache, BlocksComeBackOnlyToTheirStreamDeviceAndSize) {
  BlockCache cache(size_t{1} << 30);
  EXPECT_EQ(cache.take(0, 7, 512).block, 0u);
  cache.keep(0, 7, 512, 0x1000);
  cache.keep(0, 7, 512, 0x2000);
  EXPECT_EQ(cache.take(0, 8, 512).block, 0u);   // another stream
  EXPECT_EQ(cache.take(1, 7, 512).block, 0u);   // another device
  EXPECT_EQ(cache.take(0, 7, 1024).block, 0u);  // another size
  const uintptr_t a = cache.take(0, 7, 512).block, b = cache.take(0, 7, 512).block;
  EXPECT_TRUE((a == 0x1000 && b == 0x2000) || (a == 0x2000 && b == 0x1000));
  EXPECT_EQ(cache.take(0, 7, 512).block, 0u);  // each block once
}

TEST(BlockCache, UsesOnOtherStreamsAreWaitedForByTheNextUser) {
  BlockCache cache(size_t{1} << 30);
  cache.lend(0x1000, 512, 7);
  cache.lend(0x1200, 512, 8);
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 7), 0u);  // its own stream
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);
  EXPECT_EQ(cache.lent_elsewhere(0x1104, 8), 0x1000u);  // a view inside the block
  EXPECT_EQ(cache.lent_elsewhere(0x1200, 8), 0u);       // the next block, lent to stream 8
  EXPECT_EQ(cache.lent_elsewhere(0x1400, 7), 0u);       // past every block
  EXPECT_EQ(cache.lent_elsewhere(0x0ff0, 8), 0u);       // before every block
  EXPECT_EQ(cache.event_for(0x1000, 8), 0u);
  cache.add_wait(0x1000, 8, 0xe8);
  cache.add_wait(0x1000, 9, 0xe9);
  EXPECT_EQ(cache.event_for(0x1000, 8), 0xe8u);  // one event per stream, re-recorded
  cache.keep(0, 7, 512, 0x1000);
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0u);  // kept, not lent
  BlockCache::Lent lent = cache.take(0, 7, 512);
  EXPECT_EQ(lent.block, 0x1000u);
  std::sort(lent.waits.begin(), lent.waits.end());
  EXPECT_EQ(lent.waits, (std::vector<uintptr_t>{0xe8, 0xe9}));
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);  // lent again, to stream 7
  EXPECT_EQ(cache.event_for(0x1000, 8), 0u);            // the waits went with the block
}

TEST(BlockCache, LoansAreFoundAsTheirStreamsComeAndGo) {
  BlockCache cache(size_t{1} << 30);
  cache.lend(0x1000, 512, 7);  // every loan on stream 7
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 7), 0u);
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);
  cache.lend(0x2000, 512, 8);  // loans on two streams
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 7), 0x2000u);
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 8), 0u);
  cache.keep(0, 7, 512, 0x1000);  // every loan on stream 8 again
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 7), 0x2000u);
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 8), 0u);
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0u);
  EXPECT_EQ(cache.take(0, 7, 512).block, 0x1000u);  // back on stream 7: two streams
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);
  cache.keep(0, 7, 512, 0x1000);
  cache.keep(0, 8, 512, 0x2000);  // nothing lent
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0u);
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 7), 0u);
}

TEST(BlockCache, ReportsADeviceHoldingMoreThanTheLimit) {
  BlockCache cache(2560);
  EXPECT_FALSE(cache.keep(0, 1, 1024, 0x1000));
  EXPECT_FALSE(cache.keep(0, 2, 1024, 0x2000));
  EXPECT_FALSE(cache.keep(1, 1, 2048, 0x3000));  // another device counts apart
  EXPECT_FALSE(cache.keep(0, 1, 512, 0x4000));   // 2560: at the limit
  EXPECT_TRUE(cache.keep(0, 1, 512, 0x5000));    // 3072
  EXPECT_NE(cache.take(0, 1, 512).block, 0u);
  EXPECT_NE(cache.take(0, 1, 512).block, 0u);   // 2048: taking gives the room back
  EXPECT_FALSE(cache.keep(0, 1, 512, 0x4000));  // 2560
  std::vector<uintptr_t> waits;
  EXPECT_EQ(cache.take_all(0, waits).size(), 3u);
  EXPECT_FALSE(cache.keep(0, 1, 2048, 0x6000));  // emptied
}

TEST(BlockCache, TakeAllEmptiesOneDevice) {
  BlockCache cache(size_t{1} << 30);
  cache.keep(0, 1, 512, 0x1000);
  cache.add_wait(0x1000, 2, 0xe2);
  cache.keep(0, 2, 1 << 20, 0x2000);
  cache.keep(1, 1, 512, 0x3000);
  std::vector<uintptr_t> waits;
  std::vector<uintptr_t> all = cache.take_all(0, waits);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<uintptr_t>{0x1000, 0x2000}));
  EXPECT_EQ(waits, (std::vector<uintptr_t>{0xe2}));
  EXPECT_EQ(cache.take(0, 1, 512).block, 0u);
  EXPECT_EQ(cache.take(1, 1, 512).block, 0x3000u);  // the other device's are still kept
}

}  // namespace
}  // namespace kjit::cuda
