// What a call fixes besides its arrays (output shapes and dtypes, grid, threadgroup, template
// arguments, init value, verbosity), and the checks made of them before any array is read.
#pragma once

#include <kjit/kernel.h>

#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"

namespace kjit {

inline constexpr int64_t kMaxThreadsPerGroup = 1024;
inline constexpr int64_t kMaxGridDim = 0xffffffffll;

/// A call's settings, viewed where they are kept (a bound kernel, or the caller's arguments).
struct CallSettings {
  const std::vector<Shape>& output_shapes;
  const std::vector<Dtype>& output_dtypes;
  Dim3 grid, threadgroup;
  const TemplateArgs& template_args;
  std::optional<double> init_value;
  bool verbose;
};

/// Settings owned, as a bound kernel and a kernel's last keyword call keep them.
struct OwnedSettings {
  explicit OwnedSettings(const CallSettings& s);
  CallSettings view() const {
    return {output_shapes, output_dtypes, grid, threadgroup, template_args, init_value, verbose};
  }
  /// Whether |s| are these settings. The init value is compared bit for bit: -0.0 fills
  /// otherwise than 0.0, and a NaN is a NaN.
  bool matches(const CallSettings& s) const;

  std::vector<Shape> output_shapes;
  std::vector<Dtype> output_dtypes;
  Dim3 grid, threadgroup;
  TemplateArgs template_args;
  std::optional<double> init_value;
  bool verbose;
};

/// Throws ValueError "|param|: expected N (names), got |got|" unless |got| is |names|' count.
/// Without |names| shown, the message gives the count alone.
void check_count(const KernelSpec& spec, const char* param, const std::vector<std::string>& names,
                 size_t got, bool show_names = true);

/// The checks of the settings that need no array: counts of output shapes and dtypes, the
/// grid's and threadgroup's ranges, the output shapes.
void check_settings(const KernelSpec& spec, const CallSettings& settings);
/// Template arguments: usable names, given once, clashing with no input or output.
void check_template_args(const KernelSpec& spec, const TemplateArgs& args);
/// Metal has 32-bit atomics only (int, uint, float).
void check_atomic_outputs(const KernelSpec& spec, const std::vector<Dtype>& outputs);

}  // namespace kjit
