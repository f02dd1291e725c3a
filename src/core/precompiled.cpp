#include "core/precompiled.h"

#include <kjit/errors.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "codegen/kernel_spec.h"
#include "core/compiled_image.h"

namespace kjit {

Kernel precompiled_kernel(const std::string& name, std::string compiled_source, size_t inputs,
                          size_t outputs, std::vector<ScalarArg> scalars, int shared_memory,
                          bool ensure_row_contiguous) {
  const std::string p = "[kjit.precompiled_cuda_kernel] ";
  // An entry point's name is a PTX identifier or a mangled C++ name: printable, no spaces.
  if (name.empty()) throw ValueError(p + "name: the kernel's entry point name cannot be empty");
  for (char c : name) {
    if (!std::isgraph(static_cast<unsigned char>(c))) {
      throw ValueError(p + "name: '" + name +
                       "' is not an entry point name (no spaces or control characters)");
    }
  }
  auto spec = std::make_shared<KernelSpec>();
  spec->dialect = Dialect::Precompiled;
  spec->name = name;
  const std::string named = prefix_named(*spec);
  if (shared_memory < 0) {
    throw ValueError(named + "shared_memory: must be at least 0 bytes, got " +
                     std::to_string(shared_memory));
  }
  if (outputs == 0) {
    throw ValueError(named + "output_shapes: a kernel needs at least one output");
  }
  const std::optional<ImageKind> kind = image_kind(compiled_source);
  if (!kind) {
    throw CompileError(named + "compiled_source: " + std::to_string(compiled_source.size()) +
                           " bytes that are neither PTX (text declaring a .entry) nor a cubin "
                           "or fatbin (an ELF or fatbin header)",
                       "", "");
  }
  if (*kind == ImageKind::Ptx) {
    const std::vector<std::string> entries = ptx_entries(compiled_source);
    if (std::find(entries.begin(), entries.end(), name) == entries.end()) {
      std::string listed;
      for (const std::string& e : entries) listed += (listed.empty() ? "'" : ", '") + e + "'";
      throw ValueError(named + "name: compiled_source declares no kernel '" + name +
                       "' (its .entry kernels: " + listed + ")");
    }
  }
  // No names are given: messages name the arrays by position, with these as their labels.
  for (size_t i = 0; i < inputs; ++i) spec->input_names.push_back("in" + std::to_string(i));
  for (size_t o = 0; o < outputs; ++o) spec->output_names.push_back("out" + std::to_string(o));
  spec->input_uses.resize(inputs);
  spec->ensure_row_contiguous = ensure_row_contiguous;
  spec->shared_memory = shared_memory;
  spec->image = std::move(compiled_source);
  spec->scalars = std::move(scalars);
  return Kernel(std::move(spec));
}

std::vector<Array> precompiled_cuda_kernel(
    const std::string& name, const std::string& compiled_source, const std::vector<Array>& inputs,
    const std::vector<Shape>& output_shapes, const std::vector<Dtype>& output_dtypes,
    const std::vector<ScalarArg>& scalars, Dim3 grid, Dim3 threadgroup, int shared_memory,
    std::optional<double> init_value, bool ensure_row_contiguous, const LaunchOptions& options) {
  const Kernel kernel =
      precompiled_kernel(name, compiled_source, inputs.size(), output_shapes.size(), scalars,
                         shared_memory, ensure_row_contiguous);
  return kernel(inputs, output_shapes, output_dtypes, grid, threadgroup, {}, init_value,
                /*verbose=*/false, options);
}

}  // namespace kjit
