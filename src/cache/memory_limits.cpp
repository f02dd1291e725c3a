#include "cache/memory_cache.h"
#include "support/env_bytes.h"

namespace kjit::cache {

const MemoryLimits& memory_limits() {
  // Generous for a program's own kernels, and far from the system's limit on memory maps
  // (65,530 by default; a loaded CPU program takes about five).
  static const MemoryLimits limits{
      count_from_env("KJIT_MEMORY_CACHE_MAX_ENTRIES", 1024, 1),
      bytes_from_env("KJIT_MEMORY_CACHE_MAX_BYTES", uint64_t{256} << 20, 1)};
  return limits;
}

}  // namespace kjit::cache
