#include "backend/cpu/block_guards.h"

#include <algorithm>
#include <cstring>

namespace kjit::cpu {
namespace {

// A byte no kernel is likely to write: 0xA5A5A5A5 is neither a small integer nor an ordinary
// float (-2.9e-16), and not zero, which kernels write most.
constexpr unsigned char kPattern = 0xA5;
constexpr uint64_t kPatternWord = 0xA5A5A5A5A5A5A5A5ull;
// The guard bytes next to the data checked after every launch, on each side.
constexpr size_t kNearBytes = 64;

// The sizes are kept XOR the pattern, so that small sizes look like the pattern too, and a
// kernel that writes zeros, or small integers, before the data changes every byte it writes.
struct Header {
  uint64_t bytes;
  uint64_t guards;  // front | back << 32
  uint64_t check;   // of the words above and the data's address
};
static_assert(sizeof(Header) == kGuardHeaderBytes);

// splitmix64's finaliser over the fields and the data's address: memory that happens to hold a
// header's fields with the check of its own address is as unlikely as a random 64-bit match.
uint64_t check_of(const Header& h, const unsigned char* data) {
  uint64_t x = reinterpret_cast<uintptr_t>(data) ^ h.bytes * 0x9e3779b97f4a7c15ull ^
               (h.guards << 32 | h.guards >> 32);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Header header_of(const GuardedBlock& b) {
  Header h{b.bytes ^ kPatternWord, (b.front | uint64_t{b.back} << 32) ^ kPatternWord, 0};
  h.check = check_of(h, b.data);
  return h;
}

// Whether the |n| bytes at |p| all hold the pattern, read a word at a time.
bool all_pattern(const unsigned char* p, size_t n) {
  uint64_t differ = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    differ |= w ^ kPatternWord;
  }
  for (; i < n; ++i) differ |= p[i] ^ kPattern;
  return differ == 0;
}

}  // namespace

void write_guards(const GuardedBlock& b) {
  const Header h = header_of(b);
  std::memset(b.data - b.front, kPattern, b.front - sizeof h);
  std::memcpy(b.data - sizeof h, &h, sizeof h);
  std::memset(b.data + b.bytes, kPattern, b.back);
}

void erase_guard_header(const GuardedBlock& b) {
  std::memset(b.data - sizeof(Header), 0, sizeof(Header));
}

std::optional<GuardedBlock> find_guarded_block(const void* data) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (reinterpret_cast<uintptr_t>(p) % kSmallestPage < sizeof(Header)) return std::nullopt;
  Header h;
  std::memcpy(&h, p - sizeof h, sizeof h);
  if (h.check != check_of(h, p)) return std::nullopt;
  const uint64_t guards = h.guards ^ kPatternWord;
  return GuardedBlock{const_cast<unsigned char*>(p), h.bytes ^ kPatternWord, guards & 0xffffffff,
                      guards >> 32};
}

bool guards_near_data_intact(const GuardedBlock& b) {
  const Header h = header_of(b);
  const size_t front = std::min(kNearBytes, b.front);
  return std::memcmp(b.data - sizeof h, &h, sizeof h) == 0 &&
         all_pattern(b.data - front, front - sizeof h) &&
         all_pattern(b.data + b.bytes, std::min(kNearBytes, b.back));
}

GuardDamage restore_guards(const GuardedBlock& b) {
  const Header h = header_of(b);
  const unsigned char* header = reinterpret_cast<const unsigned char*>(&h);
  const unsigned char* front = b.data - b.front;
  const size_t pattern_bytes = b.front - sizeof h;
  GuardDamage damage;
  // The first byte of the front guard that differs, and the last of the back guard.
  for (size_t i = 0; i < b.front && !damage.before; ++i) {
    const unsigned char expected = i < pattern_bytes ? kPattern : header[i - pattern_bytes];
    if (front[i] != expected) damage.before = b.front - i;
  }
  const unsigned char* back = b.data + b.bytes;
  for (size_t i = b.back; i > 0 && !damage.after; --i) {
    if (back[i - 1] != kPattern) damage.after = i;
  }
  if (damage.any()) write_guards(b);
  return damage;
}

}  // namespace kjit::cpu
