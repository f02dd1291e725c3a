// The kernel as MLX generates it for a call (mlx/backend/common/metal_kernel.cpp for Metal,
// mlx/backend/cuda/custom_kernel.cpp for CUDA): what verbose=True shows first, so that a user
// sees the signature MLX would give the body next to the source kjit compiles.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "codegen/kernel_spec.h"
#include "codegen/source.h"

namespace kjit::codegen {

/// The name MLX gives the kernel of |spec| for |call|. Metal: custom_kernel_<name>, then the
/// template arguments ("_float_3_1"), then each input's type (with "s" for a 0-d input and "c"
/// for one of fewer than 8 elements, which MLX passes in the constant address space), then each
/// output's type. CUDA: custom_kernel_<name> then the template arguments ("_float_3_t").
/// |input_sizes| are the inputs' element counts.
std::string mlx_kernel_name(const KernelSpec& spec, const CallSignature& call,
                            std::span<const int64_t> input_sizes);

/// The whole kernel source MLX generates for |call|: for Metal the header, the [[kernel]]
/// function with its [[buffer(i)]] and attribute parameters, and the template instantiation
/// that gives it its [[host_name]]; for CUDA the includes MLX adds, the header, and the
/// __global__ function in namespace mlx::core::cu with the template arguments declared at the
/// top of the body. Shapes, strides and attributes are those kjit passes (whole identifiers the
/// body names).
std::string mlx_source(const KernelSpec& spec, const CallSignature& call,
                       std::span<const int64_t> input_sizes);

}  // namespace kjit::codegen
