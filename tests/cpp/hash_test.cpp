#include "cache/hash.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kjit::cache {
namespace {

// The multiply carries bits only upwards: without the fold before it, flipping the top bits of
// two words (and bit 31 of the second) gave the same hash.
TEST(Hash64, SpreadsTheTopBitsOfWords) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("random seed: " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  const std::vector<std::vector<std::pair<int, int>>> flips = {
      {{7, 0x80}}, {{7, 0x80}, {15, 0x80}}, {{7, 0x80}, {15, 0x80}, {11, 0x80}}};
  for (int round = 0; round < 100; ++round) {
    std::string data(40, '\0');
    for (char& c : data) c = static_cast<char>(byte(rng));
    std::set<uint64_t> hashes = {hash64(data)};
    for (const auto& flip : flips) {
      std::string changed = data;
      for (auto [at, bit] : flip) changed[at] = static_cast<char>(changed[at] ^ bit);
      hashes.insert(hash64(changed));
    }
    EXPECT_EQ(hashes.size(), flips.size() + 1) << "round " << round;
  }
}

}  // namespace
}  // namespace kjit::cache
