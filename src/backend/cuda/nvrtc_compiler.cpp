#include "backend/cuda/nvrtc_compiler.h"

#include <kjit/errors.h>

#include <algorithm>
#include <vector>

#include "backend/cuda/cuda_api.h"
#include "codegen/diagnostics.h"

namespace kjit::cuda {
namespace {

const NvrtcApi& loaded_nvrtc() {
  const NvrtcApi& api = nvrtc();
  if (!api.loaded) {
    throw ValueError("kjit: the CUDA backend needs NVRTC, which is " + api.error +
                     "; install the CUDA toolkit or the nvidia-cuda-nvrtc wheel, or set CUDA_HOME");
  }
  return api;
}

// sm_XY when NVRTC can emit machine code for the device, else PTX for the newest architecture
// it knows that the device can run (the driver compiles that PTX on load).
std::string arch_flag(int cc) {
  const NvrtcApi& api = loaded_nvrtc();
  int n = 0;
  api.nvrtcGetNumSupportedArchs(&n);
  std::vector<int> archs(static_cast<size_t>(std::max(n, 0)));
  if (n > 0) api.nvrtcGetSupportedArchs(archs.data());
  if (std::find(archs.begin(), archs.end(), cc) != archs.end()) {
    return "--gpu-architecture=sm_" + std::to_string(cc);
  }
  int best = 0;
  for (int a : archs) {
    if (a <= cc) best = std::max(best, a);
  }
  if (best == 0) {
    throw ValueError("NVRTC " + std::to_string(api.major) + "." + std::to_string(api.minor) +
                     " cannot compile for compute capability " + std::to_string(cc / 10) + "." +
                     std::to_string(cc % 10));
  }
  return "--gpu-architecture=compute_" + std::to_string(best);
}

// Every flag but the architecture.
std::vector<std::string> compile_flags(const CompileOptions& options) {
  std::vector<std::string> o = {"-std=c++17", "--device-as-default-execution-space", "-w"};
  // Line tables for compute-sanitizer and the profilers, which name the body's lines.
  if (options.line_info) o.push_back("-lineinfo");
  const MathMode mode = options.math_mode;
  if (mode == MathMode::Safe) {
    o.insert(o.end(), {"-prec-div=true", "-prec-sqrt=true", "-ftz=false", "--fmad=false"});
  } else if (mode == MathMode::Relaxed) {
    o.insert(o.end(), {"-prec-div=false", "-prec-sqrt=false", "-ftz=false"});
  } else {
    o.insert(o.end(), {"--use_fast_math", "-D__FAST_MATH__=1"});
  }
  return o;
}

// NVRTC 12.4 and later leave out, with -minimal, what kernels here cannot use (textures and
// surfaces, the device runtime and launches from the device, the runtime's types): ~10% of the
// compile of a small kernel. Whether it applies follows from the library, which the disk cache
// key names, so the key names the rule rather than the outcome (and needs no loaded NVRTC).
constexpr const char* kMinimalRule = "-minimal from NVRTC 12.4";

bool takes_minimal(const NvrtcApi& api) {
  return api.major > 12 || (api.major == 12 && api.minor >= 4);
}

}  // namespace

std::string nvrtc_identity(const CompileOptions& options, int cc) {
  std::string id = "nvrtc " + nvrtc_file_identity() + "\ncc " + std::to_string(cc) + "\n";
  for (const std::string& o : compile_flags(options)) id += " " + o;
  return id + "\n" + kMinimalRule;
}

CompiledImage compile_cuda(const std::string& source, const KernelSpec& spec, int cc) {
  codegen::assert_may_compile(spec);
  const NvrtcApi& api = loaded_nvrtc();
  nvrtcProgram prog = nullptr;
  if (api.nvrtcCreateProgram(&prog, source.c_str(), "kjit_kernel.cu", 0, nullptr, nullptr) != 0) {
    throw std::runtime_error("kjit: nvrtcCreateProgram failed");
  }
  std::vector<std::string> opts = compile_flags(spec.compile_options);
  opts.insert(opts.begin(), arch_flag(cc));
  if (takes_minimal(api)) opts.push_back("-minimal");
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  nvrtcResult result = api.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  api.nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) api.nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  CompiledImage out;
  if (result == 0) {
    out.cubin = opts[0].find("sm_") != std::string::npos;
    size_t size = 0;
    if (out.cubin) {
      api.nvrtcGetCUBINSize(prog, &size);
      out.image.resize(size);
      api.nvrtcGetCUBIN(prog, out.image.data());
    } else {
      api.nvrtcGetPTXSize(prog, &size);
      out.image.resize(size);
      api.nvrtcGetPTX(prog, out.image.data());
    }
  }
  api.nvrtcDestroyProgram(&prog);
  if (result != 0) codegen::throw_compile_error(spec, "CUDA", log, source);
  return out;
}

}  // namespace kjit::cuda
