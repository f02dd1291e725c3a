// The CUDA backend: devices and their primary contexts, stream-ordered memory, copies and
// fills, modules built through the memory and disk caches, and launches.
#pragma once

#include <kjit/array.h>
#include <kjit/kernel.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/cuda/block_cache.h"
#include "backend/cuda/cuda_api.h"
#include "cache/memory_cache.h"
#include "codegen/kernel_spec.h"
#include "codegen/source.h"
#include "core/array_ref.h"
#include "core/backend.h"
#include "core/launch_dims.h"
#include "support/small_vector.h"

namespace kjit::cuda {

/// Why CUDA devices cannot be used here, or empty when they can.
std::string unavailable_reason();
int device_count();

struct DeviceInfo {
  std::string name;
  int cc = 0;  // compute capability, e.g. 90
  int max_threads_per_block = 1024;
  int max_shared_optin = 48 * 1024;
};
const DeviceInfo& device_info(int device);

/// Makes |device|'s primary context (shared with PyTorch, CuPy, JAX) current on this thread for
/// the scope, then puts back the context that was current before, if any: the CUDA runtime, and
/// with it those libraries, takes the current context as the thread's device.
class ContextScope {
 public:
  explicit ContextScope(int device);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  CUcontext previous_ = nullptr;
};

/// Device memory for use on |stream|, lent by the block cache until end_lease.
struct Lease {
  void* ptr;
  BlockCache::Block* block;
};
/// Refused (LaunchError) while |stream| captures a CUDA graph.
Lease lease(int device, size_t bytes, uintptr_t stream);
/// Gives a lease's memory back, kept for its stream's next leases. Never throws: it runs when
/// arrays are released.
void end_lease(BlockCache::Block* block) noexcept;
/// A lease held by a shared_ptr, which ends it when released.
std::shared_ptr<void> allocate(int device, size_t bytes, uintptr_t stream);

/// Copies |bytes| (any direction between host and device pointers of |device|), ordered on
/// |stream|; copies from or to the host wait for completion, and are refused (LaunchError) while
/// |stream| captures a CUDA graph.
void copy(void* dst, const void* src, size_t bytes, int device, uintptr_t stream, bool to_host,
          bool from_host);
/// Sets |count| elements of |item_size| bytes at |dst| to the bytes of |value|.
void fill(void* dst, const void* value, size_t item_size, size_t count, int device,
          uintptr_t stream);
/// Refused (LaunchError) while |stream| captures a CUDA graph.
void synchronize(int device, uintptr_t stream);

/// A loaded module with some of a kernel's entry points (codegen::cuda_entry_name), unloaded
/// when the last holder (the memory cache, a kernel's entry points, a prepared launch) lets go.
class Module {
 public:
  using Functions = std::array<CUfunction, codegen::kCudaEntryPoints>;
  Module(CUmodule module, const Functions& functions, int device, uint64_t bytes)
      : module_(module), functions_(functions), device_(device), bytes_(bytes) {}
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  /// Entry point |index|, or null when this module was built without it.
  CUfunction function(unsigned index) const { return functions_[index]; }
  /// The size of the image it was loaded from.
  uint64_t bytes() const { return bytes_; }

 private:
  CUmodule module_;
  Functions functions_;
  int device_;
  uint64_t bytes_;
};

/// An entry point and the module that holds it loaded.
struct EntryPoint {
  CUfunction function = nullptr;
  std::shared_ptr<const Module> module;
};

/// A kernel's entry points on one device for one call signature, each taken from a module
/// built (compiled, or found in the memory or disk cache) when a launch first needs it.
class EntryPoints {
 public:
  /// Entry point |index| of |source|'s kernel, on |device|, for a launch on |stream|. One not
  /// built yet is refused (LaunchError) while |stream| captures a CUDA graph.
  EntryPoint get(const KernelSpec& spec, const codegen::GeneratedSource& source, int device,
                 unsigned index, uintptr_t stream);
  /// Builds every entry point, as one module (ahead-of-time compilation).
  void build_all(const KernelSpec& spec, const codegen::GeneratedSource& source, int device);

 private:
  void adopt(const std::shared_ptr<const Module>& module);

  std::mutex mutex_;
  // Each entry point is set once, its module first: a reader that sees the function sees it.
  std::array<std::atomic<CUfunction>, codegen::kCudaEntryPoints> functions_{};
  std::array<std::shared_ptr<const Module>, codegen::kCudaEntryPoints> modules_;
};

/// Compiles every entry point of |source|'s kernel for compute capability |cc| into the disk
/// cache, without a GPU.
void build_offline(const KernelSpec& spec, const codegen::GeneratedSource& source, int cc);

struct LaunchArgs {
  const codegen::GeneratedSource& source;
  std::span<const ArrayRef> inputs;  // on the device, as the kernel sees them
  std::span<const ArrayRef> outputs;
  LaunchDims dims;
  int shared_memory = 0;
  int device = 0;
  uintptr_t stream = 0;  // the stream the launch will run on
};

/// A kernel's launch with its entry point found and its parameters packed: what depends on the
/// arrays' layouts only. A run fills in what depends on the arrays themselves (their addresses,
/// the values of 0-d inputs), so a launch can run again on other arrays of the same layouts.
class PreparedLaunch final : public kjit::PreparedLaunch {
 public:
  /// Finds (or builds) the entry point |args| needs and packs the parameters of its layout.
  PreparedLaunch(EntryPoints& entry_points, const KernelSpec& spec, const LaunchArgs& args);
  /// A precompiled kernel's launch on |device| (its module found, or loaded now): the inputs'
  /// and outputs' addresses, then the spec's scalars, on a grid of one block per group.
  PreparedLaunch(const KernelSpec& spec, const LaunchLayout& layout, int device);
  /// Launches on |stream| on |inputs| and |outputs|, laid out as the arrays the launch was
  /// prepared with.
  void run(std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
           uintptr_t stream) const override;

 private:
  // What a run fills into a parameter: nothing (packed when prepared: shapes, strides, ndims,
  // a precompiled kernel's scalars), an input's or output's address, or a 0-d input's value.
  enum class Fill : uint8_t { Packed, InputAddress, OutputAddress, InputValue };
  // Where a parameter lies in the packed parameters, and what fills it.
  struct Slot {
    uint32_t offset;
    uint32_t index;  // which input or output
    Fill fill;
  };
  CUfunction function_ = nullptr;         // none when the grid has no group
  std::shared_ptr<const Module> module_;  // keeps |function_| loaded
  unsigned grid_[3] = {}, block_[3] = {};
  unsigned shared_memory_ = 0;
  int device_ = 0;
  // The entry point's parameters, each at a 16-byte aligned offset, but a generated entry
  // point's last, the kjit_cuda_launch, which follows them in |parameters_|.
  SmallVector<Slot, 16> slots_;
  SmallVector<unsigned char, 512> parameters_;
  bool launch_record_ = true;  // a generated entry point's kjit_cuda_launch ends |parameters_|
};

/// The modules the memory cache holds. clear_cache() leaves them there; the cache's limits
/// unload those that no kernel or launch holds.
cache::MemoryUsage memory_usage();

/// The backend interface over the functions above.
const Backend& backend();

}  // namespace kjit::cuda
