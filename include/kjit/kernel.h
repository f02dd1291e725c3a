// Kernels written as a body string in Metal Shading Language or CUDA C++.
#pragma once

#include <kjit/array.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kjit {

/// Three sizes: a grid in threads, or a threadgroup.
struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
  bool operator==(const Dim3&) const = default;
};

/// A template value: a bool, an int or a dtype (checked in that order from Python).
using TemplateValue = std::variant<bool, int, Dtype>;
using TemplateArgs = std::vector<std::pair<std::string, TemplateValue>>;

enum class MathMode { Safe, Relaxed, Fast };

struct CompileOptions {
  MathMode math_mode = MathMode::Safe;
  /// Checks every index into the kernel's inputs and outputs and reports the first outside its
  /// array, and reports output elements the kernel never wrote, as LaunchErrors (slower; on for
  /// every kernel with KJIT_DEBUG=1).
  bool debug = false;
  /// GPU builds carry line tables (NVRTC's -lineinfo), so that compute-sanitizer and the
  /// profilers name the body's lines. The CPU build is the same either way.
  bool line_info = false;
};

/// Per-call options beyond MLX's signature.
struct LaunchOptions {
  /// Where to run; default: where the array inputs live, else default_device().
  std::optional<Device> device;
  /// Preallocated row-contiguous outputs, written in place and returned.
  std::optional<std::vector<Array>> outputs;
  /// Where verbose=true sends the generated source (default: std::cout).
  std::function<void(std::string_view)> print;
  /// The CUDA stream (a CUstream handle) to run on; 0 is the legacy default stream.
  uintptr_t stream = 0;
};

struct KernelSpec;
class BoundKernel;
struct CallRecord;

class Kernel {
 public:
  explicit Kernel(std::shared_ptr<const KernelSpec> spec);
  ~Kernel();
  Kernel(const Kernel&) = default;
  Kernel& operator=(const Kernel&) = default;

  /// Runs the kernel; returns the outputs (fresh row-contiguous arrays, or LaunchOptions::outputs).
  std::vector<Array> operator()(const std::vector<Array>& inputs,
                                const std::vector<Shape>& output_shapes,
                                const std::vector<Dtype>& output_dtypes, Dim3 grid,
                                Dim3 threadgroup, const TemplateArgs& template_args = {},
                                std::optional<double> init_value = std::nullopt,
                                bool verbose = false, const LaunchOptions& options = {}) const;

  /// The kernel with everything but its arrays fixed, checked once: a loop's launches do only
  /// the work that depends on their arrays.
  BoundKernel bind(std::vector<Shape> output_shapes, std::vector<Dtype> output_dtypes, Dim3 grid,
                   Dim3 threadgroup, TemplateArgs template_args = {},
                   std::optional<double> init_value = std::nullopt, bool verbose = false) const;

  /// Builds (and caches) the kernel for inputs of these dtypes and ndims without launching it.
  /// |target| is "cpu", "cuda", "cuda:N", or a CUDA architecture such as "sm_90", which needs
  /// NVRTC but no GPU (the result goes to the disk cache). On CUDA it builds the entry point of
  /// every launch shape, where a call builds the one its launch needs.
  void build(const std::vector<std::pair<Dtype, int>>& input_dtypes_ndims,
             const std::vector<Dtype>& output_dtypes, const TemplateArgs& template_args = {},
             const std::string& target = "cpu") const;

  const std::string& name() const;
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;
  /// "metal_kernel", "cuda_kernel" or "precompiled_cuda_kernel".
  const char* api() const;

 private:
  friend class BoundKernel;
  friend struct CallRecord;
  struct State;
  std::shared_ptr<const KernelSpec> spec_;
  std::shared_ptr<State> state_;
};

/// A kernel's call with its output shapes and dtypes, grid, threadgroup, template arguments and
/// init value fixed (Kernel::bind). It keeps its last launch with outputs given and its last
/// making them: a call of the same kind on arrays laid out as that launch's were (same dtypes,
/// shapes, strides, devices and writability) repeats none of its checks, lookups or packing.
class BoundKernel {
 public:
  /// Runs the kernel on |inputs|; returns the outputs (fresh row-contiguous arrays, or
  /// LaunchOptions::outputs).
  std::vector<Array> operator()(const std::vector<Array>& inputs,
                                const LaunchOptions& options = {}) const;

  const Kernel& kernel() const { return kernel_; }
  const std::vector<Shape>& output_shapes() const;
  const std::vector<Dtype>& output_dtypes() const;

 private:
  friend class Kernel;
  friend struct CallRecord;
  BoundKernel(Kernel kernel, std::shared_ptr<const CallRecord> record);

  Kernel kernel_;
  std::shared_ptr<const CallRecord> record_;  // the settings, and the launches they recorded
};

/// A kernel whose body is Metal Shading Language (the API of mx.fast.metal_kernel).
Kernel metal_kernel(const std::string& name, const std::vector<std::string>& input_names,
                    const std::vector<std::string>& output_names, const std::string& source,
                    const std::string& header = "", bool ensure_row_contiguous = true,
                    bool atomic_outputs = false, CompileOptions compile_options = {});

/// A kernel whose body is CUDA C++ (the API of mx.fast.cuda_kernel).
Kernel cuda_kernel(const std::string& name, const std::vector<std::string>& input_names,
                   const std::vector<std::string>& output_names, const std::string& source,
                   const std::string& header = "", bool ensure_row_contiguous = true,
                   int shared_memory = 0, CompileOptions compile_options = {},
                   bool atomic_outputs = false);

}  // namespace kjit
