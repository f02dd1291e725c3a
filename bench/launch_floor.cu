// The floor for launching a tiny kernel: a bare cuLaunchKernel loop, with and without a
// stream-ordered allocation and release per launch. Prints JSON (microseconds per launch).
// Build: nvcc -O2 -o launch_floor bench/launch_floor.cu -lcuda; run: ./launch_floor [loops]
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void exp16(const float* in, float* out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = expf(in[i]);
}

#define CHECK(x)                                                       \
  do {                                                                 \
    CUresult r = (x);                                                  \
    if (r != CUDA_SUCCESS) {                                           \
      std::fprintf(stderr, "%s failed: %d\n", #x, static_cast<int>(r)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

int main(int argc, char** argv) {
  // Loops timed per figure (the best is kept): argv[1], default 5.
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  cudaFree(nullptr);  // creates the primary context
  CUfunction f;
  if (cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&f),
                          reinterpret_cast<const void*>(exp16)) != cudaSuccess) {
    std::fprintf(stderr, "cudaGetFuncBySymbol failed\n");
    return 1;
  }
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr in, out;
  CHECK(cuMemAlloc(&in, 64));
  CHECK(cuMemAlloc(&out, 64));
  unsigned n = 16;
  // Per launch, best of several loops: |launches| launches and the wait for them (the steady
  // rate), or only the host's part: a short burst that fits the launch queue, without the wait.
  auto time_loop = [&](bool allocate, int launches, int reps, bool wait) {
    double best = 1e30;
    for (int rep = 0; rep < reps; ++rep) {
      CHECK(cuStreamSynchronize(stream));
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < launches; ++i) {
        CUdeviceptr dst = out;
        if (allocate) CHECK(cuMemAllocAsync(&dst, 64, stream));
        void* args[] = {&in, &dst, &n};
        CHECK(cuLaunchKernel(f, 1, 1, 1, 16, 1, 1, 0, stream, args, nullptr));
        if (allocate) CHECK(cuMemFreeAsync(dst, stream));
      }
      if (wait) CHECK(cuStreamSynchronize(stream));
      auto t1 = std::chrono::steady_clock::now();
      double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / launches;
      best = us < best ? us : best;
    }
    return best;
  };
  time_loop(false, 20000, 1, true);  // warm-up
  double bare = time_loop(false, 20000, reps, true);
  double alloc = time_loop(true, 20000, reps, true);
  double bare_host = time_loop(false, 256, 50, false);
  std::printf("{\"floor_us\": %.3f, \"floor_alloc_us\": %.3f, \"floor_host_us\": %.3f}\n", bare,
              alloc, bare_host);
  return 0;
}
