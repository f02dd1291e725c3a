// What a kernel body knows about its thread: the launch's sizes and the thread's place in them.
// Both backends fill one of these; the Metal thread attributes (MSL table 5.8) and CUDA's index
// variables are computed from it, under the names the generated code asks for.
#pragma once

#include "common/mlx_utils.h"

namespace kjit {

struct thread_ctx {
  uint3 grid;        // threads per dimension
  uint3 group;       // threads per full group
  uint3 groups;      // groups per dimension
  uint3 group_id;    // threadgroup_position_in_grid
  uint3 origin;      // the group's first thread in the grid
  uint3 global_id;   // thread_position_in_grid
  uint3 group_size;  // the group's extent: partial at the grid's edge

  // Sets everything but global_id for group |g| of the CPU's 64-bit group numbering (x-fastest).
  // A 1-D grid of groups needs no division at all.
  KJIT_INLINE void enter_group(unsigned long long g) {
    if (groups.y == 1 && groups.z == 1) {
      enter_group_at(uint3(static_cast<unsigned>(g), 0u, 0u));
    } else {
      const unsigned long long gx = groups.x, gxy = gx * groups.y;
      enter_group_at(uint3(static_cast<unsigned>(g % gx), static_cast<unsigned>((g % gxy) / gx),
                           static_cast<unsigned>(g / gxy)));
    }
  }

  // Sets everything but global_id for the group at |id|.
  KJIT_INLINE void enter_group_at(uint3 id) {
    group_id = id;
    origin = uint3(group_id.x * group.x, group_id.y * group.y, group_id.z * group.z);
    const uint3 left = grid - origin;
    group_size = uint3(left.x < group.x ? left.x : group.x, left.y < group.y ? left.y : group.y,
                       left.z < group.z ? left.z : group.z);
  }

  KJIT_INLINE uint3 local_id() const { return global_id - origin; }

  KJIT_INLINE uint3 thread_position_in_grid() const { return global_id; }
  KJIT_INLINE uint3 thread_position_in_threadgroup() const { return local_id(); }
  KJIT_INLINE uint3 threadgroup_position_in_grid() const { return group_id; }
  KJIT_INLINE uint3 threads_per_threadgroup() const { return group_size; }
  KJIT_INLINE uint3 dispatch_threads_per_threadgroup() const { return group; }
  KJIT_INLINE uint3 threads_per_grid() const { return grid; }
  KJIT_INLINE uint3 grid_size() const { return grid; }
  KJIT_INLINE uint3 grid_origin() const { return uint3(0u); }
  KJIT_INLINE uint3 threadgroups_per_grid() const { return groups; }
  KJIT_INLINE unsigned thread_index_in_threadgroup() const {
    const uint3 l = local_id();
    return l.x + group_size.x * (l.y + group_size.y * l.z);
  }
  KJIT_INLINE unsigned thread_index_in_simdgroup() const {
    return thread_index_in_threadgroup() % 32u;
  }
  KJIT_INLINE unsigned simdgroup_index_in_threadgroup() const {
    return thread_index_in_threadgroup() / 32u;
  }
  KJIT_INLINE unsigned thread_index_in_quadgroup() const {
    return thread_index_in_threadgroup() % 4u;
  }
  KJIT_INLINE unsigned quadgroup_index_in_threadgroup() const {
    return thread_index_in_threadgroup() / 4u;
  }
  KJIT_INLINE unsigned threads_per_simdgroup() const { return 32u; }
  KJIT_INLINE unsigned thread_execution_width() const { return 32u; }
  KJIT_INLINE unsigned group_threads() const { return group_size.x * group_size.y * group_size.z; }
  KJIT_INLINE unsigned full_group_threads() const { return group.x * group.y * group.z; }
  KJIT_INLINE unsigned simdgroups_per_threadgroup() const { return (group_threads() + 31u) / 32u; }
  KJIT_INLINE unsigned dispatch_simdgroups_per_threadgroup() const {
    return (full_group_threads() + 31u) / 32u;
  }
  KJIT_INLINE unsigned quadgroups_per_threadgroup() const { return (group_threads() + 3u) / 4u; }
  KJIT_INLINE unsigned dispatch_quadgroups_per_threadgroup() const {
    return (full_group_threads() + 3u) / 4u;
  }

  // CUDA's view: the rank of this thread's group and of the thread within a full group.
  KJIT_INLINE unsigned long long block_rank() const {
    return group_id.x +
           static_cast<unsigned long long>(groups.x) * (group_id.y + groups.y * group_id.z);
  }
  KJIT_INLINE unsigned rank_in_block() const {
    const uint3 l = local_id();
    return l.x + group.x * (l.y + group.y * l.z);
  }
};

// 0-d inputs of the CUDA dialect, passed by value; MLX bodies read them as d[0] or *d.
template <class T>
struct by_value {
  T value;
  template <class I>
  KJIT_INLINE const T& operator[](I) const {
    return value;
  }
  KJIT_INLINE const T& operator*() const { return value; }
  KJIT_INLINE operator T() const { return value; }
};

}  // namespace kjit
