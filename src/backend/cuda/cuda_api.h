// The CUDA driver and NVRTC entry points kjit uses, loaded with dlopen at first use so that kjit
// imports and runs its CPU backend on machines without them. Each function is listed once; the
// list declares the pointers and drives their lookup.
#pragma once

#include <cstddef>
#include <string>

namespace kjit::cuda {

// The few driver and NVRTC types kjit needs, declared here so that building kjit needs no
// CUDA headers.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUmemoryPool = struct CUmemPoolHandle_st*;
using CUevent = struct CUevent_st*;
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
inline constexpr int CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
inline constexpr int CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4;
inline constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
using CUstreamCaptureStatus = int;
inline constexpr CUstreamCaptureStatus CU_STREAM_CAPTURE_STATUS_NONE = 0;

#define KJIT_CUDA_DRIVER_FUNCTIONS(X)                                                             \
  X(cuInit, CUresult, (unsigned flags))                                                           \
  X(cuDriverGetVersion, CUresult, (int* version))                                                 \
  X(cuDeviceGetCount, CUresult, (int* count))                                                     \
  X(cuDeviceGet, CUresult, (CUdevice * device, int ordinal))                                      \
  X(cuDeviceGetName, CUresult, (char* name, int len, CUdevice dev))                               \
  X(cuDeviceGetAttribute, CUresult, (int* value, int attribute, CUdevice dev))                    \
  X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext * ctx, CUdevice dev))                          \
  X(cuCtxSetCurrent, CUresult, (CUcontext ctx))                                                   \
  X(cuCtxGetCurrent, CUresult, (CUcontext * ctx))                                                 \
  X(cuCtxSynchronize, CUresult, ())                                                               \
  X(cuModuleLoadDataEx, CUresult,                                                                 \
    (CUmodule * module, const void* image, unsigned n, int* options, void** values))              \
  X(cuModuleUnload, CUresult, (CUmodule module))                                                  \
  X(cuModuleGetFunction, CUresult, (CUfunction * fn, CUmodule module, const char* name))          \
  X(cuFuncSetAttribute, CUresult, (CUfunction fn, int attribute, int value))                      \
  X(cuFuncGetAttribute, CUresult, (int* value, int attribute, CUfunction fn))                     \
  X(cuLaunchKernel, CUresult,                                                                     \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,  \
     unsigned shared_bytes, CUstream stream, void** params, void** extra))                        \
  X(cuMemAllocAsync, CUresult, (CUdeviceptr * ptr, size_t bytes, CUstream stream))                \
  X(cuMemFreeAsync, CUresult, (CUdeviceptr ptr, CUstream stream))                                 \
  X(cuDeviceGetDefaultMemPool, CUresult, (CUmemoryPool * pool, CUdevice dev))                     \
  X(cuMemPoolSetAttribute, CUresult, (CUmemoryPool pool, int attribute, void* value))             \
  X(cuMemPoolTrimTo, CUresult, (CUmemoryPool pool, size_t keep))                                  \
  X(cuMemcpyAsync, CUresult, (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s))        \
  X(cuMemcpyHtoDAsync_v2, CUresult, (CUdeviceptr dst, const void* src, size_t bytes, CUstream s)) \
  X(cuMemcpyDtoHAsync_v2, CUresult, (void* dst, CUdeviceptr src, size_t bytes, CUstream s))       \
  X(cuMemsetD8Async, CUresult, (CUdeviceptr dst, unsigned char v, size_t n, CUstream s))          \
  X(cuMemsetD16Async, CUresult, (CUdeviceptr dst, unsigned short v, size_t n, CUstream s))        \
  X(cuMemsetD32Async, CUresult, (CUdeviceptr dst, unsigned v, size_t n, CUstream s))              \
  X(cuMemsetD2D32Async, CUresult,                                                                 \
    (CUdeviceptr dst, size_t pitch, unsigned v, size_t width, size_t height, CUstream s))         \
  X(cuStreamSynchronize, CUresult, (CUstream stream))                                             \
  X(cuStreamWaitEvent, CUresult, (CUstream stream, CUevent event, unsigned flags))                \
  X(cuStreamIsCapturing, CUresult, (CUstream stream, CUstreamCaptureStatus * status))             \
  X(cuEventCreate, CUresult, (CUevent * event, unsigned flags))                                   \
  X(cuEventRecord, CUresult, (CUevent event, CUstream stream))                                    \
  X(cuEventSynchronize, CUresult, (CUevent event))                                                \
  X(cuEventDestroy_v2, CUresult, (CUevent event))                                                 \
  X(cuGetErrorName, CUresult, (CUresult error, const char** name))                                \
  X(cuGetErrorString, CUresult, (CUresult error, const char** text))

#define KJIT_NVRTC_FUNCTIONS(X)                                               \
  X(nvrtcVersion, nvrtcResult, (int* major, int* minor))                      \
  X(nvrtcGetNumSupportedArchs, nvrtcResult, (int* count))                     \
  X(nvrtcGetSupportedArchs, nvrtcResult, (int* archs))                        \
  X(nvrtcCreateProgram, nvrtcResult,                                          \
    (nvrtcProgram * prog, const char* src, const char* name, int num_headers, \
     const char* const* headers, const char* const* include_names))           \
  X(nvrtcCompileProgram, nvrtcResult,                                         \
    (nvrtcProgram prog, int num_options, const char* const* options))         \
  X(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram prog, size_t * size))  \
  X(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram prog, char* log))          \
  X(nvrtcGetCUBINSize, nvrtcResult, (nvrtcProgram prog, size_t * size))       \
  X(nvrtcGetCUBIN, nvrtcResult, (nvrtcProgram prog, char* cubin))             \
  X(nvrtcGetPTXSize, nvrtcResult, (nvrtcProgram prog, size_t * size))         \
  X(nvrtcGetPTX, nvrtcResult, (nvrtcProgram prog, char* ptx))                 \
  X(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram * prog))

#define KJIT_DECLARE_POINTER(name, ret, args) ret(*name) args = nullptr;

/// The driver API, or why it is unavailable.
struct DriverApi {
  KJIT_CUDA_DRIVER_FUNCTIONS(KJIT_DECLARE_POINTER)
  bool loaded = false;
  bool absent = false;  // no file of the library is here: this machine has no CUDA
  std::string library;  // the file that was loaded
  std::string error;    // why loading failed
};

/// NVRTC, or why it is unavailable.
struct NvrtcApi {
  KJIT_NVRTC_FUNCTIONS(KJIT_DECLARE_POINTER)
  bool loaded = false;
  bool absent = false;
  std::string library;
  std::string error;
  int major = 0, minor = 0;
};

#undef KJIT_DECLARE_POINTER

/// Loaded once, on first use; never throws (check |loaded|).
const DriverApi& driver();
const NvrtcApi& nvrtc();

/// Empty, or why this process cannot use CUDA although the driver loaded: it was forked from a
/// process that had initialised CUDA, whose contexts a child inherits unusable.
const std::string& forked_reason();

/// What identifies the NVRTC that nvrtc() would load, without loading it: the library file's
/// resolved path, size and modification time (cache keys need it on every cache hit).
const std::string& nvrtc_file_identity();

/// "<call> failed: <CUDA error name>: <description>", for |result|, which is an error.
std::string error_text(CUresult result, const char* call);
/// Whether |result| says a kernel faulted, after which the CUDA context cannot be used again.
bool context_lost(CUresult result);
/// Throws kjit::LaunchError (OutOfMemory for CUDA_ERROR_OUT_OF_MEMORY) saying error_text unless
/// |result| is CUDA_SUCCESS.
void check(CUresult result, const char* call);

}  // namespace kjit::cuda

/// Calls a driver function through the loaded table and checks its result.
#define KJIT_CU(call, ...) ::kjit::cuda::check(::kjit::cuda::driver().call(__VA_ARGS__), #call)
