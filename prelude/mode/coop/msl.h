// Metal's barriers and SIMD-group operations in the CPU backend's cooperative mode: each call
// returns something the body co_awaits (the rewriter adds the co_await); the call's source line
// tells which lanes meet at the same operation.
#pragma once

#include "dialect/msl/names.h"
#include "mode/coop/runtime.h"

namespace metal {
namespace coop_detail {

using ::kjit::coop::lane;

// A simd_vote or quad_vote of each segment.
template <class Vote>
void ballot(lane** lanes, const unsigned* ids, int n) {
  using bits = typename Vote::vote_t;
  ::kjit::coop::combine_votes<bool>(lanes, ids, n, [](lane* l, unsigned yes, unsigned present) {
    ::kjit::coop::set_result(l, Vote{bits(yes), bits(present)});
  });
}

}  // namespace coop_detail

#define KJIT_SITE unsigned kjit_site = KJIT_CALL_SITE
#define KJIT_AT kjit_site

KJIT_INLINE ::kjit::coop::barrier_wait threadgroup_barrier(mem_flags = mem_flags::mem_none,
                                                           KJIT_SITE) {
  return {0, {0, 0}, KJIT_AT};
}
// A simdgroup barrier is a meeting of the simdgroup's lanes only.
KJIT_INLINE ::kjit::coop::simd_wait<int> simdgroup_barrier(mem_flags = mem_flags::mem_none,
                                                           KJIT_SITE) {
  return ::kjit::coop::simd_op(0, KJIT_AT, ::kjit::coop::combine_meet);
}

// The operations of SIMD-groups (W = 32) and quad-groups (W = 4) under their two prefixes.
#define KJIT_REDUCTION(name, op, W)                                                                \
  template <class T>                                                                               \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(T x, KJIT_SITE) {                                    \
    return ::kjit::coop::simd_op(x, KJIT_AT, ::kjit::coop::combine_reduce<T, simd_ops::op>, 0, W); \
  }
#define KJIT_SCAN(name, op, inclusive, W)                                                       \
  template <class T>                                                                            \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(T x, KJIT_SITE) {                                 \
    return ::kjit::coop::simd_op(x, KJIT_AT,                                                    \
                                 ::kjit::coop::combine_scan<T, simd_ops::op, inclusive>, 0, W); \
  }
#define KJIT_SHUFFLE(name, source, W)                                                              \
  template <class T>                                                                               \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(T x, unsigned short arg, KJIT_SITE) {                \
    return ::kjit::coop::simd_op(x, KJIT_AT,                                                       \
                                 ::kjit::coop::combine_shuffle<T, ::kjit::lanes::source>, arg, W); \
  }
#define KJIT_SHUFFLE_AND_FILL(name, up, W)                                            \
  template <class T>                                                                  \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(T x, T fill, unsigned short d,          \
                                              unsigned short modulo = W, KJIT_SITE) { \
    struct pair {                                                                     \
      T x, fill;                                                                      \
    };                                                                                \
    return ::kjit::coop::simd_op<T>(pair{x, fill}, KJIT_AT,                           \
                                    ::kjit::coop::combine_shuffle_and_fill<T, up>, d, \
                                    ::kjit::lanes::segment_width(modulo, W));         \
  }
#define KJIT_MSL_GROUP_OPS(prefix, W, vote)                                                        \
  KJIT_MSL_GROUP_OP_TABLE(prefix, W)                                                               \
  template <class T>                                                                               \
  KJIT_INLINE ::kjit::coop::simd_wait<T> prefix##_broadcast_first(T x, KJIT_SITE) {                \
    return ::kjit::coop::simd_op(x, KJIT_AT, ::kjit::coop::combine_broadcast_first<T>, 0, W);      \
  }                                                                                                \
  KJIT_INLINE ::kjit::coop::simd_wait<bool> prefix##_all(bool b, KJIT_SITE) {                      \
    return ::kjit::coop::simd_op(b, KJIT_AT, ::kjit::coop::combine_reduce<bool, simd_ops::and_op>, \
                                 0, W);                                                            \
  }                                                                                                \
  KJIT_INLINE ::kjit::coop::simd_wait<bool> prefix##_any(bool b, KJIT_SITE) {                      \
    return ::kjit::coop::simd_op(b, KJIT_AT, ::kjit::coop::combine_reduce<bool, simd_ops::or_op>,  \
                                 0, W);                                                            \
  }                                                                                                \
  KJIT_INLINE ::kjit::coop::simd_wait<bool> prefix##_is_first(KJIT_SITE) {                         \
    return ::kjit::coop::simd_op(false, KJIT_AT, ::kjit::coop::combine_is_first, 0, W);            \
  }                                                                                                \
  KJIT_INLINE ::kjit::coop::simd_wait<vote> prefix##_ballot(bool b, KJIT_SITE) {                   \
    return ::kjit::coop::simd_op<vote>(b, KJIT_AT, coop_detail::ballot<vote>, 0, W);               \
  }

KJIT_MSL_GROUP_OPS(simd, 32, simd_vote)
KJIT_MSL_GROUP_OPS(quad, 4, quad_vote)
#undef KJIT_MSL_GROUP_OPS
#undef KJIT_MSL_GROUP_OP_TABLE
#undef KJIT_REDUCTION
#undef KJIT_SCAN
#undef KJIT_SHUFFLE
#undef KJIT_SHUFFLE_AND_FILL
#undef KJIT_SITE
#undef KJIT_AT

}  // namespace metal

namespace kjit_user {
using KJIT_MSL_SIMD_NAMES;
}  // namespace kjit_user
