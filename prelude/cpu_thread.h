// How the CPU backend runs the threads of a launch: groups are numbered x-fastest, each group is
// a loop nest over its (possibly partial) extent, and a kernel body sees its thread through a
// thread context. The library hands each worker a range of groups.
#include "abi.h"
#include "mlx_utils.h"

namespace kjit {

struct thread_ctx {
  const kjit_cpu_launch* launch;
  uint3 group_id;    // threadgroup_position_in_grid
  uint3 origin;      // the group's first thread in the grid
  uint3 global_id;   // thread_position_in_grid
  uint3 group_size;  // threads_per_threadgroup: the partial size at the grid's edge

  KJIT_INLINE uint3 local_id() const { return global_id - origin; }

  // Metal's thread attributes (MSL table 5.8), named as the generated code asks for them.
  KJIT_INLINE uint3 dispatch_threads_per_threadgroup() const {
    return uint3(launch->group[0], launch->group[1], launch->group[2]);
  }
  KJIT_INLINE uint3 threads_per_grid() const {
    return uint3(launch->grid[0], launch->grid[1], launch->grid[2]);
  }
  KJIT_INLINE uint3 grid_size() const { return threads_per_grid(); }
  KJIT_INLINE uint3 grid_origin() const { return uint3(0u); }
  KJIT_INLINE uint3 threadgroups_per_grid() const {
    return uint3(launch->groups[0], launch->groups[1], launch->groups[2]);
  }
  KJIT_INLINE uint3 threadgroup_position_in_grid() const { return group_id; }
  KJIT_INLINE uint3 thread_position_in_threadgroup() const { return local_id(); }
  KJIT_INLINE uint3 threads_per_threadgroup() const { return group_size; }
  KJIT_INLINE uint3 thread_position_in_grid() const { return global_id; }
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
  KJIT_INLINE unsigned full_group_threads() const {
    return launch->group[0] * launch->group[1] * launch->group[2];
  }
  KJIT_INLINE unsigned simdgroups_per_threadgroup() const { return (group_threads() + 31u) / 32u; }
  KJIT_INLINE unsigned dispatch_simdgroups_per_threadgroup() const {
    return (full_group_threads() + 31u) / 32u;
  }
  KJIT_INLINE unsigned quadgroups_per_threadgroup() const { return (group_threads() + 3u) / 4u; }
  KJIT_INLINE unsigned dispatch_quadgroups_per_threadgroup() const {
    return (full_group_threads() + 3u) / 4u;
  }
};

// The context of the thread running now, for APIs that take no arguments
// (cooperative_groups::this_grid()). Set only by kernels that use such an API.
inline thread_local const thread_ctx* current_thread = nullptr;

// Loop mode: every thread of every group in [first, end) runs |body| to completion in turn.
template <class Body>
KJIT_INLINE void run_groups_loop(const kjit_cpu_launch* L, unsigned long long first,
                                 unsigned long long end, Body body) {
  thread_ctx t;
  t.launch = L;
  const unsigned long long gx = L->groups[0], gy = L->groups[1];
  for (unsigned long long g = first; g < end; ++g) {
    t.group_id = uint3(static_cast<unsigned>(g % gx), static_cast<unsigned>((g / gx) % gy),
                       static_cast<unsigned>(g / (gx * gy)));
    t.origin =
        uint3(t.group_id.x * L->group[0], t.group_id.y * L->group[1], t.group_id.z * L->group[2]);
    const uint3 left = uint3(L->grid[0], L->grid[1], L->grid[2]) - t.origin;
    t.group_size = uint3(left.x < L->group[0] ? left.x : L->group[0],
                         left.y < L->group[1] ? left.y : L->group[1],
                         left.z < L->group[2] ? left.z : L->group[2]);
    const uint3 stop = t.origin + t.group_size;
    // The loops run over grid positions, so that thread_position_in_grid.x is the induction
    // variable itself: indexing with it is contiguous and the x loop vectorises.
    for (unsigned z = t.origin.z; z < stop.z; ++z)
      for (unsigned y = t.origin.y; y < stop.y; ++y)
        for (unsigned x = t.origin.x; x < stop.x; ++x) {
          t.global_id = uint3(x, y, z);
          body(t);
        }
  }
}

}  // namespace kjit

// Parameter types of generated signatures: x_shape / x_strides, and 0-d inputs of the CUDA
// dialect, which MLX bodies read as d[0] or *d.
typedef ::kjit::dims_view<int> kjit_shape;
typedef ::kjit::dims_view<int64_t> kjit_strides;

namespace kjit {
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
