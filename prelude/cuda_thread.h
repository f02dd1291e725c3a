// How the CUDA backend runs a launch: each block is one group of the kernel's 3-D grid of groups.
// The driver caps a grid of blocks at 65535 in y and z, so the grid of groups is laid out as
// (kjit_cuda_launch::layout):
//   0: as it is;
//   1: a single column of groups (groups.x == 1) taller than the caps: groups y and z as blocks
//      x and y (the common "one group per row" launch);
//   2: any other grid beyond the caps: flattened to blocks in x, decoded in the kernel.
// Threads of an edge group that fall outside the grid return before the body runs.
#include "cuda_abi.h"
#include "thread_ctx.h"

namespace kjit {

// n / d for n < 2^31, with |magic| = {multiplier, shift} precomputed for d on the host.
KJIT_INLINE unsigned divide(unsigned n, const unsigned (&magic)[2]) {
  return (__umulhi(n, magic[0]) + n) >> magic[1];
}

// The thread's context. |OneD| launches (grid in x only) know y and z without looking.
template <bool OneD>
KJIT_INLINE thread_ctx make_thread_ctx(const kjit_cuda_launch& L) {
  thread_ctx t;
  t.grid = uint3(L.grid[0], L.grid[1], L.grid[2]);
  t.group = uint3(L.group[0], L.group[1], L.group[2]);
  t.groups = uint3(L.groups[0], L.groups[1], L.groups[2]);
  if (OneD) {
    t.group_id = uint3(blockIdx.x, 0u, 0u);
    t.origin = uint3(blockIdx.x * L.group[0], 0u, 0u);
    const unsigned left = L.grid[0] - t.origin.x;
    t.group_size = uint3(left < L.group[0] ? left : L.group[0], 1u, 1u);
    t.global_id = uint3(t.origin.x + threadIdx.x, 0u, 0u);
  } else {
    if (L.layout == 0) {
      t.enter_group_at(uint3(blockIdx.x, blockIdx.y, blockIdx.z));
    } else if (L.layout == 1) {
      t.enter_group_at(uint3(0u, blockIdx.x, blockIdx.y));
    } else {
      const unsigned g = blockIdx.x, z = divide(g, L.by_xy);
      const unsigned in_plane = g - z * (L.groups[0] * L.groups[1]);
      const unsigned y = divide(in_plane, L.by_x);
      t.enter_group_at(uint3(in_plane - y * L.groups[0], y, z));
    }
    t.global_id = t.origin + uint3(threadIdx.x, threadIdx.y, threadIdx.z);
  }
  return t;
}

template <bool OneD>
KJIT_INLINE bool in_grid(const thread_ctx& t) {
  if (OneD) return t.global_id.x < t.grid.x;
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
