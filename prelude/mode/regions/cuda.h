// CUDA's warp functions in the CPU backend's region mode: each call gives the lane's operand as
// an operation of mode/regions/lane_ops.h, with the signature the CUDA function has; region mode
// stores it in a slot and combines the slots where the lanes meet. A warp is a simdgroup of 32
// lanes; as in cooperative mode, the masks are not consulted: the lanes that meet are those that
// reach the call.
#pragma once

#include "dialect/cuda/names.h"
#include "dialect/cuda/on_cpu/runtime.h"
#include "mode/regions/lane_ops.h"

namespace kjit::cuda_dialect {
namespace regions_detail {

struct ballot_bits {
  KJIT_INLINE unsigned operator()(unsigned yes, unsigned) const { return yes; }
};
struct any_set {
  KJIT_INLINE int operator()(unsigned yes, unsigned) const { return yes != 0; }
};
struct all_set {
  KJIT_INLINE int operator()(unsigned yes, unsigned present) const { return yes == present; }
};
struct present_bits {
  KJIT_INLINE unsigned operator()(unsigned, unsigned present) const { return present; }
};

}  // namespace regions_detail

KJIT_INLINE ::kjit::lane_ops::meet __syncwarp(unsigned = 0xffffffffu) { return {}; }

#define KJIT_CUDA_SHUFFLE(name, source)                                              \
  template <class T>                                                                 \
  KJIT_INLINE ::kjit::lane_ops::shuffle<T, source> name(unsigned, T v, unsigned arg, \
                                                        int width = 32) {            \
    return {v, arg, ::kjit::lanes::segment_width(width, 32)};                        \
  }
KJIT_CUDA_WARP_SHUFFLES(KJIT_CUDA_SHUFFLE)
#undef KJIT_CUDA_SHUFFLE

#define KJIT_CUDA_VOTE(name, T, publish)                                                   \
  KJIT_INLINE ::kjit::lane_ops::vote<T, regions_detail::publish, 32> name(unsigned,        \
                                                                          int predicate) { \
    return {predicate != 0};                                                               \
  }
KJIT_CUDA_VOTE(__ballot_sync, unsigned, ballot_bits)
KJIT_CUDA_VOTE(__any_sync, int, any_set)
KJIT_CUDA_VOTE(__all_sync, int, all_set)
#undef KJIT_CUDA_VOTE
KJIT_INLINE ::kjit::lane_ops::vote<unsigned, regions_detail::present_bits, 32> __activemask() {
  return {true};
}

// Reductions over the warp's lanes present, of unsigned or int values (add, min, max) or of
// unsigned ones (and, or, xor).
#define KJIT_CUDA_REDUCE(name, T, Op)                                                        \
  KJIT_INLINE ::kjit::lane_ops::reduction<T, ::cooperative_groups::Op<T>, 32> name(unsigned, \
                                                                                   T v) {    \
    return {v};                                                                              \
  }
KJIT_CUDA_WARP_REDUCTIONS(KJIT_CUDA_REDUCE)
#undef KJIT_CUDA_REDUCE

template <class T>
KJIT_INLINE ::kjit::lane_ops::match_any<T> __match_any_sync(unsigned, T v) {
  return {v};
}

}  // namespace kjit::cuda_dialect
