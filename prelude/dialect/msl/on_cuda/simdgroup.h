// Metal's barriers and SIMD-group operations on the GPU, over the 32 lanes of a warp. (The
// rewriter turns threadgroup storage into __shared__ arrays; atomics are in dialect/msl/atomics.h.)
// Lanes are the hardware's: kjit numbers a group's threads x-fastest, as CUDA forms warps, so
// thread_index_in_simdgroup is the lane wherever groups are full in y and z.
#pragma once

#include "common/lanes.h"
#include "dialect/msl/names.h"

namespace metal {

// __syncthreads orders group and device memory alike, whatever the flags ask for.
KJIT_INLINE void threadgroup_barrier(mem_flags = mem_flags::mem_none) { __syncthreads(); }
KJIT_INLINE void simdgroup_barrier(mem_flags = mem_flags::mem_none) { __syncwarp(__activemask()); }

namespace simd_detail {

// Not volatile: the lane never changes, so the compiler may reuse one read.
KJIT_INLINE unsigned lane() {
  unsigned id;
  asm("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}

// Values travel as the shuffle intrinsics' own types; half and bfloat through float, vectors
// one component at a time.
template <class T>
KJIT_INLINE T shuffle(unsigned mask, T x, unsigned src) {
  if constexpr (::kjit::is_low_float_v<T>) {
    return T(__shfl_sync(mask, float(x), int(src)));
  } else if constexpr (::kjit::is_same_v<T, bool>) {
    return __shfl_sync(mask, int(x), int(src)) != 0;
  } else if constexpr (sizeof(T) == 8 && !::kjit::is_same_v<T, double>) {
    return T(__shfl_sync(mask, static_cast<long long>(x), int(src)));
  } else if constexpr (sizeof(T) < 4) {
    return T(__shfl_sync(mask, int(x), int(src)));
  } else {
    return __shfl_sync(mask, x, int(src));
  }
}
template <class T, int N>
KJIT_INLINE ::kjit::vec<T, N> shuffle(unsigned mask, ::kjit::vec<T, N> x, unsigned src) {
  for (int i = 0; i < N; ++i) x[i] = shuffle(mask, x[i], src);
  return x;
}
// The lanes of this lane's segment of W lanes (the warp, or its quad), and those of them that
// are active.
template <unsigned W>
KJIT_INLINE unsigned full_segment() {
  return W == 32 ? 0xffffffffu : ((1u << W) - 1u) << (lane() & ~(W - 1u));
}
template <unsigned W>
KJIT_INLINE unsigned segment_mask() {
  return __activemask() & full_segment<W>();
}

// The butterfly step of a reduction over full segments: __shfl_xor_sync needs no lane arithmetic.
template <class T>
KJIT_INLINE T shuffle_xor(unsigned mask, T x, int d) {
  if constexpr (::kjit::is_same_v<T, float> || ::kjit::is_same_v<T, int> ||
                ::kjit::is_same_v<T, unsigned>) {
    return __shfl_xor_sync(mask, x, d);
  } else {
    return shuffle(mask, x, lane() ^ unsigned(d));
  }
}

// Combines every active lane's |x| in the segment of W lanes with |op|; the same result on each.
template <unsigned W, class T, class Op>
KJIT_INLINE T reduce(T x, Op op) {
  const unsigned m = segment_mask<W>();
  if (m == full_segment<W>()) {
    for (int d = W / 2; d >= 1; d >>= 1) x = op(x, shuffle_xor(m, x, d));
    return x;
  }
  // A partial segment: fold the active lanes in lane order.
  T r = shuffle(m, x, unsigned(__ffs(m) - 1));
  for (unsigned rest = m & (m - 1); rest; rest &= rest - 1) {
    r = op(r, shuffle(m, x, unsigned(__ffs(rest) - 1)));
  }
  return r;
}

// Combines the values of the segment's active lanes up to this one (inclusive) or before it.
template <unsigned W, bool Inclusive, class T, class Op>
KJIT_INLINE T scan(T x, Op op, T identity) {
  const unsigned m = segment_mask<W>();
  const unsigned me = lane();
  T acc = identity;
  for (unsigned rest = m; rest; rest &= rest - 1) {
    const unsigned src = unsigned(__ffs(rest) - 1);
    const T v = shuffle(m, x, src);
    if (Inclusive ? src <= me : src < me) acc = op(acc, v);
  }
  return acc;
}

// Reads |x| from the lane |source(lane, arg, W)| gives (see common/lanes.h).
template <unsigned W, unsigned (*Source)(unsigned, unsigned, unsigned), class T>
KJIT_INLINE T exchange(T x, unsigned arg) {
  return shuffle(segment_mask<W>(), x, Source(lane(), arg, W));
}

// Metal's shuffle-and-fill within segments of |modulo| lanes: |x| from |d| lanes away, or |fill|
// from where the read wraps around to when it leaves the segment.
template <unsigned W, bool Up, class T>
KJIT_INLINE T shuffle_and_fill(T x, T fill, unsigned d, unsigned short modulo_given) {
  const unsigned me = lane(), m = segment_mask<W>();
  const unsigned modulo = ::kjit::lanes::segment_width(modulo_given, W);
  const unsigned src =
      Up ? ::kjit::lanes::rotated_up(me, d, modulo) : ::kjit::lanes::rotated_down(me, d, modulo);
  const T own = shuffle(m, x, src), filled = shuffle(m, fill, src);
  return ::kjit::lanes::reads_within(me, d, modulo, Up) ? own : filled;
}

}  // namespace simd_detail

// The operations of SIMD-groups (W = 32) and quad-groups (W = 4) under their two prefixes.
#define KJIT_REDUCTION(name, op, W)                   \
  template <class T>                                  \
  KJIT_INLINE T name(T x) {                           \
    return simd_detail::reduce<W>(x, simd_ops::op{}); \
  }
#define KJIT_SCAN(name, op, inclusive, W)                                         \
  template <class T>                                                              \
  KJIT_INLINE T name(T x) {                                                       \
    return simd_detail::scan<W, inclusive>(x, simd_ops::op{},                     \
                                           simd_ops::op::template identity<T>()); \
  }
/* Shuffles: a lane whose source is out of the segment keeps its own value. */
#define KJIT_SHUFFLE(name, source, W)                               \
  template <class T>                                                \
  KJIT_INLINE T name(T x, unsigned short arg) {                     \
    return simd_detail::exchange<W, ::kjit::lanes::source>(x, arg); \
  }
#define KJIT_SHUFFLE_AND_FILL(name, up, W)                                       \
  template <class T>                                                             \
  KJIT_INLINE T name(T x, T fill, unsigned short d, unsigned short modulo = W) { \
    return simd_detail::shuffle_and_fill<W, up>(x, fill, d, modulo);             \
  }
#define KJIT_MSL_GROUP_OPS(prefix, W)                                                  \
  KJIT_MSL_GROUP_OP_TABLE(prefix, W)                                                   \
  template <class T>                                                                   \
  KJIT_INLINE T prefix##_broadcast_first(T x) {                                        \
    const unsigned m = simd_detail::segment_mask<W>();                                 \
    return simd_detail::shuffle(m, x, unsigned(__ffs(m) - 1));                         \
  }                                                                                    \
  KJIT_INLINE bool prefix##_all(bool b) {                                              \
    return __all_sync(simd_detail::segment_mask<W>(), b) != 0;                         \
  }                                                                                    \
  KJIT_INLINE bool prefix##_any(bool b) {                                              \
    return __any_sync(simd_detail::segment_mask<W>(), b) != 0;                         \
  }                                                                                    \
  KJIT_INLINE bool prefix##_is_first() {                                               \
    return simd_detail::lane() == unsigned(__ffs(simd_detail::segment_mask<W>()) - 1); \
  }

KJIT_MSL_GROUP_OPS(simd, 32)
KJIT_MSL_GROUP_OPS(quad, 4)
#undef KJIT_MSL_GROUP_OPS
#undef KJIT_MSL_GROUP_OP_TABLE
#undef KJIT_REDUCTION
#undef KJIT_SCAN
#undef KJIT_SHUFFLE
#undef KJIT_SHUFFLE_AND_FILL

KJIT_INLINE simd_vote simd_ballot(bool b) {
  const unsigned m = __activemask();
  return {__ballot_sync(m, b), m};
}
KJIT_INLINE quad_vote quad_ballot(bool b) {
  const unsigned m = simd_detail::segment_mask<4>(), shift = simd_detail::lane() & ~3u;
  return {static_cast<unsigned short>(__ballot_sync(m, b) >> shift),
          static_cast<unsigned short>(m >> shift)};
}

}  // namespace metal

namespace kjit_user {
using KJIT_MSL_SIMD_NAMES;
}  // namespace kjit_user
