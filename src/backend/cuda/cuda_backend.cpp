#include "backend/cuda/cuda_backend.h"

#include <kjit/errors.h>
#include <kjit/version.h>

#include <cstring>
#include <mutex>
#include <variant>

#include "../../../prelude/target/cuda/abi.h"
#include "backend/cuda/block_cache.h"
#include "backend/cuda/library_search.h"
#include "backend/cuda/nvrtc_compiler.h"
#include "cache/disk_cache.h"
#include "cache/memory_cache.h"
#include "cache/stats.h"
#include "support/env_bytes.h"

namespace kjit::cuda {
namespace {

struct DeviceState {
  DeviceInfo info;
  std::atomic<CUcontext> context = nullptr;
  bool pool_configured = false;
};

std::mutex& devices_mutex() {
  static std::mutex m;
  return m;
}
std::vector<DeviceState>& states() {
  static auto* s = new std::vector<DeviceState>();  // contexts outlive static teardown
  return *s;
}

const DriverApi& loaded_driver() {
  const DriverApi& d = driver();
  if (!d.loaded) throw ValueError("kjit: CUDA is not available: the driver is " + d.error);
  if (!forked_reason().empty()) throw LaunchError(forked_reason());
  return d;
}

DeviceState& state(int device) {
  // Filled once; afterwards only each device's own fields change. (A static's initialisation,
  // not std::call_once: its check is one load, where call_once sets thread-locals each call.)
  static const bool filled = [] {
    std::vector<DeviceState>& s = states();
    int count = device_count();
    s = std::vector<DeviceState>(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      CUdevice dev = 0;
      KJIT_CU(cuDeviceGet, &dev, i);
      char name[256] = {};
      KJIT_CU(cuDeviceGetName, name, sizeof name, dev);
      int major = 0, minor = 0;
      KJIT_CU(cuDeviceGetAttribute, &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
      KJIT_CU(cuDeviceGetAttribute, &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
      DeviceInfo& info = s[i].info;
      info.name = name;
      info.cc = major * 10 + minor;
      KJIT_CU(cuDeviceGetAttribute, &info.max_threads_per_block,
              CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
      KJIT_CU(cuDeviceGetAttribute, &info.max_shared_optin,
              CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
    }
    return true;
  }();
  (void)filled;
  std::vector<DeviceState>& s = states();
  if (device < 0 || device >= static_cast<int>(s.size())) {
    throw ValueError("device: cuda:" + std::to_string(device) + " does not exist (" +
                     std::to_string(s.size()) + " CUDA device(s) here)");
  }
  return s[static_cast<size_t>(device)];
}

CUstream as_stream(uintptr_t s) { return reinterpret_cast<CUstream>(s); }
CUevent as_event(uintptr_t e) { return reinterpret_cast<CUevent>(e); }

// Whether |stream| is capturing a CUDA graph, which bakes in every address and launch queued on
// it: kjit then neither builds, waits for the host nor lends memory on it. A stream that cannot
// tell (the legacy stream while another stream captures) counts as not capturing: what comes
// next on it fails with the driver's own error.
bool capturing(uintptr_t stream) {
  const DriverApi& d = driver();
  // No driver, or one a forked child cannot use: the caller's own use of it says why.
  if (!d.loaded || !forked_reason().empty()) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return d.cuStreamIsCapturing(as_stream(stream), &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// What identifies a stream to the block cache: its handle, except that the legacy stream has
// two (0 and CU_STREAM_LEGACY) and the per-thread default stream (CU_STREAM_PER_THREAD) is a
// different stream on each thread. Each thread's gets a number no other thread is given, even
// after the thread ends (a later thread may reuse its addresses, and must not get the blocks
// its stream may still use); the numbers are odd, which stream handles, pointers to aligned
// driver objects, are not.
uintptr_t stream_key(uintptr_t stream) {
  constexpr uintptr_t kLegacy = 1, kPerThread = 2;
  if (stream == kLegacy) return 0;
  if (stream != kPerThread) return stream;
  static std::atomic<uintptr_t> threads_seen{0};
  static thread_local const uintptr_t key = 3 + 2 * threads_seen.fetch_add(1);
  return key;
}

BlockCache& block_cache() {
  // Never destroyed: blocks are released at exit too.
  static auto* b = new BlockCache(bytes_from_env("KJIT_CUDA_POOL_BYTES", size_t{1} << 30));
  return *b;
}
CUdeviceptr as_ptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

cache::MemoryCache<const Module>& modules() {
  static auto* c = new cache::MemoryCache<const Module>(
      cache::memory_limits(), [](const Module& m) -> uint64_t { return m.bytes(); });
  return *c;
}

std::string disk_key(const KernelSpec& spec, const std::string& source, int cc) {
  std::string key = std::string("kjit ") + version() + " cuda\n" +
                    nvrtc_identity(spec.compile_options, cc) + "\n";
  key.reserve(key.size() + source.size());  // one copy of the ~100 KB source
  key += source;
  return key;
}

// The compiled image for |key|, from disk or compiled now (and stored).
std::string image_for(const std::string& key, const KernelSpec& spec, const std::string& source,
                      int cc) {
  cache::DiskCache& disk = cache::DiskCache::instance();
  if (std::optional<std::string> cached = disk.load(key)) {
    ++cache::stats().disk_hits;
    return *cached;
  }
  CompiledImage compiled = compile_cuda(source, spec, cc);
  ++cache::stats().compiles;
  disk.store(key, compiled.image);
  return compiled.image;
}

}  // namespace

std::string unavailable_reason() {
  const DriverApi& d = driver();
  if (!d.loaded) return "the CUDA driver is " + d.error;
  if (!forked_reason().empty()) return forked_reason();
  if (device_count() == 0) return "no CUDA device found";
  return {};
}

int device_count() {
  // Asked once: the devices the driver sees do not change while it is loaded, and launches ask.
  static const int count = [] {
    const DriverApi& d = driver();
    int n = 0;
    if (!d.loaded || !forked_reason().empty() || d.cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
    return n;
  }();
  return count;
}

const DeviceInfo& device_info(int device) { return state(device).info; }

ContextScope::ContextScope(int device) {
  DeviceState& s = state(device);
  const DriverApi& d = loaded_driver();
  CUcontext context = s.context.load(std::memory_order_acquire);
  if (!context) {
    std::lock_guard lock(devices_mutex());
    context = s.context.load(std::memory_order_relaxed);
    if (!context) {
      CUdevice dev = 0;
      KJIT_CU(cuDeviceGet, &dev, device);
      KJIT_CU(cuDevicePrimaryCtxRetain, &context, dev);
      s.context.store(context, std::memory_order_release);
    }
  }
  CUcontext current = nullptr;
  d.cuCtxGetCurrent(&current);
  if (current == context) return;
  KJIT_CU(cuCtxSetCurrent, context);
  // A thread with no context keeps this one: putting nothing back would cost two driver calls
  // in each of its calls, and it has no device of its own to lose.
  previous_ = current;
}

ContextScope::~ContextScope() {
  if (previous_) driver().cuCtxSetCurrent(previous_);
}

namespace {

// Hands every block kept for |device| back to the driver, and the driver's pool back to the
// system, once the whole device is idle (no stream can still use a block). Never throws: it also
// runs when an array is released.
void drain(int device) noexcept {
  try {
    const ContextScope context(device);
    const DriverApi& d = driver();
    // Out of the cache first, then the device idle: a block released meanwhile, by another
    // thread, stays kept rather than being freed while its kernel runs.
    std::vector<uintptr_t> waits;
    const std::vector<uintptr_t> drained = block_cache().take_all(device, waits);
    if (d.cuCtxSynchronize() != CUDA_SUCCESS) return;  // leaked rather than freed too soon
    for (uintptr_t block : drained) d.cuMemFreeAsync(block, nullptr);
    for (uintptr_t e : waits) d.cuEventDestroy_v2(as_event(e));
    d.cuCtxSynchronize();
    CUdevice dev = 0;
    CUmemoryPool pool = nullptr;
    if (d.cuDeviceGet(&dev, device) == CUDA_SUCCESS &&
        d.cuDeviceGetDefaultMemPool(&pool, dev) == CUDA_SUCCESS) {
      d.cuMemPoolTrimTo(pool, 0);
    }
  } catch (...) {
    // Nothing to report it to: this also runs when an array is released.
  }
}

}  // namespace

Lease lease(int device, size_t bytes, uintptr_t stream) {
  if (capturing(stream)) {
    throw LaunchError(
        "a stream that captures a CUDA graph cannot take memory from kjit's pool (the graph would "
        "keep the address after kjit lends it again): pass outputs= (e.g. torch.empty tensors), "
        "and inputs already on the GPU as the kernel reads them, so that the call needs none, or "
        "call the kernel through kjit.torch.op, whose outputs come from torch");
  }
  const size_t size = BlockCache::block_size(bytes);
  const uintptr_t key = stream_key(stream);
  BlockCache::Lent lent = block_cache().take(device, key, size);
  BlockCache::Block* block = lent.block;
  CUdeviceptr ptr = lent.start;
  if (block && !lent.waits.empty()) {
    // Kernels on other streams used the block: this stream's work on it comes after theirs.
    size_t waited = 0;
    try {
      const ContextScope context(device);
      for (; waited < lent.waits.size(); ++waited) {
        KJIT_CU(cuStreamWaitEvent, as_stream(stream), as_event(lent.waits[waited]), 0);
        driver().cuEventDestroy_v2(as_event(lent.waits[waited]));
      }
    } catch (...) {
      // A stream that cannot wait (not a stream of this device): the block is kept again, once
      // the work its remaining events mark is done (waiting on an event needs no context).
      for (; waited < lent.waits.size(); ++waited) {
        driver().cuEventSynchronize(as_event(lent.waits[waited]));
        driver().cuEventDestroy_v2(as_event(lent.waits[waited]));
      }
      block_cache().keep(block);
      throw;
    }
  }
  if (!block) {
    const ContextScope context(device);
    DeviceState& s = state(device);
    if (!s.pool_configured) {
      // Keep freed memory in the pool: returning it to the OS makes the next allocation slow.
      CUmemoryPool pool = nullptr;
      CUdevice dev = 0;
      KJIT_CU(cuDeviceGet, &dev, device);
      if (driver().cuDeviceGetDefaultMemPool(&pool, dev) == CUDA_SUCCESS) {
        uint64_t threshold = ~uint64_t{0};
        driver().cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
      }
      s.pool_configured = true;
    }
    if (driver().cuMemAllocAsync(&ptr, size, as_stream(stream)) != CUDA_SUCCESS) {
      // Out of memory, most likely: hand the kept blocks back and try again (reporting the
      // error if there is still one).
      ptr = 0;
      drain(device);
      KJIT_CU(cuMemAllocAsync, &ptr, size, as_stream(stream));
    }
    try {
      block = block_cache().lend(device, ptr, size, key);
    } catch (...) {
      driver().cuMemFreeAsync(ptr, as_stream(stream));
      throw;
    }
  }
  return {reinterpret_cast<void*>(ptr), block};
}

void end_lease(BlockCache::Block* block) noexcept {
  const int device = block->device;
  bool over = false;
  try {
    over = block_cache().keep(block);
  } catch (...) {
    return;  // out of host memory: the block is lost rather than freed while in use
  }
  if (over) drain(device);
}

std::shared_ptr<void> allocate(int device, size_t bytes, uintptr_t stream) {
  const Lease lent = lease(device, bytes, stream);
  return std::shared_ptr<void>(lent.ptr, [block = lent.block](void*) { end_lease(block); });
}

void copy(void* dst, const void* src, size_t bytes, int device, uintptr_t stream, bool to_host,
          bool from_host) {
  if (bytes == 0) return;
  const ContextScope context(device);
  if ((to_host || from_host) && capturing(stream)) {
    throw LaunchError(
        "a stream that captures a CUDA graph cannot copy between the host and the GPU (kjit waits "
        "for such a copy, which a capture cannot do): pass arrays already on the GPU, and 0-d "
        "inputs as host values");
  }
  if (to_host) {
    KJIT_CU(cuMemcpyDtoHAsync_v2, dst, as_ptr(src), bytes, as_stream(stream));
    KJIT_CU(cuStreamSynchronize, as_stream(stream));
  } else if (from_host) {
    KJIT_CU(cuMemcpyHtoDAsync_v2, as_ptr(dst), src, bytes, as_stream(stream));
    KJIT_CU(cuStreamSynchronize, as_stream(stream));  // the host buffer may go away after this
  } else {
    KJIT_CU(cuMemcpyAsync, as_ptr(dst), as_ptr(src), bytes, as_stream(stream));
  }
}

void fill(void* dst, const void* value, size_t item_size, size_t count, int device,
          uintptr_t stream) {
  if (count == 0) return;
  const ContextScope context(device);
  CUstream s = as_stream(stream);
  switch (item_size) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, value, 1);
      KJIT_CU(cuMemsetD8Async, as_ptr(dst), v, count, s);
      return;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, value, 2);
      KJIT_CU(cuMemsetD16Async, as_ptr(dst), v, count, s);
      return;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, value, 4);
      KJIT_CU(cuMemsetD32Async, as_ptr(dst), v, count, s);
      return;
    }
    case 8: {
      // Two strided 32-bit fills: the low words, then the high words of every element.
      uint32_t v[2];
      std::memcpy(v, value, 8);
      KJIT_CU(cuMemsetD2D32Async, as_ptr(dst), 8, v[0], 1, count, s);
      KJIT_CU(cuMemsetD2D32Async, as_ptr(dst) + 4, 8, v[1], 1, count, s);
      return;
    }
    default:
      throw InternalError("cuda::fill: unsupported element size");
  }
}

void synchronize(int device, uintptr_t stream) {
  const ContextScope context(device);
  if (capturing(stream)) {
    throw LaunchError(
        "a stream that captures a CUDA graph cannot be waited for: wait after the capture ends");
  }
  KJIT_CU(cuStreamSynchronize, as_stream(stream));
}

Module::~Module() {
  // Launches of it may still be queued, on any stream: the device finishes its work first. A
  // module whose device cannot be reached (the driver shutting down) stays loaded.
  try {
    const ContextScope context(device_);
    if (driver().cuCtxSynchronize() == CUDA_SUCCESS) driver().cuModuleUnload(module_);
  } catch (...) {
    // Nothing to report it to: this runs when a kernel is released.
  }
}

namespace {

// The module of |image| loaded on |device|, or the driver's error with its JIT log. The bytes of
// a precompiled kernel are the caller's: one the driver cannot load is their compile error.
CUmodule load_image(const KernelSpec& spec, const std::string& image) {
  char log[4096] = {};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(sizeof log - 1)};
  CUmodule module = nullptr;
  // PTX is read up to its NUL, which a std::string's data has.
  const CUresult result = driver().cuModuleLoadDataEx(&module, image.data(), 2, options, values);
  if (result == CUDA_SUCCESS) return module;
  std::string message = error_text(result, "cuModuleLoadDataEx");
  if (log[0]) message += ":\n" + std::string(log);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) throw OutOfMemory(message);
  if (spec.dialect == Dialect::Precompiled && !context_lost(result)) {
    throw CompileError(
        prefix_named(spec) + "compiled_source: the CUDA driver cannot load it: " + message, log,
        "");
  }
  throw LaunchError(message);
}

// Loads |image| on |device| and finds the entry points in |mask| (a precompiled kernel's, named
// as the spec is, at index 0).
std::shared_ptr<const Module> load(const KernelSpec& spec, const std::string& image, int device,
                                   unsigned mask) {
  const DeviceInfo& info = device_info(device);
  if (spec.shared_memory > info.max_shared_optin) {
    throw ValueError(prefix(spec) + "shared_memory: " + std::to_string(spec.shared_memory) +
                     " bytes is more than " + info.name + " allows per block (" +
                     std::to_string(info.max_shared_optin) + ")");
  }
  const ContextScope context(device);
  const bool precompiled = spec.dialect == Dialect::Precompiled;
  // Unloaded again when an entry point is missing or its shared memory too large.
  std::unique_ptr<CUmod_st, CUresult (*)(CUmodule)> module(load_image(spec, image),
                                                           driver().cuModuleUnload);
  Module::Functions functions = {};
  for (unsigned index = 0; index < codegen::kCudaEntryPoints; ++index) {
    if (!(mask & (1u << index))) continue;
    const std::string entry = precompiled ? spec.name : codegen::cuda_entry_name(index);
    const CUresult found =
        driver().cuModuleGetFunction(&functions[index], module.get(), entry.c_str());
    if (precompiled && found == CUDA_ERROR_NOT_FOUND) {
      throw ValueError(prefix_named(spec) + "name: compiled_source has no kernel '" + entry + "'");
    }
    check(found, "cuModuleGetFunction");
    if (spec.shared_memory > 0) {
      // The default cap is 48 KB less the kernel's own __shared__ arrays.
      int fixed = 0;
      KJIT_CU(cuFuncGetAttribute, &fixed, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, functions[index]);
      if (spec.shared_memory + fixed > info.max_shared_optin) {
        throw ValueError(prefix(spec) + "shared_memory: " + std::to_string(spec.shared_memory) +
                         " bytes and the " + (precompiled ? "kernel" : "body") + "'s " +
                         std::to_string(fixed) + " bytes of __shared__ arrays are more than " +
                         info.name + " allows per block (" + std::to_string(info.max_shared_optin) +
                         ")");
      }
      KJIT_CU(cuFuncSetAttribute, functions[index], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              spec.shared_memory);
    }
  }
  auto made = std::make_shared<const Module>(module.get(), functions, device, image.size());
  module.release();  // |made| unloads it
  return made;
}

// A precompiled kernel's module on |device|, from the memory cache or loaded now. Loading waits
// for the host, and a module the cache lets go for it is unloaded after the whole device
// finishes: neither can be captured in a CUDA graph.
std::shared_ptr<const Module> precompiled_module(const KernelSpec& spec, int device,
                                                 uintptr_t stream) {
  std::string key = "precompiled " + spec.name + "\ndevice " + std::to_string(device) +
                    "\nshared memory " + std::to_string(spec.shared_memory) + "\n";
  key += spec.image;
  if (std::shared_ptr<const Module> m = modules().find(key)) return m;
  if (capturing(stream)) {
    throw LaunchError(prefix_named(spec) + "it is not loaded on cuda:" + std::to_string(device) +
                      " yet, and a stream that captures a CUDA graph cannot load it: launch it "
                      "once before the capture (warm-up)");
  }
  return modules().get_or_build(key, [&] { return load(spec, spec.image, device, 1u); });
}

// The module of |g|'s kernel with the entry points in |mask| on |device|, from memory, from
// disk, or compiled now; when not |compile|, null unless it is in memory or on disk.
std::shared_ptr<const Module> module_for(const KernelSpec& spec, const codegen::GeneratedSource& g,
                                         int device, unsigned mask, bool compile) {
  const int cc = device_info(device).cc;
  const std::string source = g.text + codegen::cuda_entry_points(g, mask);
  const std::string key = disk_key(spec, source, cc);
  // A module's functions are set up for the kernel's dynamic shared memory.
  const std::string memory_key = key + "\ndevice " + std::to_string(device) + "\nshared memory " +
                                 std::to_string(spec.shared_memory);
  if (compile) {
    return modules().get_or_build(
        memory_key, [&] { return load(spec, image_for(key, spec, source, cc), device, mask); });
  }
  if (std::shared_ptr<const Module> m = modules().find(memory_key)) return m;
  std::optional<std::string> image = cache::DiskCache::instance().load(key);
  if (!image) return nullptr;
  ++cache::stats().disk_hits;
  return modules().get_or_build(memory_key, [&] { return load(spec, *image, device, mask); });
}

}  // namespace

EntryPoint EntryPoints::get(const KernelSpec& spec, const codegen::GeneratedSource& source,
                            int device, unsigned index, uintptr_t stream) {
  if (CUfunction f = functions_[index].load(std::memory_order_acquire)) return {f, modules_[index]};
  std::lock_guard lock(mutex_);
  if (CUfunction f = functions_[index].load(std::memory_order_relaxed)) return {f, modules_[index]};
  // Compiling or loading a module waits for the host, and a module that the memory cache lets go
  // for this one is unloaded after the whole device finishes: neither can be captured.
  if (capturing(stream)) {
    throw LaunchError(prefix(spec) + "kernel '" + spec.name +
                      "' is not built for this launch yet, and a stream that captures a CUDA "
                      "graph cannot compile or load it: run the call once before capture "
                      "(warm-up), or build it first (kernel.build(..., target='cuda'), or "
                      "op.prepare(...) for a kjit.torch op)");
  }
  // A module with every entry point, built ahead of time, serves all launches; otherwise this
  // one is built alone.
  std::shared_ptr<const Module> module =
      module_for(spec, source, device, codegen::kAllCudaEntryPoints, false);
  if (!module) module = module_for(spec, source, device, 1u << index, true);
  adopt(module);
  return {functions_[index].load(std::memory_order_relaxed), modules_[index]};
}

void EntryPoints::build_all(const KernelSpec& spec, const codegen::GeneratedSource& source,
                            int device) {
  std::shared_ptr<const Module> module =
      module_for(spec, source, device, codegen::kAllCudaEntryPoints, true);
  std::lock_guard lock(mutex_);
  adopt(module);
}

void EntryPoints::adopt(const std::shared_ptr<const Module>& module) {
  for (unsigned index = 0; index < codegen::kCudaEntryPoints; ++index) {
    CUfunction f = module->function(index);
    if (!f || functions_[index].load(std::memory_order_relaxed)) continue;  // set once
    modules_[index] = module;
    functions_[index].store(f, std::memory_order_release);
  }
}

void build_offline(const KernelSpec& spec, const codegen::GeneratedSource& g, int cc) {
  const std::string source = g.text + codegen::cuda_entry_points(g, codegen::kAllCudaEntryPoints);
  image_for(disk_key(spec, source, cc), spec, source, cc);
}

namespace {

// {multiplier, shift} such that n / d == (umulhi(n, multiplier) + n) >> shift for every n < 2^31
// (Granlund and Montgomery's division by invariant integers, round-up variant).
void division_magic(uint64_t d, unsigned magic[2]) {
  unsigned shift = 0;
  while ((uint64_t{1} << shift) < d) ++shift;
  magic[0] = static_cast<unsigned>((((uint64_t{1} << shift) - d) << 32) / d + 1);
  magic[1] = shift;
}

// The bytes the kjit_cuda_launch parameter takes, after the others.
constexpr size_t kCudaLaunchBytes = (sizeof(kjit_cuda_launch) + 15) / 16 * 16;

// The bytes a parameter of |kind| takes in the packed parameters: a 16-byte slot per 16 bytes it
// needs; shapes and strides are arrays of kMaxNdim, everything else fits in 8 bytes.
size_t slot_bytes(codegen::Param::Kind kind) {
  using Kind = codegen::Param::Kind;
  const size_t bytes = kind == Kind::Shape     ? kMaxNdim * sizeof(int)
                       : kind == Kind::Strides ? kMaxNdim * sizeof(int64_t)
                                               : 8;
  return (bytes + 15) / 16 * 16;
}

}  // namespace

PreparedLaunch::PreparedLaunch(EntryPoints& entry_points, const KernelSpec& spec,
                               const LaunchArgs& a)
    : shared_memory_(static_cast<unsigned>(a.shared_memory)), device_(a.device) {
  const uint64_t blocks = uint64_t{a.dims.groups[0]} * a.dims.groups[1] * a.dims.groups[2];
  if (blocks == 0) return;
  // The grid of blocks for the grid of groups (kjit_cuda_layout): as it is within the driver's
  // caps, so that blocks know their group without arithmetic; a tall single column of groups
  // turned on its side; anything else flattened and decoded.
  constexpr unsigned kCap = 65535;
  const unsigned* groups = a.dims.groups;
  unsigned layout = a.dims.grid[1] == 1 && a.dims.grid[2] == 1 ? kjit_cuda_row : kjit_cuda_blocks;
  std::memcpy(grid_, groups, sizeof grid_);
  if (groups[1] > kCap || groups[2] > kCap) {
    layout = groups[0] == 1 && groups[2] <= kCap ? kjit_cuda_column : kjit_cuda_flat;
    grid_[0] = layout == kjit_cuda_column ? groups[1] : static_cast<unsigned>(blocks);
    grid_[1] = layout == kjit_cuda_column ? groups[2] : 1;
    grid_[2] = 1;
  }
  const uint64_t blocks_in_x = layout == kjit_cuda_flat ? blocks : grid_[0];
  if (blocks_in_x > 0x7fffffffull) {
    throw ValueError("grid: " + std::to_string(blocks_in_x) +
                     " threadgroups are more than CUDA launches at once (2^31-1)");
  }
  std::memcpy(block_, a.dims.group, sizeof block_);
  bool full = true;
  for (int d = 0; d < 3; ++d) full = full && a.dims.grid[d] % a.dims.group[d] == 0;
  EntryPoint entry =
      entry_points.get(spec, a.source, a.device, codegen::cuda_entry_index(layout, full), a.stream);
  function_ = entry.function;
  module_ = std::move(entry.module);
  kjit_cuda_launch record = {};
  std::memcpy(record.grid, a.dims.grid, sizeof record.grid);
  std::memcpy(record.group, a.dims.group, sizeof record.group);
  std::memcpy(record.groups, a.dims.groups, sizeof record.groups);
  if (layout == kjit_cuda_flat) {
    division_magic(groups[0], record.by_x);
    division_magic(uint64_t{groups[0]} * groups[1], record.by_xy);
  }
  // What depends on the layouts only: the shapes, strides and ndims, then the launch record.
  // Addresses and 0-d inputs' values are filled in by each run.
  using Kind = codegen::Param::Kind;
  uint32_t offset = 0;
  for (const codegen::Param& p : a.source.layout) {
    const Fill fill = p.kind == Kind::Input    ? Fill::InputAddress
                      : p.kind == Kind::Output ? Fill::OutputAddress
                      : p.kind == Kind::Scalar ? Fill::InputValue
                                               : Fill::Packed;
    slots_.push_back({offset, static_cast<uint32_t>(p.index), fill});
    offset += static_cast<uint32_t>(slot_bytes(p.kind));
  }
  parameters_.resize(offset + kCudaLaunchBytes);
  std::memcpy(parameters_.data() + offset, &record, sizeof record);
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Kind kind = a.source.layout[i].kind;
    if (kind != Kind::Shape && kind != Kind::Strides && kind != Kind::Ndim) continue;
    unsigned char* at = parameters_.data() + slots_[i].offset;
    const ArrayRef& in = a.inputs[slots_[i].index];
    if (kind == Kind::Shape) {
      int shape[kMaxNdim] = {};
      for (int d = 0; d < in.ndim; ++d) shape[d] = static_cast<int>(in.shape[d]);
      std::memcpy(at, shape, sizeof shape);
    } else if (kind == Kind::Strides) {
      std::memcpy(at, in.strides, in.ndim * sizeof(int64_t));
    } else if (kind == Kind::Ndim) {
      std::memcpy(at, &in.ndim, sizeof(int));
    }
  }
}

PreparedLaunch::PreparedLaunch(const KernelSpec& spec, const LaunchLayout& layout, int device)
    : shared_memory_(static_cast<unsigned>(spec.shared_memory)),
      device_(device),
      launch_record_(false) {
  const unsigned* groups = layout.dims.groups;
  if (uint64_t{groups[0]} * groups[1] * groups[2] == 0) return;
  // One block per group, in three dimensions, as MLX launches it: the kernel reads blockIdx
  // itself, so no layout of kjit's can stand in for the driver's caps.
  if (groups[0] > 0x7fffffffu || groups[1] > 65535 || groups[2] > 65535) {
    throw ValueError(prefix_named(spec) + "grid: (" + std::to_string(groups[0]) + ", " +
                     std::to_string(groups[1]) + ", " + std::to_string(groups[2]) +
                     ") threadgroups are more than CUDA launches at once (at most "
                     "(2^31-1, 65535, 65535))");
  }
  std::memcpy(grid_, groups, sizeof grid_);
  // The whole threadgroup in every block, as MLX launches it, the grid's edge included.
  std::memcpy(block_, layout.dims.threadgroup, sizeof block_);
  module_ = precompiled_module(spec, device, layout.stream);
  function_ = module_->function(0);
  // MLX's order: each input's address, each output's, then the scalars by value.
  constexpr uint32_t kSlot = 16;
  uint32_t offset = 0;
  for (size_t i = 0; i < layout.inputs.size(); ++i, offset += kSlot) {
    slots_.push_back({offset, static_cast<uint32_t>(i), Fill::InputAddress});
  }
  for (size_t o = 0; o < layout.outputs.size(); ++o, offset += kSlot) {
    slots_.push_back({offset, static_cast<uint32_t>(o), Fill::OutputAddress});
  }
  parameters_.resize(offset + spec.scalars.size() * kSlot);
  for (size_t s = 0; s < spec.scalars.size(); ++s, offset += kSlot) {
    slots_.push_back({offset, static_cast<uint32_t>(s), Fill::Packed});
    unsigned char* at = parameters_.data() + offset;
    std::visit([&](auto value) { std::memcpy(at, &value, sizeof value); }, spec.scalars[s]);
  }
}

void PreparedLaunch::run(std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
                         uintptr_t stream) const {
  if (!function_) return;
  // The parameters copied, as another thread may run the same launch, with this run's arrays
  // filled in; the driver takes pointers to each (on the stack for up to 256 of them).
  alignas(16) unsigned char local[4096];
  std::vector<unsigned char> spill;
  unsigned char* base = local;
  if (parameters_.size() > sizeof local) {
    spill.assign(parameters_.begin(), parameters_.end());
    base = spill.data();
  } else {
    std::memcpy(local, parameters_.data(), parameters_.size());
  }
  void* param_array[256];
  std::vector<void*> param_spill;
  void** params = param_array;
  if (slots_.size() + 1 > std::size(param_array)) {
    param_spill.resize(slots_.size() + 1);
    params = param_spill.data();
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    unsigned char* at = base + slot.offset;
    params[i] = at;
    if (slot.fill == Fill::InputAddress || slot.fill == Fill::OutputAddress) {
      const ArrayRef& x = (slot.fill == Fill::InputAddress ? inputs : outputs)[slot.index];
      std::memcpy(at, &x.data, sizeof x.data);
    } else if (slot.fill == Fill::InputValue) {
      // A 0-d input may live on the host (a Python scalar) or on the device.
      const ArrayRef& s = inputs[slot.index];
      if (s.device.type == DeviceType::CPU) {
        std::memcpy(at, s.data, itemsize(s.dtype));
      } else {
        copy(at, s.data, itemsize(s.dtype), device_, stream, true, false);
      }
    }
  }
  if (launch_record_) params[slots_.size()] = base + parameters_.size() - kCudaLaunchBytes;
  const ContextScope context(device_);
  KJIT_CU(cuLaunchKernel, function_, grid_[0], grid_[1], grid_[2], block_[0], block_[1], block_[2],
          shared_memory_, as_stream(stream), params, nullptr);
  // Blocks lent to other streams that this kernel uses (whole or through a view): their next
  // user waits for it.
  const uintptr_t key = stream_key(stream);
  try {
    for (std::span<const ArrayRef> arrays : {inputs, outputs}) {
      for (const ArrayRef& x : arrays) {
        if (x.device.type != DeviceType::CUDA) continue;
        const uintptr_t block = block_cache().lent_elsewhere(as_ptr(x.data), key);
        if (!block) continue;
        uintptr_t event = block_cache().event_for(block, key);
        if (!event) {
          CUevent e = nullptr;
          KJIT_CU(cuEventCreate, &e, CU_EVENT_DISABLE_TIMING);
          event = reinterpret_cast<uintptr_t>(e);
          bool attached = false;
          try {
            attached = block_cache().add_wait(block, key, event);
          } catch (...) {
            driver().cuEventDestroy_v2(e);
            throw;
          }
          if (!attached) {  // the block is gone: no user to wait
            driver().cuEventDestroy_v2(e);
            continue;
          }
        }
        KJIT_CU(cuEventRecord, as_event(event), as_stream(stream));
      }
    }
  } catch (...) {
    // The kernel is queued but a block's next user may not learn to wait for it: it ends first.
    driver().cuStreamSynchronize(as_stream(stream));
    throw;
  }
}

cache::MemoryUsage memory_usage() { return modules().usage(); }

namespace {

class CudaProgram final : public Program {
 public:
  CudaProgram(std::shared_ptr<const KernelSpec> spec,
              std::shared_ptr<const codegen::GeneratedSource> source, int device)
      : spec_(std::move(spec)), source_(std::move(source)), device_(device) {}

  std::unique_ptr<const kjit::PreparedLaunch> prepare(const LaunchLayout& layout) const override {
    return std::make_unique<const PreparedLaunch>(
        entry_points_, *spec_,
        LaunchArgs{*source_, layout.inputs, layout.outputs, layout.dims, spec_->shared_memory,
                   device_, layout.stream});
  }
  void build_all() const override { entry_points_.build_all(*spec_, *source_, device_); }

 private:
  std::shared_ptr<const KernelSpec> spec_;
  std::shared_ptr<const codegen::GeneratedSource> source_;
  int device_;
  mutable EntryPoints entry_points_;  // built as launches need them
};

// A precompiled kernel's program: its module is found (or loaded) by each launch it prepares,
// as a kernel made for one call prepares one.
class PrecompiledProgram final : public Program {
 public:
  PrecompiledProgram(std::shared_ptr<const KernelSpec> spec, int device)
      : spec_(std::move(spec)), device_(device) {}

  std::unique_ptr<const kjit::PreparedLaunch> prepare(const LaunchLayout& layout) const override {
    return std::make_unique<const PreparedLaunch>(*spec_, layout, device_);
  }

 private:
  std::shared_ptr<const KernelSpec> spec_;
  int device_;
};

class CudaBackend final : public Backend {
 public:
  std::string unavailable_reason() const override { return cuda::unavailable_reason(); }
  int device_count() const override { return cuda::device_count(); }
  int max_threads_per_group(int device) const override {
    return device < cuda::device_count() ? device_info(device).max_threads_per_block : 1024;
  }
  std::vector<StatusEntry> status() const override {
    const DriverApi& d = driver();
    const NvrtcApi& r = nvrtc();
    int driver_version = 0;
    if (d.loaded) d.cuDriverGetVersion(&driver_version);
    auto text_or_none = [](bool loaded, const std::string& text) -> StatusEntry::Value {
      if (!loaded) return std::monostate();
      return text;
    };
    StatusEntry::Devices devices;
    for (int i = 0; i < cuda::device_count(); ++i) {
      const DeviceInfo& info = device_info(i);
      devices.emplace_back(info.name, "sm_" + std::to_string(info.cc));
    }
    return {{"driver", text_or_none(d.loaded, d.library)},
            {"driver_version", int64_t{driver_version}},
            {"driver_error", d.error},
            {"nvrtc", text_or_none(r.loaded, r.library)},
            {"nvrtc_version",
             text_or_none(r.loaded, std::to_string(r.major) + "." + std::to_string(r.minor))},
            {"nvrtc_error", r.error},
            {"devices", std::move(devices)},
            {"unavailable", cuda::unavailable_reason()},
            // Unavailable by design (no driver, no GPU), rather than present and broken.
            {"absent",
             d.absent || (d.loaded && cuda::forked_reason().empty() && cuda::device_count() == 0)}};
  }

  std::shared_ptr<const Program> build(std::shared_ptr<const KernelSpec> spec,
                                       std::shared_ptr<const codegen::GeneratedSource> source,
                                       int device) const override {
    // Entry points are built when a launch first needs them.
    return std::make_shared<const CudaProgram>(std::move(spec), std::move(source), device);
  }
  std::shared_ptr<const Program> load(std::shared_ptr<const KernelSpec> spec,
                                      int device) const override {
    return std::make_shared<const PrecompiledProgram>(std::move(spec), device);
  }
  void build_for_architecture(const KernelSpec& spec, const codegen::GeneratedSource& source,
                              int architecture) const override {
    build_offline(spec, source, architecture);
  }

  std::shared_ptr<void> allocate(int device, size_t bytes, uintptr_t stream) const override {
    return cuda::allocate(device, bytes, stream);
  }
  MemoryLease lease(int device, size_t bytes, uintptr_t stream) const override {
    const Lease lent = cuda::lease(device, bytes, stream);
    return {lent.ptr, lent.block};
  }
  void end_lease(void* token) const noexcept override {
    cuda::end_lease(static_cast<BlockCache::Block*>(token));
  }
  void copy(void* dst, const void* src, size_t bytes, int device, uintptr_t stream, bool to_host,
            bool from_host) const override {
    cuda::copy(dst, src, bytes, device, stream, to_host, from_host);
  }
  void fill(void* dst, const void* value, size_t item_size, size_t count, int device,
            uintptr_t stream) const override {
    cuda::fill(dst, value, item_size, count, device, stream);
  }
  void synchronize(int device, uintptr_t stream) const override {
    cuda::synchronize(device, stream);
  }

  cache::MemoryUsage memory_usage() const override { return cuda::memory_usage(); }
  void clear_memory() const override {}  // modules stay loaded: launches may still be queued
  void add_library_search_dir(const std::string& dir) const override {
    cuda::add_library_search_dir(dir);
  }
};

}  // namespace

const Backend& backend() {
  static const CudaBackend* b = new CudaBackend();  // used in static teardown too
  return *b;
}

}  // namespace kjit::cuda
