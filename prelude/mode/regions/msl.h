// Metal's SIMD-group and quad-group operations in the CPU backend's region mode: each call gives
// the lane's operand as an operation of mode/regions/lane_ops.h, with the signature the Metal
// function has; region mode stores it in a slot and combines the slots where the lanes meet.
#pragma once

#include "dialect/msl/names.h"
#include "mode/regions/lane_ops.h"

namespace metal {
namespace regions_detail {

template <class Vote>
struct publish_vote {
  KJIT_INLINE Vote operator()(unsigned yes, unsigned present) const {
    using bits = typename Vote::vote_t;
    return Vote{bits(yes), bits(present)};
  }
};

}  // namespace regions_detail

KJIT_INLINE ::kjit::lane_ops::meet simdgroup_barrier(mem_flags = mem_flags::mem_none) { return {}; }

#define KJIT_REDUCTION(name, op, W)                                       \
  template <class T>                                                      \
  KJIT_INLINE ::kjit::lane_ops::reduction<T, simd_ops::op, W> name(T x) { \
    return {x};                                                           \
  }
#define KJIT_SCAN(name, op, inclusive, W)                                       \
  template <class T>                                                            \
  KJIT_INLINE ::kjit::lane_ops::scan<T, simd_ops::op, inclusive, W> name(T x) { \
    return {x};                                                                 \
  }
#define KJIT_SHUFFLE(name, source, W)                                                             \
  template <class T>                                                                              \
  KJIT_INLINE ::kjit::lane_ops::shuffle<T, ::kjit::lanes::source> name(T x, unsigned short arg) { \
    return {x, arg, W};                                                                           \
  }
#define KJIT_SHUFFLE_AND_FILL(name, up, W)                                                  \
  template <class T>                                                                        \
  KJIT_INLINE ::kjit::lane_ops::shuffle_and_fill<T, up> name(T x, T fill, unsigned short d, \
                                                             unsigned short modulo = W) {   \
    return {x, fill, d, ::kjit::lanes::segment_width(modulo, W)};                           \
  }
#define KJIT_MSL_GROUP_OPS(prefix, W, vote_type)                                            \
  KJIT_MSL_GROUP_OP_TABLE(prefix, W)                                                        \
  template <class T>                                                                        \
  KJIT_INLINE ::kjit::lane_ops::broadcast_first<T, W> prefix##_broadcast_first(T x) {       \
    return {x};                                                                             \
  }                                                                                         \
  KJIT_INLINE ::kjit::lane_ops::reduction<bool, simd_ops::and_op, W> prefix##_all(bool b) { \
    return {b};                                                                             \
  }                                                                                         \
  KJIT_INLINE ::kjit::lane_ops::reduction<bool, simd_ops::or_op, W> prefix##_any(bool b) {  \
    return {b};                                                                             \
  }                                                                                         \
  KJIT_INLINE ::kjit::lane_ops::is_first<W> prefix##_is_first() { return {}; }              \
  KJIT_INLINE ::kjit::lane_ops::vote<vote_type, regions_detail::publish_vote<vote_type>, W> \
      prefix##_ballot(bool b) {                                                             \
    return {b};                                                                             \
  }

KJIT_MSL_GROUP_OPS(simd, 32, simd_vote)
KJIT_MSL_GROUP_OPS(quad, 4, quad_vote)
#undef KJIT_MSL_GROUP_OPS
#undef KJIT_MSL_GROUP_OP_TABLE
#undef KJIT_REDUCTION
#undef KJIT_SCAN
#undef KJIT_SHUFFLE
#undef KJIT_SHUFFLE_AND_FILL

}  // namespace metal

namespace kjit_user {
using KJIT_MSL_LANE_OP_NAMES;
}  // namespace kjit_user
