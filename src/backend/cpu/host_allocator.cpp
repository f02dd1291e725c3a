#include "backend/cpu/host_allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "backend/cpu/block_guards.h"
#include "support/env_bytes.h"

namespace kjit::cpu {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kPooledMin = size_t{1} << 20;  // smaller blocks come and go through malloc
constexpr size_t kGranule = size_t{1} << 16;
constexpr size_t kHugePage = size_t{1} << 21;

// Guard space on each side of a block's data. A grid rounded up to its threadgroup writes up to
// 1023 elements of up to 16 bytes past the end: 16 KiB takes that. Smaller blocks get a quarter
// of their size (at least 256 bytes): a kernel then takes little longer to fill a fresh output,
// and blocks under 1 KiB stay in malloc's fast sizes. An overrun past the guard is still seen,
// as writes at the data's edge always are, but memory beyond the guard may have been written.
constexpr size_t kMaxGuard = size_t{16} << 10;
constexpr size_t kMinGuard = 256;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// |block|'s data placed |front| bytes into |base|, or one alignment step further where it would
// start a page (the header must lie in the data's page): |base| has room for that step.
GuardedBlock place(unsigned char* base, size_t front, size_t bytes, size_t back) {
  unsigned char* data = base + front;
  if (reinterpret_cast<uintptr_t>(data) % kSmallestPage == 0) data += kAlignment;
  return GuardedBlock{data, bytes, static_cast<size_t>(data - base), back};
}

// Large blocks end in a page no access may touch, so that a kernel that runs on past the guard
// faults (a LaunchError) there rather than writing into the next block.
class Pool {
 public:
  Pool() : cap_(bytes_from_env("KJIT_CPU_POOL_BYTES", size_t{1} << 30)) {}

  unsigned char* take(size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        unsigned char* p = it->second;
        free_.erase(it);
        held_ -= bytes;
        return p;
      }
    }
    auto* p = static_cast<unsigned char*>(std::aligned_alloc(kHugePage, bytes));
    if (!p) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // fewer first-touch faults; a hint only
    // Without the page (mprotect can fail, as when the process has too many mappings) the
    // guard alone stands between the block and the next.
    mprotect(p + bytes - kSmallestPage, kSmallestPage, PROT_NONE);
    return p;
  }

  void give(unsigned char* p, size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      if (held_ + bytes <= cap_) {
        free_.emplace(bytes, p);
        held_ += bytes;
        return;
      }
    }
    mprotect(p + bytes - kSmallestPage, kSmallestPage, PROT_READ | PROT_WRITE);
    std::free(p);
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, unsigned char*> free_;
  size_t held_ = 0;
  const size_t cap_;
};

Pool& pool() {
  static Pool* p = new Pool();  // blocks may be released during static teardown
  return *p;
}

}  // namespace

std::shared_ptr<void> host_allocate(size_t bytes, bool full_guards) {
  if (bytes < kPooledMin) {
    const size_t guard =
        full_guards ? kMaxGuard : std::clamp(round_up(bytes / 4, kAlignment), kMinGuard, kMaxGuard);
    auto* base = static_cast<unsigned char*>(
        std::aligned_alloc(kAlignment, round_up(guard + kAlignment + bytes + guard, kAlignment)));
    if (!base) throw std::bad_alloc();
    const GuardedBlock block = place(base, guard, bytes, guard);
    write_guards(block);
    return std::shared_ptr<void>(block.data, [base, block](void*) {
      erase_guard_header(block);
      std::free(base);
    });
  }
  const size_t total =
      round_up(kMaxGuard + kAlignment + bytes + kMaxGuard + kSmallestPage, kGranule);
  unsigned char* base = pool().take(total);
  const GuardedBlock block = place(base, kMaxGuard, bytes, kMaxGuard);
  write_guards(block);
  return std::shared_ptr<void>(block.data, [base, block, total](void*) {
    erase_guard_header(block);
    pool().give(base, total);
  });
}

}  // namespace kjit::cpu
