// Counters of compiler runs and disk-cache hits in this process (for cache_info() and tests).
#pragma once

#include <atomic>
#include <cstdint>

namespace kjit::cache {

struct Stats {
  std::atomic<uint64_t> compiles{0};
  std::atomic<uint64_t> disk_hits{0};
};

Stats& stats();

}  // namespace kjit::cache
