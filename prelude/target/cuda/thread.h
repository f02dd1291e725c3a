// How the CUDA backend runs a launch: each block is one group of the kernel's 3-D grid of groups,
// laid out as |Layout| (kjit_cuda_layout) says. A kernel has an entry point per layout and per
// whether every group is |Full| (the grid a multiple of the group size in each dimension): then
// no thread needs the edge arithmetic. Threads of an edge group that fall outside the grid
// return before the body runs.
#pragma once

#include "common/thread_ctx.h"
#include "target/cuda/abi.h"

namespace kjit {

// n / d for n < 2^31, with |magic| = {multiplier, shift} precomputed for d on the host.
KJIT_INLINE unsigned divide(unsigned n, const unsigned (&magic)[2]) {
  return (__umulhi(n, magic[0]) + n) >> magic[1];
}

// CUDA's uint3 of kjit's (what the body's blockIdx and gridDim are).
KJIT_INLINE ::uint3 cuda_uint3(uint3 v) { return make_uint3(v.x, v.y, v.z); }

// The position of this block's group in the grid of groups.
template <unsigned Layout>
KJIT_INLINE uint3 group_of_block(const kjit_cuda_launch& L) {
  if (Layout == kjit_cuda_row) return uint3(blockIdx.x, 0u, 0u);
  if (Layout == kjit_cuda_blocks) return uint3(blockIdx.x, blockIdx.y, blockIdx.z);
  if (Layout == kjit_cuda_column) return uint3(0u, blockIdx.x, blockIdx.y);
  const unsigned g = blockIdx.x, z = divide(g, L.by_xy);
  const unsigned in_plane = g - z * (L.groups[0] * L.groups[1]);
  const unsigned y = divide(in_plane, L.by_x);
  return uint3(in_plane - y * L.groups[0], y, z);
}

template <unsigned Layout, bool Full>
KJIT_INLINE thread_ctx make_thread_ctx(const kjit_cuda_launch& L) {
  thread_ctx t;
  t.grid = uint3(L.grid[0], L.grid[1], L.grid[2]);
  t.group = uint3(L.group[0], L.group[1], L.group[2]);
  t.groups = uint3(L.groups[0], L.groups[1], L.groups[2]);
  const uint3 id = group_of_block<Layout>(L);
  if (Layout == kjit_cuda_row) {
    // y and z are 1 throughout.
    t.group_id = id;
    t.origin = uint3(id.x * t.group.x, 0u, 0u);
    const unsigned left = t.grid.x - t.origin.x;
    t.group_size = uint3(Full || left >= t.group.x ? t.group.x : left, 1u, 1u);
    t.global_id = uint3(t.origin.x + threadIdx.x, 0u, 0u);
    return t;
  }
  if (Full) {
    t.group_id = id;
    t.origin = uint3(id.x * t.group.x, id.y * t.group.y, id.z * t.group.z);
    t.group_size = t.group;
  } else {
    t.enter_group_at(id);
  }
  t.global_id = t.origin + uint3(threadIdx.x, threadIdx.y, threadIdx.z);
  return t;
}

template <unsigned Layout, bool Full>
KJIT_INLINE bool in_grid(const thread_ctx& t) {
  if (Full) return true;
  if (Layout == kjit_cuda_row) return t.global_id.x < t.grid.x;
  return t.global_id.x < t.grid.x && t.global_id.y < t.grid.y && t.global_id.z < t.grid.z;
}

// Shape and strides parameters, passed by value: x_shape[i], x_shape.data(), and a pointer where
// MLX passes one.
template <class T>
struct dims_array {
  T v[10];
  template <class I>
  KJIT_INLINE const T& operator[](I i) const {
    return v[i];
  }
  KJIT_INLINE const T* data() const { return v; }
  KJIT_INLINE operator const T*() const { return v; }
};

}  // namespace kjit

typedef ::kjit::dims_array<int> kjit_shape;
typedef ::kjit::dims_array<int64_t> kjit_strides;
