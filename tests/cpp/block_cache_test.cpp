// The cache of released device blocks: pure bookkeeping (blocks, streams and events are opaque
// numbers here), checked without a GPU.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cuda/block_cache.h"

namespace kjit::cuda {
namespace {

// A block from the driver, lent to |stream| and released at once: kept.
bool lend_and_keep(BlockCache& cache, int device, uintptr_t stream, size_t size, uintptr_t start) {
  return cache.keep(cache.lend(device, start, size, stream));
}

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
  EXPECT_EQ(cache.take(0, 7, 512).block, nullptr);
  lend_and_keep(cache, 0, 7, 512, 0x1000);
  lend_and_keep(cache, 0, 7, 512, 0x2000);
  EXPECT_EQ(cache.take(0, 8, 512).block, nullptr);   // another stream
  EXPECT_EQ(cache.take(1, 7, 512).block, nullptr);   // another device
  EXPECT_EQ(cache.take(0, 7, 1024).block, nullptr);  // another size
  const BlockCache::Lent a = cache.take(0, 7, 512), b = cache.take(0, 7, 512);
  EXPECT_TRUE((a.start == 0x1000 && b.start == 0x2000) || (a.start == 0x2000 && b.start == 0x1000));
  EXPECT_EQ(a.block->start, a.start);
  EXPECT_EQ(cache.take(0, 7, 512).block, nullptr);  // each block once
  cache.keep(a.block);
  EXPECT_EQ(cache.take(0, 7, 512).block, a.block);  // the same block, kept again
}

TEST(BlockCache, UsesOnOtherStreamsAreWaitedForByTheNextUser) {
  BlockCache cache(size_t{1} << 30);
  BlockCache::Block* first = cache.lend(0, 0x1000, 512, 7);
  cache.lend(0, 0x1200, 512, 8);
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 7), 0u);  // its own stream
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);
  EXPECT_EQ(cache.lent_elsewhere(0x1104, 8), 0x1000u);  // a view inside the block
  EXPECT_EQ(cache.lent_elsewhere(0x1200, 8), 0u);       // the next block, lent to stream 8
  EXPECT_EQ(cache.lent_elsewhere(0x1400, 7), 0u);       // past every block
  EXPECT_EQ(cache.lent_elsewhere(0x0ff0, 8), 0u);       // before every block
  EXPECT_EQ(cache.event_for(0x1000, 8), 0u);
  EXPECT_TRUE(cache.add_wait(0x1000, 8, 0xe8));
  EXPECT_TRUE(cache.add_wait(0x1000, 9, 0xe9));
  EXPECT_FALSE(cache.add_wait(0x1100, 9, 0xe9));  // inside a block, not one: kept by no block
  EXPECT_EQ(cache.event_for(0x1000, 8), 0xe8u);  // one event per stream, re-recorded
  cache.keep(first);
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0u);  // kept, not lent
  BlockCache::Lent lent = cache.take(0, 7, 512);
  EXPECT_EQ(lent.start, 0x1000u);
  std::sort(lent.waits.begin(), lent.waits.end());
  EXPECT_EQ(lent.waits, (std::vector<uintptr_t>{0xe8, 0xe9}));
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);  // lent again, to stream 7
  EXPECT_EQ(cache.event_for(0x1000, 8), 0u);            // the waits went with the block
}

TEST(BlockCache, LoansAreFoundAsTheirStreamsComeAndGo) {
  BlockCache cache(size_t{1} << 30);
  BlockCache::Block* on_7 = cache.lend(0, 0x1000, 512, 7);  // every loan on stream 7
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 7), 0u);
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);
  BlockCache::Block* on_8 = cache.lend(0, 0x2000, 512, 8);  // loans on two streams
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 7), 0x2000u);
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 8), 0u);
  cache.keep(on_7);  // every loan on stream 8 again
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 7), 0x2000u);
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 8), 0u);
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0u);
  EXPECT_EQ(cache.take(0, 7, 512).block, on_7);  // back on stream 7: two streams
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0x1000u);
  cache.keep(on_7);
  cache.keep(on_8);  // nothing lent
  EXPECT_EQ(cache.lent_elsewhere(0x1000, 8), 0u);
  EXPECT_EQ(cache.lent_elsewhere(0x2000, 7), 0u);
}

TEST(BlockCache, ReportsADeviceHoldingMoreThanTheLimit) {
  BlockCache cache(2560);
  EXPECT_FALSE(lend_and_keep(cache, 0, 1, 1024, 0x1000));
  EXPECT_FALSE(lend_and_keep(cache, 0, 2, 1024, 0x2000));
  EXPECT_FALSE(lend_and_keep(cache, 1, 1, 2048, 0x3000));  // another device counts apart
  EXPECT_FALSE(lend_and_keep(cache, 0, 1, 512, 0x4000));   // 2560: at the limit
  EXPECT_TRUE(lend_and_keep(cache, 0, 1, 512, 0x5000));    // 3072
  BlockCache::Block* taken = cache.take(0, 1, 512).block;
  EXPECT_NE(taken, nullptr);
  EXPECT_NE(cache.take(0, 1, 512).block, nullptr);  // 2048: taking gives the room back
  EXPECT_FALSE(cache.keep(taken));                  // 2560
  std::vector<uintptr_t> waits;
  EXPECT_EQ(cache.take_all(0, waits).size(), 3u);
  EXPECT_FALSE(lend_and_keep(cache, 0, 1, 2048, 0x6000));  // emptied
}

TEST(BlockCache, TakeAllEmptiesOneDevice) {
  BlockCache cache(size_t{1} << 30);
  lend_and_keep(cache, 0, 1, 512, 0x1000);
  cache.add_wait(0x1000, 2, 0xe2);
  lend_and_keep(cache, 0, 2, 1 << 20, 0x2000);
  lend_and_keep(cache, 1, 1, 512, 0x3000);
  BlockCache::Block* still_lent = cache.lend(0, 0x4000, 512, 1);
  std::vector<uintptr_t> waits;
  std::vector<uintptr_t> all = cache.take_all(0, waits);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<uintptr_t>{0x1000, 0x2000}));
  EXPECT_EQ(waits, (std::vector<uintptr_t>{0xe2}));
  EXPECT_FALSE(cache.add_wait(0x1000, 2, 0xe3));  // forgotten: no user left to wait
  EXPECT_EQ(cache.take(0, 1, 512).block, nullptr);
  EXPECT_EQ(cache.take(1, 1, 512).start, 0x3000u);      // the other device's are still kept
  EXPECT_EQ(cache.lent_elsewhere(0x4000, 2), 0x4000u);  // a lent block is not taken
  cache.keep(still_lent);
  EXPECT_EQ(cache.take(0, 1, 512).block, still_lent);
}

TEST(BlockCache, ManyStreamsComingAndGoingLeaveOneStreamFoundAlone) {
  // A program making a stream per step: the streams' counts are swept, and the one stream still
  // lending is found again.
  BlockCache cache(size_t{1} << 30);
  BlockCache::Block* lasting = cache.lend(0, 0x100000, 512, 3);
  for (uintptr_t s = 5; s < 5 + 2 * 1000; s += 2) {
    BlockCache::Block* b = cache.lend(0, 0x200000 + s * 1024, 512, s);
    EXPECT_EQ(cache.lent_elsewhere(0x100000, s), 0x100000u);
    cache.keep(b);
    EXPECT_EQ(cache.lent_elsewhere(0x100000, 3), 0u);  // stream 3 lends alone again
  }
  EXPECT_EQ(cache.lent_elsewhere(0x100000, 4), 0x100000u);
  cache.keep(lasting);
  EXPECT_EQ(cache.lent_elsewhere(0x100000, 4), 0u);
}

}  // namespace
}  // namespace kjit::cuda
