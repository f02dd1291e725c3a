// Counters of compiler runs, disk-cache hits and recorded launches made again in this process
// (for cache_info() and tests).
#pragma once

#include <atomic>
#include <cstdint>

namespace kjit::cache {

struct Stats {
  std::atomic<uint64_t> compiles{0};
  std::atomic<uint64_t> disk_hits{0};
  std::atomic<uint64_t> launches_again{0};
};

Stats& stats();

}  // namespace kjit::cache
