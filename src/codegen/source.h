// The complete translation unit for one kernel and one call signature: a pure function of the
// kernel spec, the input/output dtypes and ndims, the template arguments and the target.
#pragma once

#include <kjit/kernel.h>

#include <string>
#include <utility>
#include <vector>

#include "codegen/cpu_mode.h"
#include "codegen/kernel_spec.h"
#include "codegen/rewrite.h"

namespace kjit::codegen {

struct CallSignature {
  std::vector<std::pair<Dtype, int>> inputs;  // dtype and ndim of each input
  std::vector<Dtype> outputs;
  TemplateArgs template_args;
};

/// The symbol of the generated entry point on the CPU.
inline constexpr const char* kCpuEntry = "kjit_cpu_entry";
/// A region-mode kernel's second one, for launches of small grids (prelude/target/cpu/abi.h).
inline constexpr const char* kCpuSmallGridEntry = "kjit_cpu_entry_small_grid";

/// A CUDA kernel has an entry point per way a launch lays out its groups as blocks
/// (kjit_cuda_layout in prelude/target/cuda/abi.h) and per whether every group is full. Each is
/// compiled when a launch first needs it: most kernels are launched one way only.
inline constexpr unsigned kCudaEntryPoints = 8;
inline constexpr unsigned kAllCudaEntryPoints = (1u << kCudaEntryPoints) - 1;
inline constexpr unsigned cuda_entry_index(unsigned layout, bool full) {
  return layout * 2 + (full ? 1 : 0);
}
inline constexpr unsigned cuda_entry_layout(unsigned index) { return index / 2; }
inline constexpr bool cuda_entry_full(unsigned index) { return index % 2 == 1; }
std::string cuda_entry_name(unsigned index);

/// One parameter of the generated kernel, in order: what it carries and its C++ type.
struct Param {
  enum class Kind { Input, Scalar, Shape, Strides, Ndim, Output };
  Kind kind;
  int index;         // which input or output
  std::string type;  // the C++ type of the parameter in the generated entry point
};

struct GeneratedSource {
  std::string text;                  // the whole translation unit
  CpuMode cpu_mode = CpuMode::Loop;  // how the body runs on the CPU (codegen/cpu_mode.h)
  std::string cpu_mode_reason;       // why, on the CPU
  size_t user_part = 0;              // offset where the part after the prelude begins
  std::string kernel_name;           // custom_kernel_<name>
  std::vector<Param> layout;         // the entry point's parameters, as the launcher packs them
};

/// The kernel's parameters after generation: per input its data (a pointer, or the value of a
/// 0-d input) then the shape, strides and ndim the body names; then the outputs. The CPU entry
/// unpacks them from the launch record; the CUDA entry takes them as kernel parameters, and the
/// launcher packs them in this order.
std::vector<Param> parameter_layout(const KernelSpec& spec, const CallSignature& call);

/// The file names compiler diagnostics use for the user's text.
inline constexpr const char* kSourceFile = "<source>";
inline constexpr const char* kHeaderFile = "<header>";

/// The kernel function's parameter list, in the dialect's own spelling (before rewriting).
std::string signature(const KernelSpec& spec, const CallSignature& call);

/// Lines declaring the template arguments (using T = float; constexpr int f = 3; ...).
std::string template_declarations(const KernelSpec& spec, const TemplateArgs& args);

/// The whole translation unit (for CUDA, all but the entry points): the common part, then the
/// target's own (cpu_entry.cpp, cuda_entry.cpp). On the CPU the body runs in the mode
/// choose_cpu_mode picks. Throws kjit::ValueError for an unusable template argument.
GeneratedSource generate(const KernelSpec& spec, const CallSignature& call, Target target);

/// The CPU's translation unit with the body in |mode| (choose_cpu_mode, coroutine_mode).
GeneratedSource generate(const KernelSpec& spec, const CallSignature& call,
                         const CpuModeChoice& mode);

/// The CUDA entry points whose bit is set in |mask|, to follow |g|'s text.
std::string cuda_entry_points(const GeneratedSource& g, unsigned mask);

/// The thread attribute names of Metal (MSL table 5.8) with their types, in MLX's order.
struct Attribute {
  const char* name;
  bool is_vector;  // uint3, else uint
  bool uniform;    // the same for every thread of a group
};
const std::vector<Attribute>& metal_attributes();

}  // namespace kjit::codegen
