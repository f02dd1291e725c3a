// A fast non-cryptographic 64-bit hash (FNV-1a) for cache keys and payload checksums. Keys are
// also stored whole in each entry and compared on load, so a collision is caught, not trusted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kjit::cache {

inline uint64_t fnv1a64(std::string_view data, uint64_t seed = 0xcbf29ce484222325ull) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

inline std::string hex64(uint64_t v) {
  static const char* kDigits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = kDigits[v & 15];
  return s;
}

}  // namespace kjit::cache
