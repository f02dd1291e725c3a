// The CUDA emitter: the translation unit NVRTC compiles, and its entry points, one per way a
// launch lays out its groups as blocks.
#include <string>
#include <vector>

#include "codegen/emit.h"

namespace kjit::codegen {
namespace {

// The header reads the index variables of the running thread's group: threadIdx and blockDim
// are the hardware's, but a block's own blockIdx and gridDim differ from the body's for grids
// laid out otherwise, so they come from variables of the group that each of its threads sets to
// the same values (group_index_stores).
std::string header_defines(const IndexVariables& vars) {
  std::string out;
  for (const CudaBuiltin* b : vars.header) {
    const std::string var = std::string("kjit_group_") + b->name;
    out += "__shared__ unsigned " + var + "[3];\n#define " + b->name + " (" +
           cuda_typed(*b, Target::Cuda,
                      "::kjit::uint3(" + var + "[0], " + var + "[1], " + var + "[2])") +
           ")\n";
  }
  return out;
}

// Every thread of the group stores the same values (header_defines).
std::string group_index_stores(const IndexVariables& vars, const std::string& ctx) {
  std::string out;
  for (const CudaBuiltin* b : vars.header) {
    const std::string var = std::string("kjit_group_") + b->name;
    out += "  { const ::kjit::uint3 v = " + ctx + "." + b->attribute + "(); " + var +
           "[0] = v.x; " + var + "[1] = v.y; " + var + "[2] = v.z; }\n";
  }
  return out;
}

}  // namespace

std::string cuda_entry_name(unsigned index) {
  return "kjit_cuda_entry_" + std::to_string(cuda_entry_layout(index)) +
         (cuda_entry_full(index) ? "_full" : "");
}

std::string cuda_entry_points(const GeneratedSource& g, unsigned mask) {
  const std::string args = arguments(g.layout);
  Writer w;
  w << "namespace kjit_user {\n";
  for (unsigned index = 0; index < kCudaEntryPoints; ++index) {
    if (!(mask & (1u << index))) continue;
    w << "extern \"C\" __global__ void " << cuda_entry_name(index) << "(\n";
    for (size_t k = 0; k < g.layout.size(); ++k) {
      w << "    " << g.layout[k].type << " kjit_arg" << std::to_string(k) << ",\n";
    }
    const std::string flags = std::to_string(cuda_entry_layout(index)) +
                              (cuda_entry_full(index) ? "u, true" : "u, false");
    w << "    const kjit_cuda_launch kjit_launch) {\n"
         "  const ::kjit::thread_ctx t = ::kjit::make_thread_ctx<"
      << flags << ">(kjit_launch);\n  if (!::kjit::in_grid<" << flags << ">(t)) return;\n  "
      << g.kernel_name << "(" << args << "t);\n}\n\n";
  }
  w << "}  // namespace kjit_user\n";
  return w.str();
}

GeneratedSource emit_cuda_source(const KernelSpec& spec, const CallSignature& call) {
  // A GPU kernel waits as the hardware does: no header helper becomes a coroutine.
  const WaitingHelpers helpers;
  GeneratedSource g;
  const IndexVariables vars = index_variables(spec, Target::Cuda);
  Writer w;
  write_common_part(w, g, spec, Target::Cuda, CpuMode::Loop, vars, header_defines(vars), helpers);
  const std::string locals = thread_locals(spec, Target::Cuda, vars, "kjit_thread",
                                           group_index_stores(vars, "kjit_thread"));
  write_kernel_function(w, g, spec, call, Target::Cuda, kernel_parameters(spec, call, Target::Cuda),
                        locals, false, helpers);
  g.layout = parameter_layout(spec, call);
  // The entry points are added per launch layout (cuda_entry_points).
  w << "}  // namespace kjit_user\n";
  g.text = std::move(w.str());
  return g;
}

}  // namespace kjit::codegen
