#include "backend/cpu/cpu_backend.h"

#include <kjit/errors.h>
#include <kjit/version.h>

#include <atomic>
#include <csignal>

#include "backend/cpu/host_compiler.h"
#include "backend/cpu/kernel_traps.h"
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

void launch(const Module& module, const std::vector<Array>& inputs,
            const std::vector<Array>& outputs, const LaunchDims& dims) {
  const size_t n_in = inputs.size();
  std::vector<void*> args(n_in + outputs.size());
  std::vector<int> shapes(n_in * KJIT_MAX_NDIM, 0), ndims(n_in);
  std::vector<int64_t> strides(n_in * KJIT_MAX_NDIM, 0);
  for (size_t i = 0; i < n_in; ++i) {
    const Array& a = inputs[i];
    args[i] = a.data();
    ndims[i] = a.ndim();
    for (int d = 0; d < a.ndim(); ++d) {
      shapes[i * KJIT_MAX_NDIM + d] = static_cast<int>(a.shape(d));
      strides[i * KJIT_MAX_NDIM + d] = a.stride(d);
    }
  }
  for (size_t o = 0; o < outputs.size(); ++o) args[n_in + o] = outputs[o].data();
  kjit_cpu_launch L{};
  L.args = args.data();
  L.shapes = shapes.data();
  L.strides = strides.data();
  L.ndims = ndims.data();
  for (int d = 0; d < 3; ++d) {
    L.grid[d] = dims.grid[d];
    L.group[d] = dims.group[d];
    L.groups[d] = dims.groups[d];
  }
  const uint64_t groups = uint64_t{L.groups[0]} * L.groups[1] * L.groups[2];
  const uint64_t threads = uint64_t{L.grid[0]} * L.grid[1] * L.grid[2];
  if (threads == 0) return;
  kjit_cpu_entry_fn entry = module.entry();
  const CodeRange& code = module.code();
  const uint64_t interrupts = interrupt_count();  // a SIGINT from here on stops the launch
  std::atomic<int> trapped{0};  // the first trap's signal
  auto run = [&](uint64_t begin, uint64_t end) {
    if (trapped.load(std::memory_order_relaxed)) return;
    if (const int signal = run_trapping([&] { entry(&L, begin, end); }, interrupts, code)) {
      int none = 0;
      trapped.compare_exchange_strong(none, signal, std::memory_order_relaxed);
    }
  };
  if (threads <= kInlineThreads || groups == 1) {
    run(0, groups);
  } else {
    parallel_for(groups, run);
  }
  if (const int signal = trapped.load(); signal == SIGFPE) {
    throw LaunchError(
        "an integer division by zero (or of a type's lowest value by -1) stopped the kernel on "
        "the CPU, where it traps; a GPU gives an unspecified value. The outputs are incomplete");
  } else if (signal == SIGSEGV || signal == SIGBUS) {
    throw LaunchError(
        "the kernel accessed memory the process does not have (an index out of its arrays' "
        "bounds, a null pointer, or its stack overflowing; a GPU reports an illegal address). "
        "The outputs are incomplete, and memory the kernel wrote out of bounds before that may "
        "be damaged");
  } else if (signal == SIGINT) {
    throw Interrupted("SIGINT (Ctrl-C) stopped the kernel on the CPU. The outputs are incomplete");
  } else if (signal != 0) {
    throw LaunchError(
        "the kernel stopped at a trap: an assert failed (its message is on standard error) or "
        "__trap() was called. The outputs are incomplete");
  }
}

uint64_t memory_entries() { return modules().size(); }
void clear_memory() { modules().clear(); }

}  // namespace kjit::cpu
