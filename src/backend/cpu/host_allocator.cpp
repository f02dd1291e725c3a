#include "backend/cpu/host_allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "support/env_bytes.h"

namespace kjit::cpu {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kPooledMin = size_t{1} << 20;  // smaller blocks come and go through malloc
constexpr size_t kGranule = size_t{1} << 16;
constexpr size_t kHugePage = size_t{1} << 21;

class Pool {
 public:
  Pool() : cap_(bytes_from_env("KJIT_CPU_POOL_BYTES", size_t{1} << 30)) {}

  void* take(size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        held_ -= bytes;
        return p;
      }
    }
    void* p = std::aligned_alloc(kHugePage, bytes);
    if (!p) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // fewer first-touch faults; a hint only
    return p;
  }

  void give(void* p, size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      if (held_ + bytes <= cap_) {
        free_.emplace(bytes, p);
        held_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  size_t held_ = 0;
  const size_t cap_;
};

Pool& pool() {
  static Pool* p = new Pool();  // blocks may be released during static teardown
  return *p;
}

}  // namespace

std::shared_ptr<void> host_allocate(size_t bytes) {
  if (bytes < kPooledMin) {
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment);
    if (!p) throw std::bad_alloc();
    return std::shared_ptr<void>(p, std::free);
  }
  size_t rounded = (bytes + kGranule - 1) / kGranule * kGranule;
  void* p = pool().take(rounded);
  return std::shared_ptr<void>(p, [rounded](void* q) { pool().give(q, rounded); });
}

}  // namespace kjit::cpu
