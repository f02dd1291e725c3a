// NVRTC: generated CUDA sources to a cubin for the device's exact architecture (PTX only when
// NVRTC is older than the device). Runs without a GPU, so CI compiles every test kernel.
#pragma once

#include <kjit/kernel.h>

#include <string>

#include "codegen/kernel_spec.h"

namespace kjit::cuda {

struct CompiledImage {
  std::string image;  // cubin or PTX, loadable by cuModuleLoadData
  bool cubin = false;
};

/// What a compiled image depends on besides the source: the NVRTC library, the target compute
/// capability |cc| (e.g. 90) and the options for |mode|. Computed without loading NVRTC, so that
/// a cache hit never does; the -arch choice follows from the NVRTC and |cc|.
std::string nvrtc_identity(MathMode mode, int cc);

/// Compiles |source| for compute capability |cc|. Throws kjit::CompileError with diagnostics
/// mapped to the user's lines, or kjit::ValueError when NVRTC is missing.
CompiledImage compile_cuda(const std::string& source, const KernelSpec& spec, MathMode mode,
                           int cc);

}  // namespace kjit::cuda
