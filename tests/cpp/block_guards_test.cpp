// The guard space around kjit's host blocks: found from the data's address alone, checked next to
// the data, measured and put back; memory of other origin is never taken for a block.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/cpu/block_guards.h"
#include "backend/cpu/host_allocator.h"
#include "backend/cpu/output_checks.h"

namespace kjit::cpu {
namespace {

class BlockGuardsTest : public ::testing::TestWithParam<size_t> {};

TEST_P(BlockGuardsTest, AWriteNextToTheDataIsMeasuredAndPutBack) {
  const size_t bytes = GetParam();
  std::shared_ptr<void> memory = host_allocate(bytes);
  const std::optional<GuardedBlock> block = find_guarded_block(memory.get());
  ASSERT_TRUE(block);
  EXPECT_EQ(block->bytes, bytes);
  EXPECT_GE(block->front, size_t{256});
  EXPECT_GE(block->back, size_t{256});
  EXPECT_TRUE(guards_near_data_intact(*block));
  auto* data = static_cast<unsigned char*>(memory.get());
  std::memset(data, 0x11, bytes);  // the data itself is no guard

  std::memset(data + bytes, 0, 96);  // a rounded-up grid's last elements
  EXPECT_FALSE(guards_near_data_intact(*block));
  GuardDamage damage = restore_guards(*block);
  EXPECT_EQ(damage.before, 0u);
  EXPECT_EQ(damage.after, 96u);
  EXPECT_TRUE(guards_near_data_intact(*block));

  data[-1] = 0;  // one byte before the start, in the header
  std::memset(data - 12, 0, 4);
  damage = restore_guards(*block);
  EXPECT_EQ(damage.before, 12u);
  EXPECT_EQ(damage.after, 0u);
  EXPECT_TRUE(find_guarded_block(data));

  data[bytes + block->back - 1] = 0;  // the guard's far end, only seen by a full measure
  EXPECT_TRUE(guards_near_data_intact(*block));
  EXPECT_EQ(restore_guards(*block).after, block->back);
  EXPECT_FALSE(restore_guards(*block).any());
  for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(data[i], 0x11);
}

INSTANTIATE_TEST_SUITE_P(Sizes, BlockGuardsTest,
                         ::testing::Values(1, 64, 1000, 4000, 100000, size_t{1} << 20,
                                           (size_t{5} << 20) + 3));

TEST(BlockGuards, OtherMemoryIsNotTakenForABlock) {
  std::vector<unsigned char> heap(4096, 0xA5);
  EXPECT_FALSE(find_guarded_block(heap.data() + 2048));
  void* raw = std::malloc(1000);
  EXPECT_FALSE(find_guarded_block(raw));
  std::free(raw);
  // Data at a page's start, after a page no access may touch: nothing before it is read.
  auto* pages = static_cast<unsigned char*>(
      mmap(nullptr, 2 * kSmallestPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(mprotect(pages, kSmallestPage, PROT_NONE), 0);
  EXPECT_FALSE(find_guarded_block(pages + kSmallestPage));
  munmap(pages, 2 * kSmallestPage);
}

TEST(BlockGuards, ABlockDataStartsOffAPageBoundary) {
  std::vector<std::shared_ptr<void>> blocks;
  for (size_t bytes : {size_t{1}, size_t{4032}, size_t{8128}, size_t{1} << 21}) {
    for (int i = 0; i < 64; ++i) blocks.push_back(host_allocate(bytes));
  }
  for (const auto& b : blocks) {
    EXPECT_NE(reinterpret_cast<uintptr_t>(b.get()) % kSmallestPage, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % 64, 0u);
  }
}

ArrayRef float_ref(void* data, const int64_t* shape) {
  static const int64_t strides[1] = {1};
  return {.data = data,
          .dtype = Dtype::Float32,
          .device = Device::cpu(),
          .ndim = 1,
          .shape = shape,
          .strides = strides,
          .read_only = false};
}

TEST(OutputChecks, NameEachOutputWrittenOutOfBounds) {
  const int64_t shape[1] = {1000};
  std::shared_ptr<void> a = host_allocate(4000), b = host_allocate(4000);
  std::vector<float> foreign(1000);
  const ArrayRef outputs[3] = {float_ref(a.get(), shape), float_ref(foreign.data(), shape),
                               float_ref(b.get(), shape)};
  const std::vector<std::string> names{"a", "f", "b"};
  {
    OutputChecks checks({}, outputs);
    EXPECT_EQ(checks.restore(names), "");
  }
  OutputChecks checks({}, outputs);
  std::memset(static_cast<char*>(a.get()) + 4000, 0, 4);
  std::memset(static_cast<char*>(b.get()) - 8, 0, 8);
  const std::string report = checks.restore(names);
  EXPECT_EQ(report.rfind("outputs[0] ('a') was written 4 bytes past its end; outputs[2] ('b') was "
                         "written 8 bytes before its start. ",
                         0),
            0u)
      << report;
  EXPECT_EQ(report.find("may be damaged"), std::string::npos);
  EXPECT_EQ(OutputChecks({}, outputs).restore(names), "");  // put back
}

TEST(OutputChecks, SmallOutputsOfOtherOriginAreWrittenThroughAGuardedCopy) {
  const int64_t shape[1] = {1000};
  std::vector<float> foreign(1000 + 16, 7.0f);  // 16 floats past the output, to see them kept
  const ArrayRef outputs[1] = {float_ref(foreign.data(), shape)};
  const std::vector<std::string> names{"out"};
  OutputChecks checks({}, outputs);
  auto* copy = static_cast<float*>(checks.data(0));
  ASSERT_NE(copy, foreign.data());
  EXPECT_EQ(copy[999], 7.0f);                         // the copy starts as the output is
  for (int i = 0; i < 1010; ++i) copy[i] = float(i);  // 10 past the end
  const std::string report = checks.restore(names);
  EXPECT_EQ(report.rfind("outputs[0] ('out') was written 40 bytes past its end. ", 0), 0u)
      << report;
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(foreign[i], float(i)) << i;
  for (int i = 1000; i < 1016; ++i) ASSERT_EQ(foreign[i], 7.0f) << i;  // untouched
}

TEST(OutputChecks, OutputsSharingMemoryOrLargeAreWrittenInPlace) {
  const int64_t shape[1] = {1000};
  std::vector<float> shared(1000);
  const ArrayRef alike[2] = {float_ref(shared.data(), shape), float_ref(shared.data(), shape)};
  OutputChecks in_place({alike, 1}, {alike + 1, 1});  // an output that is an input too
  EXPECT_EQ(in_place.data(0), shared.data());
  OutputChecks twice({}, alike);  // one array given as two outputs
  EXPECT_EQ(twice.data(0), shared.data());
  EXPECT_EQ(twice.data(1), shared.data());
  const int64_t large_shape[1] = {int64_t(kMaxCopiedOutputBytes / 4 + 1)};
  std::vector<float> large(static_cast<size_t>(large_shape[0]));
  const ArrayRef big[1] = {float_ref(large.data(), large_shape)};
  EXPECT_EQ(OutputChecks({}, big).data(0), large.data());
}

}  // namespace
}  // namespace kjit::cpu
