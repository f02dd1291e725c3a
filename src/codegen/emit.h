// What generate's common part (source.cpp) and the emitter of each target (cpu_entry.cpp,
// cuda_entry.cpp) share: a writer that counts lines, CUDA's index variables, and the pieces of
// the translation unit that every target writes alike.
#pragma once

#include <algorithm>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/rewrite.h"
#include "codegen/source.h"

namespace kjit::codegen {

// Appends text while counting lines, so that #line directives can name the real line.
class Writer {
 public:
  void add(std::string_view text) {
    line_ += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    out_ += text;
  }
  // Room for |bytes| more, so that a long text grows once.
  void reserve(size_t bytes) { out_.reserve(out_.size() + bytes); }
  Writer& operator<<(std::string_view text) {
    add(text);
    return *this;
  }
  // Resumes line numbering of the generated file after a stretch of user text.
  void resume_generated() {
    add("\n#line " + std::to_string(line_ + 2) + " \"kjit_kernel.cpp\"\n");
  }
  std::string& str() { return out_; }
  size_t size() const { return out_.size(); }

 private:
  std::string out_;
  int line_ = 1;
};

/// The dialect's name for |dtype| (msl_type_name or cuda_type_name).
std::string_view type_name(const KernelSpec& spec, Dtype dtype);

// CUDA's builtin index variables, emitted as locals on targets that lack them.
struct CudaBuiltin {
  const char* name;
  const char* attribute;
  bool decoded;  // differs from the GPU's own value, which counts blocks of the 1-D launch
  bool sizes;    // a dim3 in CUDA (blockDim, gridDim), else a uint3
};
inline constexpr CudaBuiltin kCudaBuiltins[] = {
    {"threadIdx", "thread_position_in_threadgroup", false, false},
    {"blockIdx", "threadgroup_position_in_grid", true, false},
    {"blockDim", "dispatch_threads_per_threadgroup", false, true},
    {"gridDim", "threadgroups_per_grid", true, true},
};

/// The value of |b| as CUDA types it on |target| (uint3 or dim3), from kjit's uint3 |value|.
std::string cuda_typed(const CudaBuiltin& b, Target target, const std::string& value);

/// The CUDA index variables a kernel's texts use, worked out once per generated source.
struct IndexVariables {
  std::vector<const CudaBuiltin*> body;    // those the body uses and |target| must supply
  std::vector<const CudaBuiltin*> header;  // those the header reads and does not declare
};
IndexVariables index_variables(const KernelSpec& spec, Target target);

/// The body's thread attributes and CUDA index variables (|vars|), read from the thread
/// context |ctx|, then |target_locals| (what the target adds), then a use of |ctx|.
std::string thread_locals(const KernelSpec& spec, Target target, const IndexVariables& vars,
                          const std::string& ctx, const std::string& target_locals);

/// A debug build's |tokens| of the body (or of its regions): each element access of an input
/// or output array ("name[i]", "*name") goes through the array's checking view
/// (prelude/common/debug_view.h), which reports the access's line, and so does each of a
/// group-memory array the body declares (prelude/common/debug_group_view.h), and each index
/// of an input's shape and strides; other uses of the name stay the array's pointer. Arrays whose
/// name the body declares again stay unchecked. New texts are kept in |texts|.
std::vector<Token> debug_view_tokens(const KernelSpec& spec, const CallSignature& call,
                                     std::vector<Token> tokens, std::deque<std::string>& texts);

/// For a debug build: a warning for each array left unchecked as the body declares its name
/// again. Called once per generated source.
void warn_of_unchecked_arrays(const KernelSpec& spec);

/// The entry point's call of the kernel function: its parameters, then the thread context.
std::string arguments(const std::vector<Param>& layout);

/// The common part of every translation unit, up to the kernel function: the prelude of
/// |spec|'s dialect on |target| (on the CPU, for |cpu_mode|), then the opening of
/// namespace kjit_user and the user's header, rewritten for |target|, with |header_defines| in
/// front of it (how the target gives the header the index variables it reads). Sets |g|'s
/// kernel name and user part.
void write_common_part(Writer& w, GeneratedSource& g, const KernelSpec& spec, Target target,
                       CpuMode cpu_mode, const IndexVariables& vars,
                       const std::string& header_defines, const WaitingHelpers& helpers);

/// The kernel function's parameters, rewritten for |target|.
std::string kernel_parameters(const KernelSpec& spec, const CallSignature& call, Target target);

/// The body as one function |g|.kernel_name taking the thread context, always inlined (early
/// returns end one thread, and the thread loop around the call stays vectorisable), or a
/// coroutine when |coroutine|; |locals| are the thread's locals (thread_locals).
void write_kernel_function(Writer& w, const GeneratedSource& g, const KernelSpec& spec,
                           const CallSignature& call, Target target, const std::string& params,
                           const std::string& locals, bool coroutine,
                           const WaitingHelpers& helpers);

/// The CPU's translation unit, for |spec| in |mode| (cpu_entry.cpp).
GeneratedSource emit_cpu_source(const KernelSpec& spec, const CallSignature& call,
                                const CpuModeChoice& mode);

/// The CUDA translation unit but its entry points (cuda_entry.cpp).
GeneratedSource emit_cuda_source(const KernelSpec& spec, const CallSignature& call);

}  // namespace kjit::codegen
