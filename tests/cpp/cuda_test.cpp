// The CUDA backend from C++: offline builds for sm_90 wherever NVRTC loads, and kernels on a GPU
// where one works.
#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_api.h"
#include "backend/cuda/cuda_backend.h"

namespace kjit {
namespace {

const std::string kMetalExp = R"(
    uint elem = thread_position_in_grid.x;
    out[elem] = metal::exp(inp[elem]);
)";

const std::string kBlockSum = R"(
    __shared__ float partial[256];
    partial[threadIdx.x] = inp[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
      float s = 0;
      for (unsigned k = 0; k < threads_per_threadgroup.x; ++k) s += partial[k];
      out[blockIdx.x] = s;
    }
)";

TEST(CudaBackend, BuildsForSm90WithoutAGpu) {
  if (!cuda::nvrtc().loaded) GTEST_SKIP() << "NVRTC is " << cuda::nvrtc().error;
  // A comment no earlier run has seen keeps the disk cache (kept between test runs) out of it.
  const std::string fresh = "\n// run " + std::to_string(std::random_device{}()) + "\n";
  const uint64_t before = cache_info().compiles;
  metal_kernel("offline_exp", {"inp"}, {"out"}, kMetalExp + fresh)
      .build({{Dtype::Float16, 2}}, {Dtype::Float32}, {}, "sm_90");
  cuda_kernel("offline_sum", {"inp"}, {"out"}, kBlockSum + fresh)
      .build({{Dtype::Float32, 1}}, {Dtype::Float32}, {}, "sm_90");
  EXPECT_EQ(cache_info().compiles, before + 2);
  // Built again: found in the disk cache, not compiled.
  metal_kernel("offline_exp", {"inp"}, {"out"}, kMetalExp + fresh)
      .build({{Dtype::Float16, 2}}, {Dtype::Float32}, {}, "sm_90");
  EXPECT_EQ(cache_info().compiles, before + 2);
}

TEST(CudaBackend, CompileErrorsPointAtTheUsersLine) {
  if (!cuda::nvrtc().loaded) GTEST_SKIP() << "NVRTC is " << cuda::nvrtc().error;
  Kernel k = cuda_kernel("bad", {"inp"}, {"out"}, "out[0] = inp[0];\nundefined_name();");
  try {
    k.build({{Dtype::Float32, 1}}, {Dtype::Float32}, {}, "sm_90");
    FAIL() << "no CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("source line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("undefined_name"), std::string::npos) << e.what();
  }
}

class OnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  }
};

Array random_host(int64_t n, unsigned seed) {
  Array a = Array::empty({n}, Dtype::Float32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(a.data())[i] = dist(rng);
  return a;
}

TEST_F(OnGpu, ExpRunsWhereTheInputsLive) {
  const int64_t n = 100'003;
  Array host = random_host(n, 3);
  Array device = host.to(Device::cuda(0));
  EXPECT_EQ(device.device(), Device::cuda(0));
  Kernel k = metal_kernel("gpu_exp_cpp", {"inp"}, {"out"}, kMetalExp);
  std::vector<Array> out = k({device}, {{n}}, {Dtype::Float32}, {n, 1, 1}, {256, 1, 1});
  ASSERT_EQ(out[0].device(), Device::cuda(0));
  Array back = out[0].to(Device::cpu());
  const float* x = static_cast<const float*>(host.data());
  const float* y = static_cast<const float*>(back.data());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(y[i], std::exp(static_cast<double>(x[i])), 3e-7 * std::exp(x[i])) << i;
  }
}

TEST_F(OnGpu, SharedMemoryAndBarriersInPartialGroups) {
  const int64_t n = 1000;  // four groups of 256, the last one partial
  Array host = random_host(n, 4);
  Kernel k = cuda_kernel("block_sum_cpp", {"inp"}, {"out"}, kBlockSum);
  LaunchOptions options;
  options.device = Device::cuda(0);
  std::vector<Array> out =
      k({host}, {{4}}, {Dtype::Float32}, {n, 1, 1}, {256, 1, 1}, {}, std::nullopt, false, options);
  Array back = out[0].to(Device::cpu());
  const float* x = static_cast<const float*>(host.data());
  for (int g = 0; g < 4; ++g) {
    double s = 0;
    for (int64_t i = g * 256; i < std::min<int64_t>(n, (g + 1) * 256); ++i) s += x[i];
    EXPECT_NEAR(static_cast<const float*>(back.data())[g], s, 1e-3) << g;
  }
}

// A bound kernel's calls on arrays laid out as its last call's were launch that call's launch
// again: each on its own arrays, outputs given or made; another layout makes a new launch.
TEST_F(OnGpu, BoundCallsOnArraysLaidOutAlikeLaunchAgain) {
  const int64_t n = 777;
  Kernel k = metal_kernel("gpu_exp_bound_cpp", {"inp"}, {"out"}, kMetalExp);
  BoundKernel bound = k.bind({{n}}, {Dtype::Float32}, {n, 1, 1}, {128, 1, 1});
  auto check = [&](const Array& host, const Array& out) {
    Array back = out.to(Device::cpu());
    const float* x = static_cast<const float*>(host.data());
    const float* y = static_cast<const float*>(back.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(y[i], std::exp(static_cast<double>(x[i])), 3e-7 * std::exp(x[i])) << i;
    }
  };
  // Inputs of n elements, then n + 5 (the kernel reads the first n), then n again. Every
  // call's arrays are kept, so that no two calls share an address, and checked at the end.
  std::vector<std::array<Array, 3>> calls;  // the input on the host, the outputs
  for (int64_t length : {n, n + 5, n}) {
    for (unsigned call = 0; call < 3; ++call) {
      Array host = random_host(length, static_cast<unsigned>(length) + call);
      Array x = host.to(Device::cuda(0));
      const uint64_t before = cache_info().launches_again;
      Array made = bound({x})[0];
      LaunchOptions options;
      options.outputs = {Array::zeros({n}, Dtype::Float32, Device::cuda(0))};
      Array given = bound({x}, options)[0];
      EXPECT_EQ(given.data(), (*options.outputs)[0].data());
      EXPECT_EQ(cache_info().launches_again - before, call == 0 ? 0u : 2u) << length << call;
      calls.push_back({host, made, given});
    }
  }
  for (const auto& [host, made, given] : calls) {
    check(host, made);
    check(host, given);
  }
}

// A call that splits its arrays otherwise between inputs and outputs is not the recorded one,
// even when every array is laid out alike: it is refused as any such call.
TEST_F(OnGpu, ABoundCallWithTooFewInputsIsRefusedAfterOnesThatLaunchedAgain) {
  const int64_t n = 64;
  Kernel add = metal_kernel("gpu_add_bound_cpp", {"a", "b"}, {"out"},
                            "uint i = thread_position_in_grid.x; out[i] = a[i] + b[i];");
  BoundKernel bound = add.bind({{n}}, {Dtype::Float32}, {n, 1, 1}, {64, 1, 1});
  Array a = random_host(n, 7).to(Device::cuda(0)), b = random_host(n, 8).to(Device::cuda(0));
  LaunchOptions options;
  options.outputs = {Array::zeros({n}, Dtype::Float32, Device::cuda(0))};
  for (int call = 0; call < 2; ++call) bound({a, b}, options);
  options.outputs = {b, Array::zeros({n}, Dtype::Float32, Device::cuda(0))};
  EXPECT_THROW(bound({a}, options), ValueError);
}

// Each device its own context, memory and kernel module: the same kernel on both, in turns.
TEST_F(OnGpu, TwoDevicesEachRunTheirOwnArrays) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "fewer than two CUDA devices";
  const int64_t n = 5000;
  Array host = random_host(n, 5);
  Kernel k = metal_kernel("gpu_exp_two_devices", {"inp"}, {"out"}, kMetalExp);
  for (int round = 0; round < 3; ++round) {
    for (int d : {1, 0}) {
      Array x = host.to(Device::cuda(d));
      std::vector<Array> out = k({x}, {{n}}, {Dtype::Float32}, {n, 1, 1}, {256, 1, 1});
      ASSERT_EQ(out[0].device(), Device::cuda(d));
      Array back = out[0].to(Device::cpu());
      const float* in = static_cast<const float*>(host.data());
      const float* y = static_cast<const float*>(back.data());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(y[i], std::exp(static_cast<double>(in[i])), 3e-7 * std::exp(in[i])) << i;
      }
    }
  }
  // Arrays of both devices in one call are refused.
  Array a = host.to(Device::cuda(0)), b = host.to(Device::cuda(1));
  Kernel add = metal_kernel("gpu_add_two_devices", {"a", "b"}, {"out"},
                            "uint i = thread_position_in_grid.x; out[i] = a[i] + b[i];");
  EXPECT_THROW(add({a, b}, {{n}}, {Dtype::Float32}, {n, 1, 1}, {256, 1, 1}), ValueError);
}

}  // namespace
}  // namespace kjit
