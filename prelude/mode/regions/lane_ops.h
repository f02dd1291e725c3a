// SIMD-group and warp operations in the CPU backend's region mode (codegen/regions.h): the body
// runs as loops over a group's threads, split where its lanes meet. Before the meeting each lane
// stores its operand, one of the types below, in a slot; the type's combine reads the slots of
// each simdgroup (32 consecutive threads of the group; the last one may be partial) and writes
// each lane's result; the next loop reads it. Lanes that returned take no part. The results
// are those of cooperative mode (mode/coop/runtime.h), lane order and rounding included.
#pragma once

#include "common/lanes.h"

namespace kjit::lane_ops {

// Calls f(first, end, present) for each segment of |width| lanes of the |n| threads: threads
// [first, end) of the group, present(i) telling whether thread i takes part.
template <class F>
KJIT_INLINE void for_each_segment(unsigned n, unsigned width, const bool* exited, F f) {
  for (unsigned first = 0; first < n; first += width) {
    const unsigned end = first + width < n ? first + width : n;
    f(first, end, [exited](unsigned i) { return !exited || !exited[i]; });
  }
}

// A reduction over each segment of W lanes (W = 32: a simdgroup, 4: a quad), in a butterfly's
// order (lanes::butterfly), as cooperative mode and the GPU's shuffles combine them.
template <class T, class Op, unsigned W>
struct reduction {
  T x;
  using result = T;
  KJIT_INLINE static void combine(const reduction* in, T* out, const bool* exited, unsigned n) {
    for_each_segment(n, W, exited, [&](unsigned first, unsigned end, auto present) {
      T values[W];
      bool here[W];
      bool whole = end - first == W;
      for (unsigned j = 0; j < W; ++j) {
        here[j] = first + j < end && present(first + j);
        whole = whole && here[j];
        if (here[j]) values[j] = in[first + j].x;
      }
      T acc;
      if (whole) {
        acc = lanes::halving<W>(values, Op{});
      } else {
        lanes::butterfly(values, here, W, Op{});
        unsigned from = 0;
        while (from < W && !here[from]) ++from;
        if (from == W) return;
        acc = values[from];
      }
      for (unsigned i = first; i < end; ++i) out[i] = acc;
    });
  }
};

// A scan over each segment of W lanes, in lane order.
template <class T, class Op, bool Inclusive, unsigned W>
struct scan {
  T x;
  using result = T;
  KJIT_INLINE static void combine(const scan* in, T* out, const bool* exited, unsigned n) {
    for_each_segment(n, W, exited, [&](unsigned first, unsigned end, auto present) {
      T acc = Op::template identity<T>();
      for (unsigned i = first; i < end; ++i) {
        if (!present(i)) continue;
        if (Inclusive) acc = Op{}(acc, in[i].x);
        out[i] = acc;
        if (!Inclusive) acc = Op{}(acc, in[i].x);
      }
    });
  }
};

// A lane reads x of lane Source(its lane, arg, width) of its simdgroup, or keeps its own when
// that lane is absent.
template <class T, unsigned (*Source)(unsigned, unsigned, unsigned)>
struct shuffle {
  T x;
  unsigned arg, width;
  using result = T;
  KJIT_INLINE static void combine(const shuffle* in, T* out, const bool* exited, unsigned n) {
    for_each_segment(n, 32, exited, [&](unsigned first, unsigned end, auto present) {
      // A whole simdgroup present: every lane's source is one of its lanes, so each reads it
      // without the checks below (a lane by lane copy; checking first that all lanes shuffle
      // alike, to permute the values in one loop, cost more than it saved).
      bool whole = end - first == 32;
      for (unsigned i = first; i < end; ++i) whole = whole && present(i);
      if (whole) {
        for (unsigned i = first; i < end; ++i) {
          out[i] = in[first + Source(i - first, in[i].arg, in[i].width)].x;
        }
        return;
      }
      for (unsigned i = first; i < end; ++i) {
        const unsigned src = first + Source(i - first, in[i].arg, in[i].width);
        out[i] = src < end && present(src) ? in[src].x : in[i].x;
      }
    });
  }
};

// Metal's shuffle-and-fill: within segments of |width| lanes a lane reads x from |arg| lanes
// away (up: below it, down: above it), or fill from the lane the read wraps around to when it
// leaves the segment; a lane whose source is absent keeps its own x.
template <class T, bool Up>
struct shuffle_and_fill {
  T x, fill;
  unsigned arg, width;
  using result = T;
  KJIT_INLINE static void combine(const shuffle_and_fill* in, T* out, const bool* exited,
                                  unsigned n) {
    for_each_segment(n, 32, exited, [&](unsigned first, unsigned end, auto present) {
      for (unsigned i = first; i < end; ++i) {
        const unsigned id = i - first, d = in[i].arg, w = in[i].width;
        const unsigned src =
            first + (Up ? lanes::rotated_up(id, d, w) : lanes::rotated_down(id, d, w));
        out[i] = src >= end || !present(src)         ? in[i].x
                 : lanes::reads_within(id, d, w, Up) ? in[src].x
                                                     : in[src].fill;
      }
    });
  }
};

// The first present lane's x, to every lane of its segment of W lanes.
template <class T, unsigned W>
struct broadcast_first {
  T x;
  using result = T;
  KJIT_INLINE static void combine(const broadcast_first* in, T* out, const bool* exited,
                                  unsigned n) {
    for_each_segment(n, W, exited, [&](unsigned first, unsigned end, auto present) {
      unsigned from = first;
      while (from < end && !present(from)) ++from;
      for (unsigned i = first; i < end; ++i) out[i] = from < end ? in[from].x : in[i].x;
    });
  }
};

// True for the first present lane of each segment of W lanes.
template <unsigned W>
struct is_first {
  using result = bool;
  KJIT_INLINE static void combine(const is_first*, bool* out, const bool* exited, unsigned n) {
    for_each_segment(n, W, exited, [&](unsigned first, unsigned end, auto present) {
      bool found = false;
      for (unsigned i = first; i < end; ++i) {
        out[i] = !found && present(i);
        found = found || present(i);
      }
    });
  }
};

// Votes of each segment of W lanes: Publish(yes, present) makes the result from the lanes whose
// operand is non-zero and the lanes present, as bits in the segment's lane order.
template <class Result, class Publish, unsigned W>
struct vote {
  bool x;
  using result = Result;
  KJIT_INLINE static void combine(const vote* in, Result* out, const bool* exited, unsigned n) {
    for_each_segment(n, W, exited, [&](unsigned first, unsigned end, auto present) {
      unsigned yes = 0, here = 0;
      for (unsigned i = first; i < end; ++i) {
        if (!present(i)) continue;
        here |= 1u << (i - first);
        if (in[i].x) yes |= 1u << (i - first);
      }
      for (unsigned i = first; i < end; ++i) out[i] = Publish{}(yes, here);
    });
  }
};

// For each lane, the lanes of its warp present whose x has the same bits as its own.
template <class T>
struct match_any {
  T x;
  using result = unsigned;
  KJIT_INLINE static void combine(const match_any* in, unsigned* out, const bool* exited,
                                  unsigned n) {
    for_each_segment(n, 32, exited, [&](unsigned first, unsigned end, auto present) {
      for (unsigned i = first; i < end; ++i) {
        unsigned same = 0;
        for (unsigned j = first; j < end; ++j) {
          if (present(j) && __builtin_memcmp(&in[i].x, &in[j].x, sizeof(T)) == 0) {
            same |= 1u << (j - first);
          }
        }
        out[i] = same;
      }
    });
  }
};

// A meeting of a simdgroup's lanes and nothing more (simdgroup_barrier, __syncwarp): the split
// itself orders what the lanes did before it and after it.
struct meet {
  using result = int;
  KJIT_INLINE static void combine(const meet*, int*, const bool*, unsigned) {}
};

}  // namespace kjit::lane_ops
