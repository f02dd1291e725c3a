// The compile caches (in memory and on disk).
#pragma once

#include <cstdint>
#include <string>

namespace kjit {

struct CacheInfo {
  std::string directory;  // empty when the disk cache is off or unusable
  bool disk_enabled = false;
  uint64_t disk_entries = 0;
  uint64_t disk_bytes = 0;
  uint64_t disk_limit_bytes = 0;
  // The programs kept in memory (loaded), over every device type; each type's cache keeps at
  // most the limits, but programs that kernels still hold are never unloaded.
  uint64_t memory_entries = 0;
  uint64_t memory_bytes = 0;
  uint64_t memory_limit_entries = 0;  // per device type
  uint64_t memory_limit_bytes = 0;    // per device type
  uint64_t memory_evictions = 0;      // programs forgotten for the limits in this process
  uint64_t compiles = 0;              // compiler runs in this process
  uint64_t disk_hits = 0;             // kernels loaded from disk in this process
  uint64_t launches_again = 0;        // launches made again from a record (core/launch_record.h)
};

CacheInfo cache_info();

/// Empties the CPU backend's in-memory cache and deletes the disk cache's entries (modules
/// loaded on a GPU stay loaded: launches of them may still be queued).
void clear_cache();

}  // namespace kjit
