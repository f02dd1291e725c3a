// CUDA's barriers and warp operations in the CPU backend's cooperative mode (see cpu_coop.h):
// each returns something the body co_awaits; a warp is a simdgroup of 32 lanes. The masks these
// functions take are not consulted: the lanes that meet are those that reach the call.
#include "cpu_coop.h"

namespace kjit::cuda_dialect {
namespace coop_detail {

using ::kjit::coop::lane;

inline unsigned from_lane(unsigned, unsigned arg) { return arg; }
inline unsigned from_below(unsigned id, unsigned arg) { return id >= arg ? id - arg : id; }
inline unsigned from_above(unsigned id, unsigned arg) { return id + arg < 32 ? id + arg : id; }
inline unsigned from_xor(unsigned id, unsigned arg) { return (id ^ arg) & 31u; }

inline void meet(lane**, const unsigned*, int, unsigned) {}
inline void any_of(lane** lanes, const unsigned*, int n, unsigned) {
  int r = 0;
  for (int i = 0; i < n; ++i) r |= ::kjit::coop::operand<int>(lanes[i]) != 0;
  for (int i = 0; i < n; ++i) ::kjit::coop::set_result(lanes[i], r);
}
inline void all_of(lane** lanes, const unsigned*, int n, unsigned) {
  int r = 1;
  for (int i = 0; i < n; ++i) r &= ::kjit::coop::operand<int>(lanes[i]) != 0;
  for (int i = 0; i < n; ++i) ::kjit::coop::set_result(lanes[i], r);
}
inline void ballot(lane** lanes, const unsigned* ids, int n, unsigned) {
  unsigned bits = 0;
  for (int i = 0; i < n; ++i)
    bits |= (::kjit::coop::operand<int>(lanes[i]) != 0 ? 1u : 0u) << ids[i];
  for (int i = 0; i < n; ++i) ::kjit::coop::set_result(lanes[i], bits);
}

}  // namespace coop_detail

#define KJIT_SITE unsigned kjit_line = __builtin_LINE()

KJIT_INLINE ::kjit::coop::barrier_wait __syncthreads() { return {}; }
KJIT_INLINE ::kjit::coop::simd_wait<int> __syncwarp(unsigned = 0xffffffffu, KJIT_SITE) {
  return ::kjit::coop::simd_op(0, kjit_line, coop_detail::meet);
}

#define KJIT_CUDA_SHUFFLE(name, source)                                                           \
  template <class T>                                                                              \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(unsigned, T v, unsigned arg, int = 32, KJIT_SITE) { \
    return ::kjit::coop::simd_op(v, kjit_line, ::kjit::coop::combine_shuffle<T, source>, arg);    \
  }
KJIT_CUDA_SHUFFLE(__shfl_sync, coop_detail::from_lane)
KJIT_CUDA_SHUFFLE(__shfl_up_sync, coop_detail::from_below)
KJIT_CUDA_SHUFFLE(__shfl_down_sync, coop_detail::from_above)
KJIT_CUDA_SHUFFLE(__shfl_xor_sync, coop_detail::from_xor)
#undef KJIT_CUDA_SHUFFLE

KJIT_INLINE ::kjit::coop::simd_wait<unsigned> __ballot_sync(unsigned, int predicate, KJIT_SITE) {
  return {::kjit::coop::simd_op(predicate, kjit_line, coop_detail::ballot).me};  // bits out
}
KJIT_INLINE ::kjit::coop::simd_wait<int> __any_sync(unsigned, int predicate, KJIT_SITE) {
  return ::kjit::coop::simd_op(predicate, kjit_line, coop_detail::any_of);
}
KJIT_INLINE ::kjit::coop::simd_wait<int> __all_sync(unsigned, int predicate, KJIT_SITE) {
  return ::kjit::coop::simd_op(predicate, kjit_line, coop_detail::all_of);
}
#undef KJIT_SITE

}  // namespace kjit::cuda_dialect
