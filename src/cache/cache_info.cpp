#include <kjit/cache.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "cache/disk_cache.h"
#include "cache/stats.h"

namespace kjit {

CacheInfo cache_info() {
  cache::DiskCache& disk = cache::DiskCache::instance();
  CacheInfo info;
  info.disk_enabled = disk.enabled();
  info.directory = disk.enabled() ? disk.directory() : std::string();
  cache::DiskCache::Usage u = disk.usage();
  info.disk_entries = u.entries;
  info.disk_bytes = u.bytes;
  info.disk_limit_bytes = disk.max_bytes();
  info.memory_entries = cpu::memory_entries() + cuda::memory_entries();
  info.compiles = cache::stats().compiles;
  info.disk_hits = cache::stats().disk_hits;
  info.launches_again = cache::stats().launches_again;
  return info;
}

void clear_cache() {
  cpu::clear_memory();  // the GPU's modules stay loaded (cuda_backend.h says why)
  cache::DiskCache::instance().clear();
}

}  // namespace kjit
