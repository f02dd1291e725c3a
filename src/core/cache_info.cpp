#include <kjit/cache.h>

#include "cache/disk_cache.h"
#include "cache/memory_cache.h"
#include "cache/stats.h"
#include "core/backend.h"

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
  for (DeviceType type : kDeviceTypes) {
    const cache::MemoryUsage m = backend_for(type).memory_usage();
    info.memory_entries += m.entries;
    info.memory_bytes += m.bytes;
    info.memory_evictions += m.evictions;
  }
  info.memory_limit_entries = cache::memory_limits().entries;
  info.memory_limit_bytes = cache::memory_limits().bytes;
  info.compiles = cache::stats().compiles;
  info.disk_hits = cache::stats().disk_hits;
  info.launches_again = cache::stats().launches_again;
  return info;
}

void clear_cache() {
  for (DeviceType type : kDeviceTypes) backend_for(type).clear_memory();
  cache::DiskCache::instance().clear();
}

}  // namespace kjit
