// How the CPU backend runs a launch: the library hands each worker a range of groups; within a
// group the threads are iterations of a loop nest over grid positions.
#pragma once

#include "common/thread_ctx.h"
#include "target/cpu/abi.h"

#if !__has_builtin(__builtin_COLUMN)
#include <source_location>
#endif

namespace kjit {

// The context of the thread running now, for APIs that take no arguments
// (cooperative_groups::this_grid()). Set only by kernels that use such an API.
inline thread_local const thread_ctx* current_thread = nullptr;

// Where a call is, as cooperative mode's meeting points need it (a default argument is
// evaluated where the call is): its line, and its column in the low 12 bits, so that two calls
// on one line (in the two branches of an if) are told apart. GCC gives the column only through
// std::source_location.
#if __has_builtin(__builtin_COLUMN)
#define KJIT_CALL_COLUMN __builtin_COLUMN()
#else
#define KJIT_CALL_COLUMN std::source_location::current().column()
#endif
#define KJIT_CALL_SITE                               \
  ((static_cast<unsigned>(__builtin_LINE()) << 12) | \
   (static_cast<unsigned>(KJIT_CALL_COLUMN) & 4095u))

// The line of a call site.
KJIT_INLINE constexpr unsigned call_line(unsigned site) { return site >> 12; }

// The launch's sizes, as each group's context starts from.
KJIT_INLINE thread_ctx launch_ctx(const kjit_cpu_launch* L) {
  thread_ctx t;
  t.grid = uint3(L->grid[0], L->grid[1], L->grid[2]);
  t.group = uint3(L->group[0], L->group[1], L->group[2]);
  t.groups = uint3(L->groups[0], L->groups[1], L->groups[2]);
  return t;
}

// A group of a launch with at most KJIT_CPU_SMALL_GRID threads along each dimension, as region
// mode's second entry point runs them (abi.h). The loops over its threads tell the compiler
// that bound on every position.
struct small_grid_group : thread_ctx {};

// States that |v|, a position in a small grid, is below the bound.
KJIT_INLINE void assume_in_small_grid(unsigned v) {
  if (v >= KJIT_CPU_SMALL_GRID) __builtin_unreachable();
}
template <class Group>
KJIT_INLINE void assume_in_small_grid(const Group&, uint3 v) {
  if constexpr (is_same_v<Group, small_grid_group>) {
    assume_in_small_grid(v.x);
    assume_in_small_grid(v.y);
    assume_in_small_grid(v.z);
  }
}

// A thread of a row of one simdgroup in a small grid, whose loop counts its lane: its
// thread_index_in_simdgroup is that counter, so that an index computed from it stays affine in
// it (the remainder the context computes would not be, for the compiler).
struct lane_counted_thread : thread_ctx {
  unsigned lane;
  KJIT_INLINE unsigned thread_index_in_simdgroup() const { return lane; }
};

// Calls body(t, i) for each thread of the group |group| has entered: its context and its index
// in the group (x fastest, as thread_index_in_threadgroup counts). The loops run over grid
// positions, so that thread_position_in_grid.x is the induction variable itself: indexing with
// it is contiguous and the x loop vectorises. A group of one row (the most common shape) is one
// loop whose counter is the index itself; a taller one counts the index from each row's start,
// 64 bits wide, so that slots indexed by it are contiguous along the row. In a small grid, rows
// of one simdgroup (the (32, n, 1) groups of MLX's kernels) count the lane itself, so that
// inp[row * 1024 + k + thread_index_in_simdgroup] reads consecutive elements.
template <class Group, class Body>
KJIT_INLINE void for_each_thread(const Group& group, Body body) {
  thread_ctx t = group;
  assume_in_small_grid(group, t.group_id);
  assume_in_small_grid(group, t.origin);
  const uint3 stop = t.origin + t.group_size;
  if constexpr (is_same_v<Group, small_grid_group>) {
    if (t.group_size.x == 32u) {
      lane_counted_thread lt{t, 0u};
      unsigned long row = 0;
      for (unsigned z = t.origin.z; z < stop.z; ++z) {
        for (unsigned y = t.origin.y; y < stop.y; ++y, row += 32u) {
          KJIT_THREADS_LOOP
          for (unsigned lane = 0; lane < 32u; ++lane) {
            lt.global_id = uint3(t.origin.x + lane, y, z);
            lt.lane = lane;
            assume_in_small_grid(group, lt.global_id);
            body(lt, row + lane);
          }
        }
      }
      return;
    }
  }
  if (t.group_size.y == 1 && t.group_size.z == 1) {
    const unsigned n = t.group_size.x;
    KJIT_THREADS_LOOP
    for (unsigned i = 0; i < n; ++i) {
      t.global_id = uint3(t.origin.x + i, t.origin.y, t.origin.z);
      assume_in_small_grid(group, t.global_id);
      body(t, i);
    }
    return;
  }
  unsigned long row = 0;
  for (unsigned z = t.origin.z; z < stop.z; ++z) {
    for (unsigned y = t.origin.y; y < stop.y; ++y, row += t.group_size.x) {
      KJIT_THREADS_LOOP
      for (unsigned x = t.origin.x; x < stop.x; ++x) {
        t.global_id = uint3(x, y, z);
        assume_in_small_grid(group, t.global_id);
        body(t, row + (x - t.origin.x));
      }
    }
  }
}

// What a launch checks when each group starts and ends and, in cooperative mode, when a barrier
// opens: nothing, but in a debug build (target/cpu/debug_races.h's group_checks).
struct no_group_checks {
  KJIT_INLINE void begin_group() const {}
  KJIT_INLINE void end_group() const {}
  template <class Lane, class Handle>
  KJIT_INLINE void barrier_opens(const Lane*, const Handle*, const thread_ctx*, unsigned) const {}
};

// Region mode: |group| runs each group in [first, end) whole, given the group's context, a
// GroupCtx (small_grid_group where the launch is one).
template <class GroupCtx = thread_ctx, class Group, class Checks = no_group_checks>
KJIT_INLINE void run_whole_groups(const kjit_cpu_launch* L, unsigned long long first,
                                  unsigned long long end, Group group, Checks checks = {}) {
  GroupCtx t{launch_ctx(L)};
  for (unsigned long long g = first; g < end; ++g) {
    t.enter_group(g);
    t.global_id = t.origin;
    checks.begin_group();
    group(t);
    checks.end_group();
  }
}

// Loop mode: every thread of every group in [first, end) runs |body| to completion in turn.
template <class Body, class Checks = no_group_checks>
KJIT_INLINE void run_groups_loop(const kjit_cpu_launch* L, unsigned long long first,
                                 unsigned long long end, Body body, Checks checks = {}) {
  run_whole_groups(
      L, first, end,
      [&](const thread_ctx& group) __attribute__((always_inline)) {
        for_each_thread(
            group, [&](const thread_ctx& thread, unsigned)
                       __attribute__((always_inline)) { body(thread); });
      },
      checks);
}

// Shape and strides parameters point into the launch record: x_shape[i], x_shape.data(), and a
// pointer where MLX passes one.
template <class T>
struct dims_view {
  const T* p;
  template <class I>
  KJIT_INLINE const T& operator[](I i) const {
    return p[i];
  }
  KJIT_INLINE const T* data() const { return p; }
  KJIT_INLINE operator const T*() const { return p; }
  static KJIT_INLINE dims_view of(const T* at) { return {at}; }
};

}  // namespace kjit

typedef ::kjit::dims_view<int> kjit_shape;
typedef ::kjit::dims_view<int64_t> kjit_strides;
