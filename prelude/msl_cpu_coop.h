// Metal's barriers and SIMD-group operations in the CPU backend's cooperative mode: each call
// returns something the body co_awaits (the rewriter adds the co_await); the call's source line
// tells which lanes meet at the same operation.
#include "cpu_coop.h"

namespace metal {
namespace coop_detail {

using ::kjit::coop::lane;

inline void first_present(lane** lanes, const unsigned*, int n) {
  for (int i = 0; i < n; ++i) ::kjit::coop::set_result(lanes[i], i == 0);
}
template <class T>
void broadcast_first(lane** lanes, const unsigned*, int n) {
  const T v = ::kjit::coop::operand<T>(lanes[0]);
  for (int i = 0; i < n; ++i) ::kjit::coop::set_result(lanes[i], v);
}

inline void ballot(lane** lanes, const unsigned* ids, int n);

}  // namespace coop_detail

// The lanes of a simdgroup that voted true, and those that voted.
struct simd_vote {
  typedef unsigned long vote_t;
  vote_t bits, active;
  KJIT_INLINE explicit operator vote_t() const { return bits; }
  KJIT_INLINE bool all() const { return bits == active; }
  KJIT_INLINE bool any() const { return bits != 0; }
};

inline void coop_detail::ballot(lane** lanes, const unsigned* ids, int n) {
  simd_vote vote = {0, 0};
  for (int i = 0; i < n; ++i) {
    vote.bits |= simd_vote::vote_t(::kjit::coop::operand<bool>(lanes[i])) << ids[i];
    vote.active |= simd_vote::vote_t(1) << ids[i];
  }
  for (int i = 0; i < n; ++i) ::kjit::coop::set_result(lanes[i], vote);
}

#define KJIT_SITE unsigned kjit_line = KJIT_CALL_SITE
#define KJIT_AT kjit_line

KJIT_INLINE ::kjit::coop::barrier_wait threadgroup_barrier(mem_flags = mem_flags::mem_none) {
  return {};
}
// A simdgroup barrier is a meeting of the simdgroup's lanes only.
KJIT_INLINE ::kjit::coop::simd_wait<int> simdgroup_barrier(mem_flags = mem_flags::mem_none,
                                                           KJIT_SITE) {
  return ::kjit::coop::simd_op(0, KJIT_AT, ::kjit::coop::combine_meet);
}

#define KJIT_SIMD_REDUCTION(name, op)                                              \
  template <class T>                                                               \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(T x, KJIT_SITE) {                    \
    return ::kjit::coop::simd_op(x, KJIT_AT, ::kjit::coop::combine_reduce<T, op>); \
  }
KJIT_SIMD_REDUCTION(simd_sum, simd_ops::add_op)
KJIT_SIMD_REDUCTION(simd_product, simd_ops::mul_op)
KJIT_SIMD_REDUCTION(simd_max, simd_ops::max_op)
KJIT_SIMD_REDUCTION(simd_min, simd_ops::min_op)
KJIT_SIMD_REDUCTION(simd_and, simd_ops::and_op)
KJIT_SIMD_REDUCTION(simd_or, simd_ops::or_op)
KJIT_SIMD_REDUCTION(simd_xor, simd_ops::xor_op)
#undef KJIT_SIMD_REDUCTION

#define KJIT_SIMD_SCAN(name, op, inclusive)                                                 \
  template <class T>                                                                        \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(T x, KJIT_SITE) {                             \
    return ::kjit::coop::simd_op(x, KJIT_AT, ::kjit::coop::combine_scan<T, op, inclusive>); \
  }
KJIT_SIMD_SCAN(simd_prefix_inclusive_sum, simd_ops::add_op, true)
KJIT_SIMD_SCAN(simd_prefix_exclusive_sum, simd_ops::add_op, false)
KJIT_SIMD_SCAN(simd_prefix_inclusive_product, simd_ops::mul_op, true)
KJIT_SIMD_SCAN(simd_prefix_exclusive_product, simd_ops::mul_op, false)
#undef KJIT_SIMD_SCAN

#define KJIT_SIMD_SHUFFLE(name, source)                                                      \
  template <class T>                                                                         \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(T x, unsigned short arg, KJIT_SITE) {          \
    return ::kjit::coop::simd_op(x, KJIT_AT, ::kjit::coop::combine_shuffle<T, source>, arg); \
  }
KJIT_SIMD_SHUFFLE(simd_shuffle, ::kjit::coop::from_lane)
KJIT_SIMD_SHUFFLE(simd_broadcast, ::kjit::coop::from_lane)
KJIT_SIMD_SHUFFLE(simd_shuffle_up, ::kjit::coop::from_below)
KJIT_SIMD_SHUFFLE(simd_shuffle_down, ::kjit::coop::from_above)
KJIT_SIMD_SHUFFLE(simd_shuffle_xor, ::kjit::coop::from_xor)
#undef KJIT_SIMD_SHUFFLE

template <class T>
KJIT_INLINE ::kjit::coop::simd_wait<T> simd_broadcast_first(T x, KJIT_SITE) {
  return ::kjit::coop::simd_op(x, KJIT_AT, coop_detail::broadcast_first<T>);
}
KJIT_INLINE ::kjit::coop::simd_wait<bool> simd_all(bool b, KJIT_SITE) {
  return ::kjit::coop::simd_op(b, KJIT_AT, ::kjit::coop::combine_reduce<bool, simd_ops::and_op>);
}
KJIT_INLINE ::kjit::coop::simd_wait<bool> simd_any(bool b, KJIT_SITE) {
  return ::kjit::coop::simd_op(b, KJIT_AT, ::kjit::coop::combine_reduce<bool, simd_ops::or_op>);
}
KJIT_INLINE ::kjit::coop::simd_wait<simd_vote> simd_ballot(bool b, KJIT_SITE) {
  return ::kjit::coop::simd_op<simd_vote>(b, KJIT_AT, coop_detail::ballot);
}
KJIT_INLINE ::kjit::coop::simd_wait<bool> simd_is_first(KJIT_SITE) {
  return ::kjit::coop::simd_op(false, KJIT_AT, coop_detail::first_present);
}
#undef KJIT_SITE
#undef KJIT_AT

}  // namespace metal

namespace kjit_user {
using KJIT_MSL_SIMD_NAMES;
}  // namespace kjit_user
