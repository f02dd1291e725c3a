// End-to-end tests of the C++ kernel API on the CPU backend (each distinct kernel compiles once
// per cache directory).
#include <gtest/gtest.h>
#include <kjit/kjit.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kjit {
namespace {

Array random_floats(const Shape& shape, unsigned seed, float lo = -4.0f, float hi = 4.0f) {
  Array a = Array::empty(shape, Dtype::Float32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  auto* p = static_cast<float*>(a.data());
  for (int64_t i = 0; i < a.size(); ++i) p[i] = dist(rng);
  return a;
}

const float* floats(const Array& a) { return static_cast<const float*>(a.data()); }

// Largest relative error of exp over |in| (given in logical row-major order) against <cmath>
// in double precision.
double worst_exp_error(const std::vector<float>& in, const Array& out) {
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    double ref = std::exp(static_cast<double>(in[i]));
    worst = std::max(worst, std::fabs(floats(out)[i] - ref) / ref);
  }
  return worst;
}

std::vector<float> values(const Array& a) {
  return std::vector<float>(floats(a), floats(a) + a.size());
}

const char* kMetalExp = R"(
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
)";

TEST(Kernel, MetalExp) {
  Kernel k = metal_kernel("myexp", {"inp"}, {"out"}, kMetalExp);
  EXPECT_EQ(k.name(), "myexp");
  EXPECT_EQ(k.input_names(), std::vector<std::string>{"inp"});
  EXPECT_EQ(k.output_names(), std::vector<std::string>{"out"});
  EXPECT_STREQ(k.api(), "metal_kernel");
  Array a = random_floats({7, 143}, 1);  // the last group is partial
  auto out =
      k({a}, {{7, 143}}, {Dtype::Float32}, {a.size(), 1, 1}, {256, 1, 1}, {{"T", Dtype::Float32}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), Dtype::Float32);
  EXPECT_EQ(out[0].ndim(), 2);
  EXPECT_EQ(out[0].shape(0), 7);
  EXPECT_EQ(out[0].shape(1), 143);
  EXPECT_TRUE(out[0].is_row_contiguous());
  EXPECT_LT(worst_exp_error(values(a), out[0]), 1e-6);
}

TEST(Kernel, MetalExpOnFloat16) {
  // The example of the design: float16 in and out, float32 arithmetic.
  Kernel k = metal_kernel("myexp", {"inp"}, {"out"}, kMetalExp);
  const int n = 4 * 16;
  Array a = Array::empty({4, 16}, Dtype::Float16);
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) {
    // Values exactly representable in float16.
    in[i] = static_cast<float>(i - 32) / 8.0f;
    static_cast<_Float16*>(a.data())[i] = static_cast<_Float16>(in[i]);
  }
  auto out = k({a}, {{4, 16}}, {Dtype::Float16}, {n, 1, 1}, {256, 1, 1}, {{"T", Dtype::Float32}});
  ASSERT_EQ(out[0].dtype(), Dtype::Float16);
  const auto* r = static_cast<const _Float16*>(out[0].data());
  for (int i = 0; i < n; ++i) {
    // exp in float, rounded once to float16: within half a float16 ulp of the true value,
    // plus float's own error.
    double ref = std::exp(static_cast<double>(in[i]));
    EXPECT_NEAR(static_cast<double>(r[i]), ref, ref * (0x1p-11 + 0x1p-20)) << in[i];
  }
}

TEST(Kernel, MetalHalfLiterals) {
  // MSL's h / H suffix makes a half literal.
  Kernel k = metal_kernel("half_literals", {"inp"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    half x = inp[i];
    out[i] = x * 0.5h + 1.0H;
)");
  Array a = Array::empty({4}, Dtype::Float16);
  for (int i = 0; i < 4; ++i) static_cast<_Float16*>(a.data())[i] = static_cast<_Float16>(i);
  auto out = k({a}, {{4}}, {Dtype::Float16}, {4, 1, 1}, {4, 1, 1});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(static_cast<float>(static_cast<const _Float16*>(out[0].data())[i]), i * 0.5f + 1)
        << i;
  }
}

TEST(Kernel, CudaExp) {
  Kernel k = cuda_kernel("cuexp", {"inp"}, {"out"}, R"(
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < unsigned(inp_shape[0])) out[i] = expf(inp[i]);
)");
  EXPECT_STREQ(k.api(), "cuda_kernel");
  Array a = random_floats({1000}, 2);
  // More threads than elements: the body guards with inp_shape.
  auto out = k({a}, {{1000}}, {Dtype::Float32}, {1024, 1, 1}, {128, 1, 1});
  EXPECT_LT(worst_exp_error(values(a), out[0]), 1e-6);
}

// Block sums of 256 threads through group memory, barriers and warp operations: cooperative
// mode on the CPU, in both dialects.
const char* kMetalBlockSum = R"(
    threadgroup float warp_sums[8];
    const uint i = thread_position_in_grid.x;
    const float s = simd_sum(inp[i]);
    if (thread_index_in_simdgroup == 0) warp_sums[simdgroup_index_in_threadgroup] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (thread_index_in_threadgroup != 0) return;
    float total = 0;
    for (uint w = 0; w < simdgroups_per_threadgroup; ++w) total += warp_sums[w];
    out[threadgroup_position_in_grid.x] = total;
)";

const char* kCudaBlockSum = R"(
    __shared__ float warp_sums[8];
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = inp[i];
    for (int d = 16; d > 0; d /= 2) s += __shfl_down_sync(0xffffffffu, s, d);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x != 0) return;
    float total = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += warp_sums[w];
    out[blockIdx.x] = total;
)";

TEST(Kernel, CooperativeBlockSumsOnTheCpu) {
  const int64_t n = 4096, group = 256;
  Array a = random_floats({n}, 7);
  std::vector<double> expected(n / group, 0.0);
  for (int64_t i = 0; i < n; ++i) expected[i / group] += floats(a)[i];
  for (Kernel k : {metal_kernel("block_sum", {"inp"}, {"out"}, kMetalBlockSum),
                   cuda_kernel("block_sum", {"inp"}, {"out"}, kCudaBlockSum)}) {
    auto out = k({a}, {{n / group}}, {Dtype::Float32}, {n, 1, 1}, {group, 1, 1});
    ASSERT_EQ(out.size(), 1u);
    for (int64_t b = 0; b < n / group; ++b) {
      EXPECT_NEAR(floats(out[0])[b], expected[b], 1e-4) << k.api() << " block " << b;
    }
  }
}

// Lanes that a continue sends to the next iteration meet only the lanes of that iteration: a
// ballot in iteration k sees the lanes whose lane % 4 <= k.
TEST(Kernel, WarpOperationInALoopMeetsOneIterationOnTheCpu) {
  Kernel k = cuda_kernel("ballot_loop", {"inp"}, {"out"}, R"(
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0, calls = 0;
    for (unsigned k = 0; k < 4; ++k) {
      if (k < threadIdx.x % 4) continue;
      acc += ++calls * __popc(__ballot_sync(__activemask(), inp[i] > 0));
    }
    out[i] = acc;
  )");
  const int64_t n = 64;
  Array a = random_floats({n}, 11);
  auto out = k({a}, {{n}}, {Dtype::UInt32}, {n, 1, 1}, {32, 1, 1});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t warp = i / 32 * 32;
    unsigned expected = 0, calls = 0;
    for (int64_t iteration = 0; iteration < 4; ++iteration) {
      if (iteration < i % 4) continue;
      unsigned positive = 0;
      for (int64_t l = warp; l < warp + 32; ++l) positive += l % 4 <= iteration && floats(a)[l] > 0;
      expected += ++calls * positive;
    }
    EXPECT_EQ(static_cast<const unsigned*>(out[0].data())[i], expected) << "thread " << i;
  }
}

// CUDA C++ as kernels write it runs on the CPU: vector types, bit casts, warpSize; a failed
// assert stops the kernel with a LaunchError, and the next launch runs.
TEST(Kernel, CudaVectorTypesIntrinsicsAndAssertOnTheCpu) {
  Kernel k = cuda_kernel("vector_bits", {"inp"}, {"out"}, R"(
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 v = reinterpret_cast<const float4*>(inp)[i];
    assert(v.x == v.x);
    out[i] = __float_as_uint(v.x + v.y + v.z + v.w) ^ unsigned(warpSize);
  )");
  Array a = random_floats({64}, 5);
  auto out = k({a}, {{16}}, {Dtype::UInt32}, {16, 1, 1}, {16, 1, 1});
  for (int i = 0; i < 16; ++i) {
    const float* q = floats(a) + 4 * i;
    const float sum = q[0] + q[1] + q[2] + q[3];
    uint32_t bits = 0;
    std::memcpy(&bits, &sum, sizeof bits);
    EXPECT_EQ(static_cast<const uint32_t*>(out[0].data())[i], bits ^ 32u) << "thread " << i;
  }
  static_cast<float*>(a.data())[36] = std::nanf("");
  EXPECT_THROW(k({a}, {{16}}, {Dtype::UInt32}, {16, 1, 1}, {16, 1, 1}), LaunchError);
  static_cast<float*>(a.data())[36] = 1.0f;
  EXPECT_NO_THROW(k({a}, {{16}}, {Dtype::UInt32}, {16, 1, 1}, {16, 1, 1}));
}

// An access to memory the process does not have stops the kernel with a LaunchError (a GPU
// reports an illegal address), on the calling thread and on the worker pool alike.
TEST(Kernel, BadMemoryAccessOnTheCpuIsALaunchError) {
  Kernel k = cuda_kernel("bad_access", {"inp", "which"}, {"out"}, R"(
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == which[0]) reinterpret_cast<volatile float*>(64)[i] = 1.0f;
    out[i] = inp[i] + 1.0f;
  )");
  for (int64_t n : {int64_t{16}, int64_t{1} << 15}) {
    Array a = random_floats({n}, 6);
    Array which = Array::empty({1}, Dtype::UInt32);
    *static_cast<uint32_t*>(which.data()) = static_cast<uint32_t>(n / 2);
    try {
      k({a, which}, {{n}}, {Dtype::Float32}, {n, 1, 1}, {16, 1, 1});
      ADD_FAILURE() << "no error for " << n << " threads";
    } catch (const LaunchError& e) {
      EXPECT_NE(std::string(e.what()).find("accessed memory the process does not have"),
                std::string::npos)
          << e.what();
    }
    *static_cast<uint32_t*>(which.data()) = static_cast<uint32_t>(n);
    auto out = k({a, which}, {{n}}, {Dtype::Float32}, {n, 1, 1}, {16, 1, 1});
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(floats(out[0])[i], floats(a)[i] + 1.0f);
  }
}

// SIGINT stops a CPU kernel that would never end, where the program handles SIGINT (as Python
// does): the call throws Interrupted, and the program's handler still runs, as often as SIGINT
// comes. Here the handler blocks every signal while it runs: the kernel threads get their masks
// back. In a process of its own, which sets its handler before its first kernel.
std::atomic<int> interrupts_seen{0};

TEST(KernelDeathTest, SigintStopsACpuKernelWhereTheProgramHandlesIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto run = [] {
    // A kernel SIGINT could not stop ends the process, and the test, here. (A thread of its own:
    // a thread left with every signal blocked would never take alarm()'s.)
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(60));
      std::_Exit(2);
    }).detach();
    struct sigaction handler = {};
    handler.sa_handler = [](int) { interrupts_seen.fetch_add(1); };
    sigfillset(&handler.sa_mask);
    sigaction(SIGINT, &handler, nullptr);
    // Mostly inside malloc, where a thread stopped at once would leave a lock held, and the
    // next call's allocations wait for ever.
    Kernel forever = cuda_kernel("forever", {"inp"}, {"out"}, R"(
      const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
      volatile float* o = out;
      for (;;) {
        volatile char* block = new char[1 << 16];  // beyond malloc's per-thread cache
        block[0] = 1;
        o[i] = o[i] + inp[i] * block[0];
        delete[] block;
      }
    )");
    Kernel twice = cuda_kernel("twice", {"inp"}, {"out"}, R"(
      const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
      out[i] = 2.0f * inp[i];
    )");
    forever.build({{Dtype::Float32, 1}}, {Dtype::Float32});
    int failures = 0;
    // The calling thread, then the pool, then both again.
    for (int64_t n : {int64_t{1}, int64_t{1} << 15, int64_t{1}, int64_t{1} << 15}) {
      const Array a = random_floats({n}, 8);
      const Array out = Array::zeros({n}, Dtype::Float32);
      LaunchOptions options;
      options.outputs = {out};
      const int before = interrupts_seen.load();
      std::thread user([&] {  // once the kernel runs (it has written its output)
        while (static_cast<volatile float*>(out.data())[0] == 0.0f) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        kill(getpid(), SIGINT);
      });
      try {
        forever({a}, {{n}}, {Dtype::Float32}, {n, 1, 1}, {64, 1, 1}, {}, std::nullopt, false,
                options);
        ++failures;
      } catch (const Interrupted& e) {
        failures += std::string(e.what()).find("kernel 'forever': SIGINT") == std::string::npos;
      }
      user.join();
      failures += interrupts_seen.load() != before + 1;
      auto doubled = twice({a}, {{n}}, {Dtype::Float32}, {n, 1, 1}, {64, 1, 1});
      for (int64_t i = 0; i < n; ++i) failures += floats(doubled[0])[i] != 2.0f * floats(a)[i];
    }
    std::exit(failures == 0 ? 0 : 1);
  };
  EXPECT_EXIT(run(), testing::ExitedWithCode(0), "");
}

TEST(Kernel, NonContiguousInputIsCopiedFirst) {
  Kernel k = metal_kernel("myexp", {"inp"}, {"out"}, kMetalExp);
  Array base = random_floats({4, 6}, 3);
  // The transpose, a 6 x 4 view.
  Array view =
      Array::borrow(base.data(), {6, 4}, {1, 6}, Dtype::Float32, Device::cpu(), base.owner());
  ASSERT_FALSE(view.is_row_contiguous());
  auto out = k({view}, {{6, 4}}, {Dtype::Float32}, {24, 1, 1}, {32, 1, 1}, {{"T", Dtype::Float32}});
  std::vector<float> logical;
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 4; ++j) logical.push_back(floats(base)[j * 6 + i]);
  }
  EXPECT_LT(worst_exp_error(logical, out[0]), 1e-6);
}

TEST(Kernel, StridedInputWhenNotEnsuringContiguity) {
  Kernel k = metal_kernel("gather", {"inp"}, {"out"}, R"(
    uint elem = thread_position_in_grid.x;
    out[elem] = inp[elem_to_loc(elem, inp_shape, inp_strides, inp_ndim)];
)",
                          "", /*ensure_row_contiguous=*/false);
  Array base = random_floats({3, 4}, 4);
  const float* b = floats(base);
  // base[::-1, ::2]: negative and non-unit strides.
  Array rev = Array::borrow(static_cast<float*>(base.data()) + 8, {3, 2}, {-4, 2}, Dtype::Float32,
                            Device::cpu(), base.owner());
  auto out = k({rev}, {{3, 2}}, {Dtype::Float32}, {6, 1, 1}, {4, 1, 1});
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(floats(out[0])[i * 2 + j], b[(2 - i) * 4 + 2 * j]) << i << "," << j;
    }
  }
  // A broadcast view (stride 0).
  Array row =
      Array::borrow(base.data(), {5, 4}, {0, 1}, Dtype::Float32, Device::cpu(), base.owner());
  out = k({row}, {{5, 4}}, {Dtype::Float32}, {20, 1, 1}, {8, 1, 1});
  for (int i = 0; i < 20; ++i) EXPECT_EQ(floats(out[0])[i], b[i % 4]) << i;
}

TEST(Kernel, MetalScalarInputAndTemplateArgs) {
  Kernel k = metal_kernel("affine", {"inp", "s"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    T v = inp[i] * s + N;
    out[i] = neg ? -v : v;
)");
  // Values whose products and sums are exact, so that any evaluation order gives one answer.
  Array a = Array::empty({100}, Dtype::Float32);
  for (int i = 0; i < 100; ++i) static_cast<float*>(a.data())[i] = (i - 50) * 0.25f;
  Array s = Array::scalar(2.5, Dtype::Float32);
  EXPECT_EQ(s.ndim(), 0);
  for (bool neg : {false, true}) {
    auto out = k({a, s}, {{100}}, {Dtype::Float32}, {100, 1, 1}, {32, 1, 1},
                 {{"T", Dtype::Float32}, {"N", 3}, {"neg", neg}});
    for (int i = 0; i < 100; ++i) {
      float v = (i - 50) * 0.25f * 2.5f + 3;
      EXPECT_EQ(floats(out[0])[i], neg ? -v : v) << i;
    }
  }
}

TEST(Kernel, BoundCallsFixTheSettingsAndTakeEachCallsArrays) {
  Kernel k = metal_kernel("bound_affine", {"inp", "s"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    out[i] = T(inp[i]) * T(s) + N;
)");
  const BoundKernel bound = k.bind({{100}}, {Dtype::Float32}, {100, 1, 1}, {32, 1, 1},
                                   {{"T", Dtype::Float32}, {"N", 3}}, /*init_value=*/-1.0);
  EXPECT_EQ(&bound.kernel().name(), &k.name());  // the same kernel, not a copy of its spec
  for (unsigned seed : {1u, 2u}) {
    Array a = random_floats({100}, seed);
    const double s = seed * 0.75;
    auto out = bound({a, Array::scalar(s, Dtype::Float32)});
    ASSERT_EQ(out.size(), 1u);
    for (int i = 0; i < 100; ++i) {
      EXPECT_NEAR(floats(out[0])[i], floats(a)[i] * s + 3, 1e-5) << i;
    }
  }
  // Inputs of another dtype, and given outputs.
  Array ints = Array::empty({100}, Dtype::Int32);
  for (int i = 0; i < 100; ++i) static_cast<int32_t*>(ints.data())[i] = i - 50;
  Array dst = Array::empty({100}, Dtype::Float32);
  dst.fill(std::nan(""));
  LaunchOptions options;
  options.outputs = {dst};
  auto out = bound({ints, Array::scalar(2.0, Dtype::Float32)}, options);
  EXPECT_EQ(out[0].data(), dst.data());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(floats(dst)[i], (i - 50) * 2.0f + 3) << i;
  // A bound call checks its arrays; bind checks the settings.
  EXPECT_THROW(bound({ints}), ValueError);
  options.outputs = {Array::empty({99}, Dtype::Float32)};
  EXPECT_THROW(bound({ints, Array::scalar(2.0, Dtype::Float32)}, options), ValueError);
  EXPECT_THROW(k.bind({{100}}, {Dtype::Float32}, {100, 1, 1}, {0, 1, 1}), ValueError);
  EXPECT_THROW(k.bind({{100}, {100}}, {Dtype::Float32}, {100, 1, 1}, {32, 1, 1}), ValueError);
  EXPECT_THROW(k.bind({{100}}, {Dtype::Float32}, {100, 1, 1}, {32, 1, 1}, {{"inp", 1}}),
               ValueError);
}

TEST(Kernel, BoundCallsCheckEachCallsArraysAfterOnesThatPassed) {
  Kernel k = metal_kernel("bound_copy", {"inp"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    out[i] = float(inp[i]) + 0.5f;
)");
  const BoundKernel bound = k.bind({{64}}, {Dtype::Float32}, {64, 1, 1}, {32, 1, 1});
  const Array a = random_floats({64}, 3);
  Array dst = Array::empty({64}, Dtype::Float32);
  LaunchOptions options;
  options.outputs = {dst};
  for (int round = 0; round < 2; ++round) {
    dst.fill(std::nan(""));
    bound({a}, options);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(floats(dst)[i], floats(a)[i] + 0.5f) << i;
    // Outputs laid out otherwise, after a call that passed: refused as in a first call.
    Array wide = Array::empty({128}, Dtype::Float32);
    options.outputs = {
        Array::borrow(wide.data(), {64}, {2}, Dtype::Float32, Device::cpu(), wide.owner())};
    EXPECT_THROW(bound({a}, options), ValueError);  // not row-contiguous
    options.outputs = {dst.as_read_only()};
    EXPECT_THROW(bound({a}, options), ValueError);
    options.outputs = {Array::empty({64}, Dtype::Float64)};
    EXPECT_THROW(bound({a}, options), ValueError);
    options.outputs = {Array()};
    EXPECT_THROW(bound({a}, options), ValueError);  // an empty Array
    EXPECT_THROW(bound({Array()}), ValueError);
    options.outputs = {dst};
    // An input laid out otherwise runs as a first call would: copied to row-contiguous.
    Array twice = random_floats({128}, 4);
    const Array strided =
        Array::borrow(twice.data(), {64}, {2}, Dtype::Float32, Device::cpu(), twice.owner());
    auto out = bound({strided});
    for (int i = 0; i < 64; ++i) EXPECT_EQ(floats(out[0])[i], floats(twice)[2 * i] + 0.5f) << i;
  }
}

TEST(Kernel, SafeMathRoundsEveryOperation) {
  // In the default (safe, IEEE) math mode a * b - p is evaluated as two rounded operations; with
  // p the rounded product, the result is exactly zero. A fused multiply-add would instead give
  // the rounding error of the product.
  Kernel k = metal_kernel("product_error", {"a", "b", "p"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    out[i] = a[i] * b[i] - p[i];
)");
  const int n = 256;
  Array a = random_floats({n}, 10, 1.0f, 2.0f);
  Array b = random_floats({n}, 11, 1.0f, 2.0f);
  Array p = Array::empty({n}, Dtype::Float32);
  for (int i = 0; i < n; ++i) {
    static_cast<float*>(p.data())[i] = floats(a)[i] * floats(b)[i];
  }
  auto out = k({a, b, p}, {{n}}, {Dtype::Float32}, {n, 1, 1}, {64, 1, 1});
  int nonzero = 0;
  for (int i = 0; i < n; ++i) nonzero += floats(out[0])[i] != 0.0f;
  EXPECT_EQ(nonzero, 0) << "of " << n << " products were fused with the subtraction";
}

TEST(Kernel, CudaScalarInputReadsLikeAnArray) {
  Kernel k = cuda_kernel("scale", {"inp", "s"}, {"out"}, R"(
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = static_cast<T>(inp[i] * s[0] + *s * F);
)");
  Array a = Array::empty({64}, Dtype::Int32);
  for (int i = 0; i < 64; ++i) static_cast<int32_t*>(a.data())[i] = i - 20;
  auto out = k({a, Array::scalar(3, Dtype::Int32)}, {{64}}, {Dtype::Int64}, {64, 1, 1}, {16, 1, 1},
               {{"T", Dtype::Int64}, {"F", 10}});
  EXPECT_EQ(out[0].dtype(), Dtype::Int64);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(static_cast<const int64_t*>(out[0].data())[i], (i - 20) * 3 + 30) << i;
  }
}

const char* kEvens = R"(
    uint i = thread_position_in_grid.x;
    out[2 * i] = inp[i];
)";

TEST(Kernel, InitValueFillsWhatTheKernelLeaves) {
  Kernel k = metal_kernel("evens", {"inp"}, {"out"}, kEvens);
  Array a = random_floats({50}, 6);
  auto out = k({a}, {{100}}, {Dtype::Float32}, {50, 1, 1}, {32, 1, 1}, {}, -1.5);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(floats(out[0])[i], i % 2 ? -1.5f : floats(a)[i / 2]) << i;
  }
}

TEST(Kernel, PreallocatedOutputsAndCapturedPrint) {
  Kernel k = metal_kernel("evens", {"inp"}, {"out"}, kEvens);
  Array a = random_floats({8}, 7);
  Array dst = Array::empty({16}, Dtype::Float32);
  dst.fill(7.0);
  std::string printed;
  int prints = 0;
  LaunchOptions options;
  options.outputs = {dst};
  options.print = [&](std::string_view text) {
    printed += text;
    ++prints;
  };
  auto out = k({a}, {{16}}, {Dtype::Float32}, {8, 1, 1}, {8, 1, 1}, {}, std::nullopt,
               /*verbose=*/true, options);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data(), dst.data());  // written in place
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(floats(dst)[i], i % 2 ? 7.0f : floats(a)[i / 2]) << i;
  }
  EXPECT_EQ(prints, 1);
  EXPECT_NE(printed.find("evens"), std::string::npos) << printed;
  EXPECT_NE(printed.find("out[2 * i] = inp[i];"), std::string::npos) << printed;
  EXPECT_NE(printed.find("#line 1 \"<source>\""), std::string::npos) << printed;

  // Not verbose: nothing printed.
  printed.clear();
  k({a}, {{16}}, {Dtype::Float32}, {8, 1, 1}, {8, 1, 1}, {}, std::nullopt, false, options);
  EXPECT_EQ(printed, "");

  // Preallocated outputs must match what output_shapes / output_dtypes say.
  LaunchOptions wrong;
  wrong.outputs = {Array::empty({15}, Dtype::Float32)};
  EXPECT_THROW(
      k({a}, {{16}}, {Dtype::Float32}, {8, 1, 1}, {8, 1, 1}, {}, std::nullopt, false, wrong),
      ValueError);
  wrong.outputs = {Array::empty({16}, Dtype::Int32)};
  EXPECT_THROW(
      k({a}, {{16}}, {Dtype::Float32}, {8, 1, 1}, {8, 1, 1}, {}, std::nullopt, false, wrong),
      ValueError);
}

TEST(Kernel, EmptyGridLaunchesNothingButAppliesInitValue) {
  Kernel k = metal_kernel("evens", {"inp"}, {"out"}, kEvens);
  Array a = random_floats({8}, 8);
  auto out = k({a}, {{4, 2}}, {Dtype::Float32}, {0, 1, 1}, {8, 1, 1}, {}, 2.0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(floats(out[0])[i], 2.0f);
}

TEST(Kernel, AnOutputTooLargeToAllocateIsOutOfMemoryNamingIt) {
  Kernel k = metal_kernel("evens", {"inp"}, {"out"}, kEvens);
  try {
    k({random_floats({8}, 8)}, {{int64_t{1} << 52}}, {Dtype::Float32}, {1, 1, 1}, {1, 1, 1});
    ADD_FAILURE() << "2^54 bytes were allocated";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("output_shapes[0] ('out'): 18014398509481984 bytes could "
                                         "not be allocated on the CPU"),
              std::string::npos)
        << e.what();
  }
}

TEST(Kernel, InitValueOutOfAnOutputsRangeIsAnError) {
  Kernel k = metal_kernel("evens", {"inp"}, {"out"}, kEvens);
  Array a = random_floats({8}, 8);
  auto fill = [&](Dtype dtype, double value) {
    return k({a}, {{8}}, {dtype}, {0, 1, 1}, {8, 1, 1}, {}, value);
  };
  for (auto [dtype, value] : {std::pair{Dtype::Int8, 128.0},
                              {Dtype::Int8, -129.0},
                              {Dtype::UInt8, -1.0},
                              {Dtype::UInt16, 65536.5},
                              {Dtype::Int32, std::nan("")},
                              {Dtype::Int32, -INFINITY},
                              {Dtype::UInt64, 0x1p64},
                              {Dtype::Int64, 0x1p63}}) {
    try {
      fill(dtype, value);
      ADD_FAILURE() << "init_value " << value << " was taken for " << dtype_name(dtype);
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("init_value (for outputs[0] ('out')): "),
                std::string::npos)
          << e.what();
      EXPECT_NE(
          std::string(e.what()).find("is out of the range of " + std::string(dtype_name(dtype))),
          std::string::npos)
          << e.what();
    }
  }
  // Up to each type's extremes, values are truncated toward zero, as NumPy's astype does.
  EXPECT_EQ(static_cast<const int8_t*>(fill(Dtype::Int8, -128.9)[0].data())[7], -128);
  EXPECT_EQ(static_cast<const uint8_t*>(fill(Dtype::UInt8, -0.5)[0].data())[7], 0);
  EXPECT_EQ(static_cast<const int64_t*>(fill(Dtype::Int64, -0x1p63)[0].data())[7],
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(static_cast<const uint64_t*>(fill(Dtype::UInt64, 0x1p63)[0].data())[7],
            uint64_t{1} << 63);
}

TEST(Kernel, BuildWithoutLaunching) {
  Kernel k = metal_kernel("built", {"inp"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] + T(1);
)");
  CacheInfo before = cache_info();
  k.build({{Dtype::Float32, 1}}, {Dtype::Float32}, {{"T", Dtype::Float32}});
  CacheInfo built = cache_info();
  EXPECT_EQ(built.memory_entries, before.memory_entries + 1);
  EXPECT_EQ(built.compiles + built.disk_hits, before.compiles + before.disk_hits + 1);
  // Building again and launching with that signature reuse the build.
  k.build({{Dtype::Float32, 1}}, {Dtype::Float32}, {{"T", Dtype::Float32}});
  Array a = random_floats({10}, 9);
  auto out = k({a}, {{10}}, {Dtype::Float32}, {10, 1, 1}, {10, 1, 1}, {{"T", Dtype::Float32}});
  CacheInfo after = cache_info();
  EXPECT_EQ(after.memory_entries, built.memory_entries);
  EXPECT_EQ(after.compiles, built.compiles);
  EXPECT_EQ(after.disk_hits, built.disk_hits);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(floats(out[0])[i], floats(a)[i] + 1.0f);

  EXPECT_THROW(k.build({}, {Dtype::Float32}), ValueError);
  EXPECT_THROW(k.build({{Dtype::Float32, 1}}, {}), ValueError);
  EXPECT_THROW(k.build({{Dtype::Float32, 11}}, {Dtype::Float32}), ValueError);
  EXPECT_THROW(k.build({{Dtype::Float32, 1}}, {Dtype::Float32}, {{"T", Dtype::Float32}}, "tpu"),
               ValueError);
  k.build({{Dtype::Float32, 1}}, {Dtype::Float32}, {{"T", Dtype::Float32}}, "cpu");
}

TEST(Kernel, ArgumentErrors) {
  const uint64_t entries = cache_info().memory_entries;
  Kernel k = metal_kernel("never_built", {"a", "b"}, {"out"}, "out[0] = a[0] + b[0];");
  Array a = Array::zeros({4}, Dtype::Float32);
  auto expect_value_error = [&](auto&& f, const std::string& mention) {
    try {
      f();
      ADD_FAILURE() << "no exception; expected one mentioning " << mention;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
    }
  };
  expect_value_error([&] { k({a}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1}); }, "inputs");
  expect_value_error(
      [&] {
        k({a, a, a}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1});
      },
      "inputs");
  expect_value_error(
      [&] {
        k({a, a}, {}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1});
      },
      "output_shapes");
  expect_value_error([&] { k({a, a}, {{4}}, {}, {4, 1, 1}, {4, 1, 1}); }, "output_dtypes");
  expect_value_error(
      [&] {
        k({a, a}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {2048, 1, 1});
      },
      "threadgroup");
  expect_value_error(
      [&] {
        k({a, a}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {0, 1, 1});
      },
      "threadgroup");
  expect_value_error([&] { k({a, a}, {{4}}, {Dtype::Float32}, {-1, 1, 1}, {4, 1, 1}); }, "grid");
  expect_value_error(
      [&] {
        k({a, a}, {{-4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1});
      },
      "output_shapes");
  expect_value_error(
      [&] {
        k({a, Array()}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1});
      },
      "inputs");
  LaunchOptions empty_output;
  empty_output.outputs = std::vector<Array>{Array()};
  expect_value_error(
      [&] {
        k({a, a}, {{}}, {Dtype::Float32}, {1, 1, 1}, {1, 1, 1}, {}, std::nullopt, false,
          empty_output);
      },
      "outputs[0] ('out') is an empty Array");
  Array moved = Array::zeros({4}, Dtype::Float32);
  Array taker = std::move(moved);
  expect_value_error(
      [&] {
        k({a, moved}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1});
      },
      "inputs[1] ('b') is an empty Array");
  expect_value_error(
      [&] {
        k({a, a}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1}, {{"a", 1}});
      },
      "template");
  expect_value_error(
      [&] {
        k({a, a}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1}, {{"for", 1}});
      },
      "template");
  expect_value_error(
      [&] {
        k({a, a}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1}, {{"T", 1}, {"T", 2}});
      },
      "template");
  EXPECT_EQ(cache_info().memory_entries, entries);  // nothing was built
}

TEST(Kernel, TemplateNamesFollowTheRulesOfInputNames) {
  // A template name may not use kjit's reserved prefix, nor a name the body already has.
  Kernel k = metal_kernel("reserved", {"inp"}, {"out"}, "out[0] = inp[0] + grid_origin.x;");
  Array a = Array::zeros({1}, Dtype::Float32);
  for (std::string name : {"kjit_thread", "grid_origin"}) {
    EXPECT_THROW(k({a}, {{1}}, {Dtype::Float32}, {1, 1, 1}, {1, 1, 1}, {{name, 1}}), ValueError)
        << name;
  }
}

TEST(Kernel, BadNames) {
  auto expect_value_error = [](auto&& f, const std::string& mention) {
    try {
      f();
      ADD_FAILURE() << "no exception; expected one mentioning " << mention;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
    }
  };
  const std::string body = "out[0] = inp[0];";
  expect_value_error([&] { metal_kernel("1-abc", {"inp"}, {"out"}, body); },
                     "name: '1-abc' is not a valid identifier: a kernel name has only ASCII");
  expect_value_error([&] { cuda_kernel("while", {"inp"}, {"out"}, body); },
                     "name: 'while' is not a valid identifier: it is a C++ keyword");
  expect_value_error([&] { metal_kernel("my kernel", {"inp"}, {"out"}, body); }, "name");
  expect_value_error([&] { cuda_kernel("", {"inp"}, {"out"}, body); }, "name");
  expect_value_error([&] { metal_kernel("k", {"in-p"}, {"out"}, body); }, "input_names");
  expect_value_error([&] { metal_kernel("k", {"for"}, {"out"}, body); }, "input_names");
  expect_value_error([&] { cuda_kernel("k", {"inp"}, {"int"}, body); }, "output_names");
  expect_value_error([&] { metal_kernel("k", {"inp", "inp"}, {"out"}, body); }, "inp");
  expect_value_error([&] { metal_kernel("k", {"x"}, {"x"}, body); }, "x");
  expect_value_error([&] { metal_kernel("k", {"kjit_x"}, {"out"}, body); }, "kjit_");
  expect_value_error([&] { cuda_kernel("k", {"__x"}, {"out"}, body); }, "reserved to the compiler");
  expect_value_error([&] { metal_kernel("k", {"NAN"}, {"out"}, body); }, "'NAN' is a macro");
  expect_value_error(
      [&] {
        metal_kernel("k", {"a", "a_strides"}, {"out"}, body);
      },
      "input_names: 'a_strides' is the name of input 'a''s strides");
  expect_value_error([&] { metal_kernel("k", {"inp"}, {}, body); }, "output_names");
  expect_value_error([&] { cuda_kernel("k", {"inp"}, {"out"}, body, "", true, -1); },
                     "shared_memory");
  expect_value_error([&] { cuda_kernel("k", {"inp"}, {"out"}, "out[0] = 1;\n}\n{"); },
                     "'}' (source line 2) closes a brace the text did not open");
  // Digraphs are the braces they spell: "%>" cannot close the function around the body either.
  expect_value_error(
      [&] {
        cuda_kernel("k", {"inp"}, {"out"}, "out[0] = 1;\n%>\nvoid evil() { }\nvoid more() <%\n");
      },
      "'}' (source line 2) closes a brace the text did not open");
  expect_value_error([&] { metal_kernel("k", {"inp"}, {"out"}, "out[0] = 1;\n<%\n"); },
                     "'{' (source line 2) is never closed");
  expect_value_error([&] { metal_kernel("k", {"inp"}, {"out"}, "out[0] = 1;", "%> <%"); },
                     "'}' (header line 1) closes a brace the text did not open");
  // Unsupported Metal features are rejected when the kernel is made.
  expect_value_error(
      [&] { metal_kernel("k", {"inp"}, {"out"}, "uint i = 0;\ntexture2d<float> t;\n"); }, "line 2");
}

TEST(Kernel, NamesMayStartWithADigitAsInMlx) {
  // The body's function is custom_kernel_<name>, so the name itself need not be an identifier.
  for (const char* name : {"1D_conv", "0", "_"}) {
    Kernel k = metal_kernel(name, {"inp"}, {"out"}, kMetalExp);
    EXPECT_EQ(k.name(), name);
    Array a = random_floats({37}, 5);
    auto out = k({a}, {{37}}, {Dtype::Float32}, {37, 1, 1}, {32, 1, 1}, {{"T", Dtype::Float32}});
    EXPECT_LT(worst_exp_error(values(a), out[0]), 1e-6) << name;
  }
}

TEST(Kernel, MetalRejectsAddressSpaceNamesAsNames) {
  // In MSL these are keywords: a kernel cannot take a parameter of that name.
  for (std::string name : {"device", "thread", "constant", "threadgroup"}) {
    EXPECT_THROW(metal_kernel("k", {name}, {"out"}, "out[0] = 1;"), ValueError) << name;
    EXPECT_THROW(metal_kernel("k", {"inp"}, {name}, "inp[0];"), ValueError) << name;
  }
}

TEST(Kernel, CompileErrorPointsAtTheUsersLine) {
  const std::string source =
      "uint i = thread_position_in_grid.x;\n"
      "out[i] = inp[i] +* ;\n"
      "out[i] += 1.0f;\n";
  Kernel k = metal_kernel("broken", {"inp"}, {"out"}, source);
  Array a = Array::zeros({4}, Dtype::Float32);
  try {
    k({a}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1});
    ADD_FAILURE() << "no exception";
  } catch (const CompileError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("source line 2"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("source line 1:"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("source line 3:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("out[i] = inp[i] +* ;"), std::string::npos) << msg;  // the line, quoted
    EXPECT_NE(msg.find("broken"), std::string::npos) << msg;
    EXPECT_NE(e.source().find(source), std::string::npos);
    EXPECT_NE(e.log().find("line 2"), std::string::npos) << e.log();
  }
  // A failure is never cached: the same call fails the same way again.
  EXPECT_THROW(k({a}, {{4}}, {Dtype::Float32}, {4, 1, 1}, {4, 1, 1}), CompileError);
}

TEST(Kernel, CompileErrorInTheHeader) {
  Kernel k = cuda_kernel("broken_header", {"inp"}, {"out"}, "out[0] = helper(inp[0]);\n",
                         "__device__ float helper(float x) {\n  return x +;\n}\n");
  Array a = Array::zeros({1}, Dtype::Float32);
  try {
    k({a}, {{1}}, {Dtype::Float32}, {1, 1, 1}, {1, 1, 1});
    ADD_FAILURE() << "no exception";
  } catch (const CompileError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("header line 2"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace kjit
