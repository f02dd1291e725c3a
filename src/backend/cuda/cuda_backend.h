// The CUDA backend: devices and their primary contexts, stream-ordered memory, copies and
// fills, modules built through the memory and disk caches, and launches.
#pragma once

#include <kjit/array.h>
#include <kjit/kernel.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_api.h"
#include "codegen/source.h"
#include "core/kernel_spec.h"
#include "core/launch_dims.h"

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

/// Makes |device|'s primary context current on this thread (shared with PyTorch, CuPy, JAX).
void make_current(int device);

/// Device memory for use on |stream|, kept for that stream's next allocations when released
/// (BlockCache).
std::shared_ptr<void> allocate(int device, size_t bytes, uintptr_t stream);

/// Copies |bytes| (any direction between host and device pointers of |device|), ordered on
/// |stream|; copies from or to the host wait for completion.
void copy(void* dst, const void* src, size_t bytes, int device, uintptr_t stream, bool to_host,
          bool from_host);
/// Sets |count| elements of |item_size| bytes at |dst| to the bytes of |value|.
void fill(void* dst, const void* value, size_t item_size, size_t count, int device,
          uintptr_t stream);
void synchronize(int device, uintptr_t stream);

class Module {
 public:
  Module(CUmodule module, CUfunction entry, CUfunction entry_1d)
      : module_(module), entry_(entry), entry_1d_(entry_1d) {}
  /// The entry point for a launch: grids that extend in x only have their own.
  CUfunction entry(bool one_d) const { return one_d ? entry_1d_ : entry_; }

 private:
  CUmodule module_;  // never unloaded: launches may still be queued when a kernel goes away
  CUfunction entry_, entry_1d_;
};

/// The module for |source| on |device|, from memory, from disk, or compiled now.
std::shared_ptr<const Module> build(const KernelSpec& spec, const std::string& source, int device);

/// Compiles |source| for compute capability |cc| into the disk cache without a GPU.
void build_offline(const KernelSpec& spec, const std::string& source, int cc);

struct LaunchArgs {
  const std::vector<codegen::Param>& layout;
  const std::vector<Array>& inputs;  // on the device, as the kernel sees them
  const std::vector<Array>& outputs;
  LaunchDims dims;
  int shared_memory = 0;
  uintptr_t stream = 0;
  int device = 0;
};
void launch(const Module& module, const LaunchArgs& args);

uint64_t memory_entries();
void clear_memory();

}  // namespace kjit::cuda
