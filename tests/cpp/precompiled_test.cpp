// kjit::precompiled_cuda_kernel from C++: images NVRTC makes (PTX and a cubin for sm_90), the
// checks made before any device is asked, and a run on a GPU where one works.
#include <gtest/gtest.h>
#include <kjit/kjit.h>

#include <functional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_api.h"
#include "backend/cuda/cuda_backend.h"
#include "core/compiled_image.h"

namespace kjit {
namespace {

const std::string kAxpby = R"(
extern "C" __global__ void axpby(const float* x, const float* y, float* out, float a, int n,
                                 bool negate) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = a * x[i] + y[i];
    out[i] = negate ? -v : v;
  }
}
extern "C" __global__ void unused() {}
)";

// |source| compiled by NVRTC for |arch|: PTX for compute_XY, a cubin for sm_XY.
std::string nvrtc_image(const std::string& source, const std::string& arch) {
  const cuda::NvrtcApi& r = cuda::nvrtc();
  const bool cubin = arch.starts_with("sm_");
  cuda::nvrtcProgram program = nullptr;
  EXPECT_EQ(r.nvrtcCreateProgram(&program, source.c_str(), "kernel.cu", 0, nullptr, nullptr), 0);
  const std::string option = "--gpu-architecture=" + arch;
  const char* options[] = {option.c_str()};
  std::string image;
  if (r.nvrtcCompileProgram(program, 1, options) == 0) {
    size_t size = 0;
    (cubin ? r.nvrtcGetCUBINSize : r.nvrtcGetPTXSize)(program, &size);
    image.resize(size);
    (cubin ? r.nvrtcGetCUBIN : r.nvrtcGetPTX)(program, image.data());
  }
  r.nvrtcDestroyProgram(&program);
  EXPECT_FALSE(image.empty()) << "NVRTC did not compile the test kernel";
  return image;
}

class PrecompiledKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::nvrtc().loaded) GTEST_SKIP() << "NVRTC is " << cuda::nvrtc().error;
  }
};

// axpby on |n| elements of x = 0, 1, 2... and y = 1 with |scalars|.
std::vector<Array> run_axpby(const std::string& name, const std::string& image, int64_t n,
                             const std::vector<ScalarArg>& scalars, int shared_memory = 0,
                             const LaunchOptions& options = {}) {
  Array x = Array::empty({n}, Dtype::Float32), y = Array::empty({n}, Dtype::Float32);
  for (int64_t i = 0; i < n; ++i) {
    static_cast<float*>(x.data())[i] = static_cast<float>(i);
    static_cast<float*>(y.data())[i] = 1.0f;
  }
  return precompiled_cuda_kernel(name, image, {x, y}, {{n}}, {Dtype::Float32}, scalars, {n, 1, 1},
                                 {128, 1, 1}, shared_memory, std::nullopt, false, options);
}

template <class Error>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error of the expected type";
  return {};
}

TEST_F(PrecompiledKernel, ImagesAreToldApart) {
  const std::string ptx = nvrtc_image(kAxpby, "compute_90");
  EXPECT_EQ(image_kind(ptx), ImageKind::Ptx);
  EXPECT_EQ(ptx_entries(ptx), (std::vector<std::string>{"axpby", "unused"}));
  EXPECT_EQ(image_kind(nvrtc_image(kAxpby, "sm_90")), ImageKind::Cubin);
  EXPECT_EQ(image_kind(std::string("\x50\xed\x55\xba\x01\x00\x10\x00", 8)), ImageKind::Fatbin);
  EXPECT_EQ(image_kind("garbage"), std::nullopt);
  EXPECT_EQ(image_kind(std::string(".entry k\0more", 13)), std::nullopt);  // not text
  EXPECT_EQ(ptx_entries(".visible .entry a(\n.entry\tb_$1 (\n.entryish c(\nx.entry d("),
            (std::vector<std::string>{"a", "b_$1"}));
}

TEST_F(PrecompiledKernel, TheCpuRefusesTheKernel) {
  LaunchOptions on_cpu;
  on_cpu.device = Device::cpu();
  for (const char* arch : {"compute_90", "sm_90"}) {
    const std::string image = nvrtc_image(kAxpby, arch);
    const std::string message = message_of<ValueError>([&] {
      run_axpby("axpby", image, 256, {2.0f, 256, false}, 0, on_cpu);
    });
    EXPECT_NE(message.find("[kjit.precompiled_cuda_kernel] kernel 'axpby': device: cpu cannot run "
                           "a precompiled kernel"),
              std::string::npos)
        << message;
  }
}

TEST_F(PrecompiledKernel, BadArgumentsAreNamed) {
  const std::string ptx = nvrtc_image(kAxpby, "compute_90");
  std::string message = message_of<CompileError>([&] { run_axpby("axpby", "garbage", 4, {}); });
  EXPECT_NE(message.find("kernel 'axpby': compiled_source: 7 bytes that are neither PTX"),
            std::string::npos)
      << message;
  message = message_of<ValueError>([&] { run_axpby("axpy", ptx, 4, {}); });
  EXPECT_NE(message.find("kernel 'axpy': name: compiled_source declares no kernel 'axpy' (its "
                         ".entry kernels: 'axpby', 'unused')"),
            std::string::npos)
      << message;
  message = message_of<ValueError>([&] { run_axpby("axpby", ptx, 4, {}, -1); });
  EXPECT_NE(message.find("kernel 'axpby': shared_memory: must be at least 0 bytes, got -1"),
            std::string::npos)
      << message;
  message = message_of<ValueError>([&] { run_axpby("", ptx, 4, {}); });
  EXPECT_NE(message.find("name: the kernel's entry point name cannot be empty"), std::string::npos)
      << message;
}

TEST_F(PrecompiledKernel, AxpbyRunsOnAGpu) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  const int64_t n = 1000;
  for (const bool negate : {false, true}) {
    std::vector<Array> out = run_axpby("axpby", nvrtc_image(kAxpby, "sm_90"), n,
                                       {2.5f, static_cast<int>(n - 1), negate});
    ASSERT_EQ(out[0].device(), Device::cuda(0));
    Array back = out[0].to(Device::cpu());
    const float* y = static_cast<const float*>(back.data());
    for (int64_t i = 0; i < n - 1; ++i) {
      const float v = 2.5f * static_cast<float>(i) + 1.0f;
      ASSERT_EQ(y[i], negate ? -v : v) << i;
    }
  }
}

}  // namespace
}  // namespace kjit
