// NVRTC: generated CUDA sources to a cubin for the device's exact architecture (PTX only when
// NVRTC is older than the device). Runs without a GPU, so CI compiles every test kernel.
#pragma once

#include <kjit/kernel.h>

#include <string>

#include "codegen/kernel_spec.h"

namespace kjit::cuda {

struct CompiledImage {
  std::string image;  // cubin or PTX, loadable by cuModuleLoadDataEx
  bool cubin = false;
};

/// What a compiled image depends on besides the source: the NVRTC library, the target compute
/// capability |cc| (e.g. 90) and the flags for |options|. Computed without loading NVRTC, so
/// that a cache hit never does; the -arch choice follows from the NVRTC and |cc|.
std::string nvrtc_identity(const CompileOptions& options, int cc);

/// Compiles |source| for compute capability |cc|. Throws kjit::CompileError with diagnostics
/// mapped to the user's lines, or kjit::ValueError when NVRTC is missing.
CompiledImage compile_cuda(const std::string& source, const KernelSpec& spec, int cc);

}  // namespace kjit::cuda
