// What the core asks of a target (the CPU, a CUDA GPU): programs built from generated sources,
// launches prepared for one set of array layouts and run again on any arrays laid out so, and
// the memory operations arrays need. The core finds a target's backend through backend_for and
// never includes a backend's own headers.
#pragma once

#include <kjit/device.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "cache/memory_cache.h"
#include "codegen/kernel_spec.h"
#include "codegen/source.h"
#include "core/array_ref.h"
#include "core/launch_dims.h"

namespace kjit {

/// The layouts and sizes a launch is prepared for. The arrays' addresses (and 0-d inputs'
/// values) are not part of it: each run gives its own.
struct LaunchLayout {
  std::span<const ArrayRef> inputs;  // on the device, as the kernel sees them
  std::span<const ArrayRef> outputs;
  LaunchDims dims;
  /// The stream the launch will run on; a GPU refuses to build or load while it captures.
  uintptr_t stream = 0;
};

/// A launch with its entry point found and its parameters packed. Safe to run from several
/// threads at once.
class PreparedLaunch {
 public:
  virtual ~PreparedLaunch() = default;
  /// Launches on |inputs| and |outputs|, laid out as the arrays it was prepared for, ordered on
  /// |stream| (GPU; the CPU runs it to completion before returning).
  virtual void run(std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
                   uintptr_t stream) const = 0;
};

/// A kernel built for one call signature on one device.
class Program {
 public:
  virtual ~Program() = default;
  virtual std::unique_ptr<const PreparedLaunch> prepare(const LaunchLayout& layout) const = 0;
  /// Builds now every variant a launch may need (a GPU builds one per launch shape, as launches
  /// ask for them).
  virtual void build_all() const {}
};

/// Memory lent for use on a stream until end_lease, with no owner object made for it.
struct MemoryLease {
  void* ptr = nullptr;
  void* token = nullptr;  // what end_lease takes back
};

/// One fact a backend reports about itself (python -m kjit doctor).
struct StatusEntry {
  using Devices = std::vector<std::pair<std::string, std::string>>;  // (name, architecture)
  using Value = std::variant<std::monostate, std::string, int64_t, bool, Devices>;
  std::string key;
  Value value;
};

class Backend {
 public:
  virtual ~Backend() = default;

  /// Why this backend cannot run kernels here, or empty when it can.
  virtual std::string unavailable_reason() const = 0;
  virtual int device_count() const = 0;
  virtual int max_threads_per_group(int device) const = 0;
  /// What the backend found: its compiler, libraries and devices.
  virtual std::vector<StatusEntry> status() const = 0;

  /// The program for |source| (from the memory or disk cache, or compiled now) on |device|.
  virtual std::shared_ptr<const Program> build(
      std::shared_ptr<const KernelSpec> spec,
      std::shared_ptr<const codegen::GeneratedSource> source, int device) const = 0;
  /// The program of a kernel compiled elsewhere (|spec|'s image: PTX, a cubin or a fatbin) on
  /// |device|. Its module is loaded at its first launch and kept in the memory cache.
  virtual std::shared_ptr<const Program> load(std::shared_ptr<const KernelSpec> spec,
                                              int device) const = 0;
  /// Compiles |source| into the disk cache for |architecture| ("sm_90"), needing no device.
  virtual void build_for_architecture(const KernelSpec& spec,
                                      const codegen::GeneratedSource& source,
                                      int architecture) const = 0;

  /// Memory for |bytes| on |device|, ordered on |stream|, freed when the owner is released.
  /// OutOfMemory when there is none. A GPU lends none (LaunchError) to a stream that captures a
  /// CUDA graph: the graph would keep the address after the memory is lent again.
  virtual std::shared_ptr<void> allocate(int device, size_t bytes, uintptr_t stream) const = 0;
  virtual MemoryLease lease(int device, size_t bytes, uintptr_t stream) const = 0;
  /// Never throws: it runs when arrays are released.
  virtual void end_lease(void* token) const noexcept = 0;
  /// Copies |bytes| between memory of |device| and the host (or within |device|), ordered on
  /// |stream|; a copy to or from the host has finished when it returns, and is refused
  /// (LaunchError) on a stream that captures a CUDA graph, as is synchronize.
  virtual void copy(void* dst, const void* src, size_t bytes, int device, uintptr_t stream,
                    bool to_host, bool from_host) const = 0;
  /// Sets |count| elements of |item_size| bytes at |dst| to the bytes at |value|.
  virtual void fill(void* dst, const void* value, size_t item_size, size_t count, int device,
                    uintptr_t stream) const = 0;
  /// Returns when the work queued on |stream| has finished.
  virtual void synchronize(int device, uintptr_t stream) const = 0;

  /// The programs the memory cache holds; clear_memory forgets those it can (a GPU's stay
  /// loaded, as launches of them may still be queued).
  virtual cache::MemoryUsage memory_usage() const = 0;
  virtual void clear_memory() const = 0;
  /// A directory to search for the backend's libraries before the default places.
  virtual void add_library_search_dir(const std::string& dir) const = 0;
};

/// Every device type, for what concerns them all (caches, devices()).
inline constexpr DeviceType kDeviceTypes[] = {DeviceType::CPU, DeviceType::CUDA};

/// The backend of |type|'s devices. Every type has one: a target built without support says
/// why in unavailable_reason.
const Backend& backend_for(DeviceType type);

}  // namespace kjit
