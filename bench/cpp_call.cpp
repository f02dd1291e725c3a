// Per-call time of a cached tiny kernel through kjit's C++ API on a GPU: the part of a Python
// call that is not Python. Same kernel, stream kind and loop as bench/launch_floor.cu; prints
// JSON (microseconds per call). Built and run by bench/gpu.py, which passes the body:
//   nvcc -O2 -std=c++20 -Iinclude bench/cpp_call.cpp build/libkjit.a -lcuda -ldl
//   ./cpp_call "$MYEXP_BODY" [loops]
#include <cuda.h>
#include <kjit/kjit.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;  // loops timed per figure, best kept
  cuInit(0);
  CUdevice dev;
  CUcontext ctx;
  cuDeviceGet(&dev, 0);
  cuDevicePrimaryCtxRetain(&ctx, dev);
  cuCtxSetCurrent(ctx);
  CUstream stream;
  if (cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return 1;
  kjit::Kernel k = kjit::metal_kernel("myexp", {"inp"}, {"out"}, argv[1]);
  const kjit::Device gpu = kjit::Device::cuda(0);
  // Memory from outside kjit, as a framework's tensors are (kjit's own arrays made on another
  // stream would have each launch record an event for their next user).
  CUdeviceptr x_memory, out_memory;
  if (cuMemAlloc(&x_memory, 64) != CUDA_SUCCESS || cuMemAlloc(&out_memory, 64) != CUDA_SUCCESS) {
    return 1;
  }
  cuMemsetD8(x_memory, 0, 64);
  const kjit::Array x =
      kjit::Array::borrow(reinterpret_cast<void*>(x_memory), {16}, {}, kjit::Dtype::Float32, gpu);
  const kjit::Array out =
      kjit::Array::borrow(reinterpret_cast<void*>(out_memory), {16}, {}, kjit::Dtype::Float32, gpu);
  const kjit::TemplateArgs targs = {{"T", kjit::Dtype::Float32}};
  kjit::LaunchOptions allocating;
  allocating.stream = reinterpret_cast<uintptr_t>(stream);
  kjit::LaunchOptions in_place = allocating;
  in_place.outputs = std::vector<kjit::Array>{out};
  // As in bench/launch_floor.cu: the steady rate, or the host's part of a short burst.
  auto time_loop = [&](const kjit::LaunchOptions& options, int calls, int reps, bool wait) {
    double best = 1e30;
    for (int rep = 0; rep < reps; ++rep) {
      cuStreamSynchronize(stream);
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) {
        k({x}, {{16}}, {kjit::Dtype::Float32}, {16, 1, 1}, {16, 1, 1}, targs, std::nullopt,
          false, options);
      }
      if (wait) cuStreamSynchronize(stream);
      auto t1 = std::chrono::steady_clock::now();
      const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
      best = us < best ? us : best;
    }
    return best;
  };
  time_loop(in_place, 20000, 1, true);  // warm-up: builds and loads the kernel
  const double in_place_us = time_loop(in_place, 20000, reps, true);
  const double allocating_us = time_loop(allocating, 20000, reps, true);
  const double host_us = time_loop(in_place, 256, 50, false);
  const double alloc_host_us = time_loop(allocating, 256, 50, false);
  std::printf(
      "{\"outputs_us\": %.3f, \"alloc_us\": %.3f, \"outputs_host_us\": %.3f, "
      "\"alloc_host_us\": %.3f}\n",
      in_place_us, allocating_us, host_us, alloc_host_us);
  return 0;
}
