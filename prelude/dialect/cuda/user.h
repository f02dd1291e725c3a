// What a cuda_kernel body sees, on every target.
#pragma once

#include "dialect/cuda/mlx_utils.h"

// The cooperative groups a body asks for; each target defines their types
// (dialect/cuda/on_cpu/runtime.h, dialect/cuda/on_cuda/cooperative_groups.h).
namespace cooperative_groups {
template <unsigned N>
KJIT_INLINE thread_block_tile<N> tiled_partition(const thread_block&) {
  return {};
}
KJIT_INLINE grid_group this_grid() { return {}; }
KJIT_INLINE thread_block this_thread_block() { return {}; }
}  // namespace cooperative_groups

namespace kjit_user {
using namespace ::kjit::cuda_dialect;
namespace cg = ::cooperative_groups;
using ::kjit::ceildiv, ::kjit::elem_to_loc, ::kjit::elem_to_loc_1, ::kjit::elem_to_loc_2,
    ::kjit::elem_to_loc_3;
// MLX's CUDA names over the ones every dialect sees: the elem_to_loc of several arrays beside the
// one of one array, and the complex64_t with real() and imag() in place of the Metal one.
using ::kjit::cuda_dialect::elem_to_loc, ::kjit::cuda_dialect::complex64_t,
    ::kjit::cuda_dialect::Limits;
}  // namespace kjit_user
