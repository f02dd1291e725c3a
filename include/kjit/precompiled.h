// Kernels compiled elsewhere (nvcc, Triton, CuTe DSL, NVRTC), launched from their PTX or cubin.
#pragma once

#include <kjit/array.h>
#include <kjit/kernel.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kjit {

/// A scalar argument of a precompiled kernel, passed by value: a bool (1 byte), an int (32-bit)
/// or a float (32-bit), as MLX's ScalarArg.
using ScalarArg = std::variant<bool, int, float>;

/// Runs the kernel |name| of |compiled_source| (PTX text, a cubin or a fatbin) and returns its
/// outputs (the API of mx.fast.precompiled_cuda_kernel). The kernel takes, in this order: a
/// pointer to each input (0-d ones too), a pointer to each output, then each of |scalars| by
/// value; no shapes or strides. |grid| counts threads; the CUDA grid is ceil(grid / threadgroup)
/// blocks of |threadgroup| threads, every block whole, as MLX launches it, even where the grid
/// is smaller (the kernel checks its bounds).
/// |shared_memory| is the dynamic shared memory in bytes. It runs on a GPU only: the device is
/// LaunchOptions::device, else the inputs' GPU, else the first GPU; the CPU is an error. Inputs
/// elsewhere are copied there; outputs come back on that GPU, or into LaunchOptions::outputs.
/// The module is loaded once per device, at its first launch, and kept.
std::vector<Array> precompiled_cuda_kernel(
    const std::string& name, const std::string& compiled_source, const std::vector<Array>& inputs,
    const std::vector<Shape>& output_shapes, const std::vector<Dtype>& output_dtypes,
    const std::vector<ScalarArg>& scalars, Dim3 grid, Dim3 threadgroup, int shared_memory = 0,
    std::optional<double> init_value = std::nullopt, bool ensure_row_contiguous = false,
    const LaunchOptions& options = {});

}  // namespace kjit
