#include "backend/cpu/cpu_backend.h"

#include <kjit/version.h>

#include "backend/cpu/host_compiler.h"
#include "backend/cpu/thread_pool.h"
#include "cache/disk_cache.h"
#include "cache/memory_cache.h"
#include "cache/stats.h"

namespace kjit::cpu {
namespace {

cache::MemoryCache<const Module>& modules() {
  static auto* c = new cache::MemoryCache<const Module>();  // outlives kernels in static teardown
  return *c;
}

// Launches smaller than this run on the calling thread: waking the pool costs more.
constexpr uint64_t kInlineThreads = 1 << 14;

}  // namespace

std::shared_ptr<const Module> build(const KernelSpec& spec, const std::string& source) {
  const MathMode mode = spec.compile_options.math_mode;
  const std::string key = std::string("kjit ") + version() + " cpu\n" + compiler_identity(mode) +
                          "\n" + source;
  return modules().get_or_build(key, [&]() -> std::shared_ptr<const Module> {
    cache::DiskCache& disk = cache::DiskCache::instance();
    if (std::optional<std::string> cached = disk.load(key)) {
      try {
        auto m = Module::load(*cached);
        ++cache::stats().disk_hits;
        return m;
      } catch (const std::exception&) {
        // An entry that verifies but does not load is rebuilt below and overwritten.
      }
    }
    std::string shared_object = compile_shared_object(source, spec, mode);
    ++cache::stats().compiles;
    disk.store(key, shared_object);
    return Module::load(shared_object);
  });
}

void launch(const Module& module, const kjit_cpu_launch& L) {
  uint64_t groups = uint64_t{L.groups[0]} * L.groups[1] * L.groups[2];
  uint64_t threads = uint64_t{L.grid[0]} * L.grid[1] * L.grid[2];
  if (threads == 0) return;
  kjit_cpu_entry_fn entry = module.entry();
  if (threads <= kInlineThreads || groups == 1) {
    entry(&L, 0, groups);
    return;
  }
  parallel_for(groups, [&](uint64_t begin, uint64_t end) { entry(&L, begin, end); });
}

uint64_t memory_entries() { return modules().size(); }
void clear_memory() { modules().clear(); }

}  // namespace kjit::cpu
