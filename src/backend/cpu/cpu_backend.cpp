#include "backend/cpu/cpu_backend.h"

#include <kjit/errors.h>
#include <kjit/version.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <vector>

#include "backend/cpu/host_allocator.h"
#include "backend/cpu/host_compiler.h"
#include "backend/cpu/kernel_traps.h"
#include "backend/cpu/module.h"
#include "backend/cpu/output_checks.h"
#include "backend/cpu/thread_pool.h"
#include "cache/disk_cache.h"
#include "cache/memory_cache.h"
#include "cache/stats.h"
#include "support/small_vector.h"

namespace kjit::cpu {
namespace {

cache::MemoryCache<const Module>& modules() {
  // Outlives kernels in static teardown.
  static auto* c = new cache::MemoryCache<const Module>(
      cache::memory_limits(), [](const Module& m) -> uint64_t { return m.bytes(); });
  return *c;
}

// Launches smaller than this run on the calling thread: waking the pool costs more.
constexpr uint64_t kInlineThreads = 1 << 14;

// The module for |source|, from memory, from disk, or compiled now.
std::shared_ptr<const Module> build_module(const KernelSpec& spec, const std::string& source) {
  const MathMode mode = spec.compile_options.math_mode;
  const std::string key =
      std::string("kjit ") + version() + " cpu\n" + compiler_identity(mode) + "\n" + source;
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

// A launch's record with what depends on the layouts filled in: the inputs' shapes, strides
// and ndims, and the sizes. A run adds the arrays' addresses.
class CpuLaunch final : public PreparedLaunch {
 public:
  CpuLaunch(std::shared_ptr<const Module> module, std::shared_ptr<const KernelSpec> spec,
            const LaunchLayout& layout)
      : module_(std::move(module)),
        spec_(std::move(spec)),
        n_inputs_(layout.inputs.size()),
        shapes_(n_inputs_ * KJIT_MAX_NDIM),
        strides_(n_inputs_ * KJIT_MAX_NDIM),
        ndims_(n_inputs_) {
    for (size_t i = 0; i < n_inputs_; ++i) {
      const ArrayRef& a = layout.inputs[i];
      ndims_[i] = a.ndim;
      for (int d = 0; d < a.ndim; ++d) {
        shapes_[i * KJIT_MAX_NDIM + d] = static_cast<int>(a.shape[d]);
        strides_[i * KJIT_MAX_NDIM + d] = a.strides[d];
      }
    }
    std::memcpy(grid_, layout.dims.grid, sizeof grid_);
    std::memcpy(group_, layout.dims.group, sizeof group_);
    std::memcpy(groups_, layout.dims.groups, sizeof groups_);
    entry_ = module_->entry(grid_);
  }

  void run(std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
           uintptr_t) const override {
    const uint64_t groups = uint64_t{groups_[0]} * groups_[1] * groups_[2];
    const uint64_t threads = uint64_t{grid_[0]} * grid_[1] * grid_[2];
    if (threads == 0) return;
    // A debug build's report comes as one more output than the kernel has (core/debug_launch.h).
    const size_t n_outputs = spec_->output_names.size();
    OutputChecks checks(inputs, outputs.first(n_outputs));
    SmallVector<void*, 16> args(n_inputs_ + outputs.size());
    for (size_t i = 0; i < n_inputs_; ++i) args[i] = inputs[i].data;
    for (size_t o = 0; o < outputs.size(); ++o) {
      args[n_inputs_ + o] = o < n_outputs ? checks.data(o) : outputs[o].data;
    }
    kjit_cpu_launch L{};
    L.args = args.data();
    L.shapes = shapes_.data();
    L.strides = strides_.data();
    L.ndims = ndims_.data();
    std::memcpy(L.grid, grid_, sizeof grid_);
    std::memcpy(L.group, group_, sizeof group_);
    std::memcpy(L.groups, groups_, sizeof groups_);
    const kjit_cpu_entry_fn entry = entry_;
    const CodeRange& code = module_->code();
    const uint64_t interrupts = interrupt_count();  // a SIGINT from here on stops the launch
    std::atomic<int> trapped{0};                    // the first trap's signal
    auto run_groups = [&](uint64_t begin, uint64_t end) {
      if (trapped.load(std::memory_order_relaxed)) return;
      if (const int signal = run_trapping([&] { entry(&L, begin, end); }, interrupts, code)) {
        int none = 0;
        trapped.compare_exchange_strong(none, signal, std::memory_order_relaxed);
      }
    };
    if (threads <= kInlineThreads || groups == 1) {
      run_groups(0, groups);
    } else {
      parallel_for(groups, run_groups);
    }
    throw_if_failed(trapped.load(), checks.restore(spec_->output_names));
  }

 private:
  // A trap's error, and what the kernel wrote out of its outputs' bounds (also when it trapped
  // after that).
  static void throw_if_failed(int signal, const std::string& out_of_bounds) {
    const std::string also = out_of_bounds.empty() ? "" : ". " + out_of_bounds;
    if (signal == SIGFPE) {
      throw LaunchError(
          "an integer division by zero (or of a type's lowest value by -1) stopped the kernel on "
          "the CPU, where it traps; a GPU gives an unspecified value. The outputs are incomplete" +
          also);
    } else if (signal == SIGSEGV || signal == SIGBUS) {
      throw LaunchError(
          "the kernel accessed memory the process does not have (an index out of its arrays' "
          "bounds, a null pointer, or its stack overflowing; a GPU reports an illegal address). "
          "The outputs are incomplete, and memory the kernel wrote out of bounds before that may "
          "be damaged" +
          also);
    } else if (signal == SIGINT) {
      throw Interrupted(
          "SIGINT (Ctrl-C) stopped the kernel on the CPU. The outputs are incomplete" + also);
    } else if (signal != 0) {
      throw LaunchError(
          "the kernel stopped at a trap: an assert failed (its message is on standard error) or "
          "__trap() was called. The outputs are incomplete" +
          also);
    } else if (!out_of_bounds.empty()) {
      throw LaunchError(out_of_bounds);
    }
  }

  std::shared_ptr<const Module> module_;
  std::shared_ptr<const KernelSpec> spec_;  // names the outputs in errors
  size_t n_inputs_;
  std::vector<int> shapes_;
  std::vector<int64_t> strides_;
  std::vector<int> ndims_;
  unsigned grid_[3], group_[3], groups_[3];
  kjit_cpu_entry_fn entry_;  // the module's entry point for these sizes
};

class CpuProgram final : public Program {
 public:
  CpuProgram(std::shared_ptr<const Module> module, std::shared_ptr<const KernelSpec> spec)
      : module_(std::move(module)), spec_(std::move(spec)) {}
  std::unique_ptr<const PreparedLaunch> prepare(const LaunchLayout& layout) const override {
    return std::make_unique<const CpuLaunch>(module_, spec_, layout);
  }

 private:
  std::shared_ptr<const Module> module_;
  std::shared_ptr<const KernelSpec> spec_;
};

class CpuBackend final : public Backend {
 public:
  // A missing host compiler is reported by the first build, with the compiler's path.
  std::string unavailable_reason() const override { return {}; }
  int device_count() const override { return 1; }
  // The GPU's limit, so that code written here runs there.
  int max_threads_per_group(int) const override { return 1024; }
  std::vector<StatusEntry> status() const override {
    const HostCompiler c = host_compiler();
    return {{"compiler", c.path}, {"compiler_found", c.found}};
  }

  std::shared_ptr<const Program> build(std::shared_ptr<const KernelSpec> spec,
                                       std::shared_ptr<const codegen::GeneratedSource> source,
                                       int) const override {
    std::shared_ptr<const Module> module = build_module(*spec, source->text);
    return std::make_shared<const CpuProgram>(std::move(module), std::move(spec));
  }
  std::shared_ptr<const Program> load(std::shared_ptr<const KernelSpec>, int) const override {
    throw ValueError("device: the CPU cannot run a precompiled kernel's GPU code");
  }
  void build_for_architecture(const KernelSpec&, const codegen::GeneratedSource&,
                              int) const override {
    throw ValueError("target: the CPU has no architectures to build for");
  }

  std::shared_ptr<void> allocate(int, size_t bytes, uintptr_t) const override {
    try {
      return host_allocate(bytes);
    } catch (const std::bad_alloc&) {
      throw OutOfMemory(std::to_string(bytes) + " bytes could not be allocated on the CPU");
    }
  }
  MemoryLease lease(int device, size_t bytes, uintptr_t stream) const override {
    // The owner itself is the token: end_lease releases it.
    auto* owner = new std::shared_ptr<void>(allocate(device, bytes, stream));
    return {owner->get(), owner};
  }
  void end_lease(void* token) const noexcept override {
    delete static_cast<std::shared_ptr<void>*>(token);
  }
  void copy(void* dst, const void* src, size_t bytes, int, uintptr_t, bool, bool) const override {
    std::memcpy(dst, src, bytes);
  }
  void fill(void* dst, const void* value, size_t item_size, size_t count, int,
            uintptr_t) const override {
    auto* p = static_cast<unsigned char*>(dst);
    const auto* one = static_cast<const unsigned char*>(value);
    bool zero = true;
    for (size_t b = 0; b < item_size; ++b) zero = zero && one[b] == 0;
    if (zero) {
      std::memset(p, 0, count * item_size);
      return;
    }
    for (size_t i = 0; i < count; ++i) std::memcpy(p + i * item_size, one, item_size);
  }
  void synchronize(int, uintptr_t) const override {}  // CPU launches end before they return

  cache::MemoryUsage memory_usage() const override { return modules().usage(); }
  void clear_memory() const override { modules().clear(); }
  void add_library_search_dir(const std::string&) const override {}
};

}  // namespace

const Backend& backend() {
  static const CpuBackend* b = new CpuBackend();  // used in static teardown too
  return *b;
}

}  // namespace kjit::cpu
