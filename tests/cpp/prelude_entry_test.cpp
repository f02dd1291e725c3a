// The prelude's entry headers: the GPU ones compile on their own with NVRTC, following their
// real includes (the CPU ones are compiled by the host compiler, tests/cpp/CMakeLists.txt), and
// the embedded text of each is whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cuda/cuda_api.h"
#include "codegen/prelude.h"

namespace kjit {
namespace {

// Compiles prelude/entry/|entry|.h with NVRTC as the CUDA backend compiles kernels, the prelude
// directory as the include path; returns NVRTC's log, empty when it compiled.
std::string compile_entry_with_nvrtc(const std::string& entry) {
  const cuda::NvrtcApi& api = cuda::nvrtc();
  int n = 0;
  api.nvrtcGetNumSupportedArchs(&n);
  std::vector<int> archs(static_cast<size_t>(std::max(n, 0)));
  if (n > 0) api.nvrtcGetSupportedArchs(archs.data());
  EXPECT_FALSE(archs.empty());
  const bool has_90 = std::find(archs.begin(), archs.end(), 90) != archs.end();
  const int arch = has_90 || archs.empty() ? 90 : archs.back();
  const std::string source = "#include \"entry/" + entry + ".h\"\n";
  cuda::nvrtcProgram prog = nullptr;
  EXPECT_EQ(api.nvrtcCreateProgram(&prog, source.c_str(), "entry.cu", 0, nullptr, nullptr), 0);
  std::vector<std::string> options = {"--gpu-architecture=compute_" + std::to_string(arch),
                                      "-std=c++17", "--device-as-default-execution-space",
                                      std::string("--include-path=") + KJIT_PRELUDE_DIR};
  if (api.major > 12 || (api.major == 12 && api.minor >= 4)) options.push_back("-minimal");
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const int result = api.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t size = 0;
  api.nvrtcGetProgramLogSize(prog, &size);
  std::string log(size, '\0');
  if (size) api.nvrtcGetProgramLog(prog, log.data());
  api.nvrtcDestroyProgram(&prog);
  return result == 0 ? std::string() : "NVRTC failed:\n" + log;
}

TEST(PreludeEntry, MetalOnCudaCompilesAlone) {
  if (!cuda::nvrtc().loaded) GTEST_SKIP() << "NVRTC is " << cuda::nvrtc().error;
  EXPECT_EQ(compile_entry_with_nvrtc("msl_on_cuda"), "");
}

TEST(PreludeEntry, CudaOnCudaCompilesAlone) {
  if (!cuda::nvrtc().loaded) GTEST_SKIP() << "NVRTC is " << cuda::nvrtc().error;
  EXPECT_EQ(compile_entry_with_nvrtc("cuda_on_cuda"), "");
}

TEST(PreludeEntry, NvrtcRejectsAnEntryThatIsMissing) {
  if (!cuda::nvrtc().loaded) GTEST_SKIP() << "NVRTC is " << cuda::nvrtc().error;
  EXPECT_NE(compile_entry_with_nvrtc("no_such_entry"), "");
}

// The embedded text of every combination has each prelude header in place: no include of one
// is left, nor a #pragma once (which warns in a main file), while system includes stay.
TEST(PreludeEntry, EmbeddedTextsHaveTheirIncludesExpanded) {
  for (Dialect dialect : {Dialect::Metal, Dialect::Cuda}) {
    for (codegen::Target target : {codegen::Target::Cpu, codegen::Target::Cuda}) {
      for (codegen::CpuMode mode :
           {codegen::CpuMode::Loop, codegen::CpuMode::Regions, codegen::CpuMode::Coroutine}) {
        if (target == codegen::Target::Cuda && mode != codegen::CpuMode::Loop) continue;
        const bool cooperative = mode == codegen::CpuMode::Coroutine;
        const std::string_view text = codegen::prelude_for(dialect, target, mode);
        EXPECT_GT(text.size(), 10000u);
        EXPECT_EQ(text.find("#include \""), std::string_view::npos);
        EXPECT_EQ(text.find("#pragma once"), std::string_view::npos);
        EXPECT_EQ(text.find("#include <coroutine>") != std::string_view::npos, cooperative);
        // Each header once: the thread context is defined a single time.
        const size_t first = text.find("struct thread_ctx {");
        ASSERT_NE(first, std::string_view::npos);
        EXPECT_EQ(text.find("struct thread_ctx {", first + 1), std::string_view::npos);
        // The Metal dialect's marker comes first, as the shared headers test it.
        EXPECT_EQ(text.find("#define KJIT_METAL 1") != std::string_view::npos,
                  dialect == Dialect::Metal);
      }
    }
  }
}

}  // namespace
}  // namespace kjit
