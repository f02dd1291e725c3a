// A fast non-cryptographic 64-bit hash for cache keys and payload checksums: FNV-1a's step over
// 8-byte little-endian words, each word's sum folded high half into low before the multiply
// (then FNV-1a over the last bytes one by one), and MurmurHash3's final mix. Keys are ~100 KB
// of generated source, hashed on every first call of a kernel in a process: a byte at a time
// took ~0.2 ms a key. Keys are also stored whole in each entry and compared on load, so a
// collision is caught, not trusted.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace kjit::cache {

inline uint64_t hash64(std::string_view data) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, data.data() + i, 8);  // little-endian on every host kjit builds for
    uint64_t x = h ^ word;
    x ^= x >> 32;  // the multiply carries bits only upwards: bring the high ones down first
    h = x * kPrime;
  }
  for (; i < data.size(); ++i) h = (h ^ static_cast<unsigned char>(data[i])) * kPrime;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

inline std::string hex64(uint64_t v) {
  static const char* kDigits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = kDigits[v & 15];
  return s;
}

}  // namespace kjit::cache
