// What a kernel is, independent of any call: the user's text and options, lexed and checked once.
#pragma once

#include <kjit/kernel.h>
#include <kjit/precompiled.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/lexer.h"

namespace kjit {

/// How a kernel is written: a body in Metal or CUDA C++, or compiled already (PTX or a cubin,
/// which no codegen stage reads).
enum class Dialect { Metal, Cuda, Precompiled };

/// "metal_kernel", "cuda_kernel" or "precompiled_cuda_kernel": the function that makes kernels
/// of |dialect|, for messages.
inline const char* api_name(Dialect dialect) {
  return dialect == Dialect::Metal  ? "metal_kernel"
         : dialect == Dialect::Cuda ? "cuda_kernel"
                                    : "precompiled_cuda_kernel";
}

struct KernelSpec {
  KernelSpec() = default;
  KernelSpec(const KernelSpec&) = delete;  // tokens view into the strings below
  KernelSpec& operator=(const KernelSpec&) = delete;

  Dialect dialect = Dialect::Metal;
  std::string name;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  std::string source;
  std::string header;
  bool ensure_row_contiguous = true;
  bool atomic_outputs = false;
  int shared_memory = 0;
  CompileOptions compile_options;
  // A precompiled kernel's: its image (PTX, a cubin or a fatbin), whose entry point |name| is,
  // and the scalars passed after the outputs. Its spec is made for one call (MLX's function
  // launches at once), so the scalars are part of it.
  std::string image;
  std::vector<ScalarArg> scalars;

  // Derived once at construction. Tokens view into |source| / |header| above.
  std::vector<codegen::Token> source_tokens;
  std::vector<codegen::Token> header_tokens;
  struct InputUse {
    bool shape = false, strides = false, ndim = false;
  };
  std::vector<InputUse> input_uses;     // which of x_shape / x_strides / x_ndim the body names
  std::vector<std::string> attributes;  // Metal thread attributes the body names, MLX's order

  /// "metal_kernel", "cuda_kernel" or "precompiled_cuda_kernel", for messages.
  const char* api() const { return api_name(dialect); }
};

/// The start of every message about |spec|'s kernel: "[kjit.metal_kernel] ", and with its name,
/// "[kjit.metal_kernel] kernel 'k': ".
inline std::string prefix(const KernelSpec& spec) {
  return "[kjit." + std::string(spec.api()) + "] ";
}
inline std::string prefix_named(const KernelSpec& spec) {
  return prefix(spec) + "kernel '" + spec.name + "': ";
}

/// The C++ name of the function holding a kernel's body: "custom_kernel_" and the kernel's
/// name, as in MLX. The prefix is what lets a name start with a digit.
inline std::string kernel_symbol(const std::string& name) { return "custom_kernel_" + name; }

/// A kernel's spec from the arguments of metal_kernel / cuda_kernel, lexed and checked: a bad
/// name, a feature the dialect lacks or unbalanced braces are errors here, not at a call.
std::shared_ptr<const KernelSpec> make_spec(Dialect dialect, const std::string& name,
                                            const std::vector<std::string>& input_names,
                                            const std::vector<std::string>& output_names,
                                            const std::string& source, const std::string& header,
                                            bool ensure_row_contiguous, bool atomic_outputs,
                                            int shared_memory, CompileOptions options);

/// Throws unless |n| can name a parameter or template argument of a kernel of |dialect|; |where|
/// is the message's prefix and the argument's name.
void check_usable_name(const std::string& where, const std::string& n, Dialect dialect);

/// The input's shape, strides or ndim that |name| names ("input 'a''s shape"; empty when none):
/// those are named after their input, and no parameter may take the name.
std::string input_attribute_named(const std::vector<std::string>& inputs, const std::string& name);

}  // namespace kjit
