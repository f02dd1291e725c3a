// CUDA's barriers and warp operations in the CPU backend's cooperative mode (see
// mode/coop/runtime.h): each returns something the body co_awaits; a warp is a simdgroup of 32
// lanes. The masks these functions take are not consulted: the lanes that meet are those that reach
// the call.
#pragma once

#include "dialect/cuda/names.h"
#include "dialect/cuda/on_cpu/runtime.h"
#include "mode/coop/runtime.h"

namespace kjit::cuda_dialect {
namespace coop_detail {

using ::kjit::coop::lane;

// Votes of a whole warp or of a cooperative-groups tile.
inline void ballot(lane** lanes, const unsigned* ids, int n) {
  ::kjit::coop::combine_votes<int>(
      lanes, ids, n, [](lane* l, unsigned yes, unsigned) { ::kjit::coop::set_result(l, yes); });
}
inline void active(lane** lanes, const unsigned* ids, int n) {
  ::kjit::coop::combine_votes<int>(lanes, ids, n, [](lane* l, unsigned, unsigned present) {
    ::kjit::coop::set_result(l, present);
  });
}
inline void any_of(lane** lanes, const unsigned* ids, int n) {
  ::kjit::coop::combine_votes<int>(lanes, ids, n, [](lane* l, unsigned yes, unsigned) {
    ::kjit::coop::set_result(l, int(yes != 0));
  });
}
inline void all_of(lane** lanes, const unsigned* ids, int n) {
  ::kjit::coop::combine_votes<int>(lanes, ids, n, [](lane* l, unsigned yes, unsigned present) {
    ::kjit::coop::set_result(l, int(yes == present));
  });
}

// For each lane, the lanes of its warp present whose operand (a T) has the same bits as its own
// (__match_any_sync); or, with |all|, every lane present when all operands are equal, else 0
// (__match_all_sync).
template <class T, bool All>
void match(lane** lanes, const unsigned* ids, int n) {
  ::kjit::coop::for_each_segment(lanes, ids, n, [&](int first, int end) {
    // The lanes of the segment whose operand has lane |i|'s bits.
    auto same_as = [&](int i) {
      unsigned same = 0;
      for (int j = first; j < end; ++j) {
        if (__builtin_memcmp(lanes[i]->request.value, lanes[j]->request.value, sizeof(T)) == 0) {
          same |= 1u << ids[j] % 32;
        }
      }
      return same;
    };
    unsigned present = 0;
    for (int i = first; i < end; ++i) present |= 1u << ids[i] % 32;
    const bool equal = same_as(first) == present;
    for (int i = first; i < end; ++i) {
      ::kjit::coop::set_result(lanes[i], All ? (equal ? present : 0u) : same_as(i));
    }
  });
}

}  // namespace coop_detail

#define KJIT_SITE unsigned kjit_site = KJIT_CALL_SITE

KJIT_INLINE ::kjit::coop::barrier_wait __syncthreads(KJIT_SITE) { return {0, {0, 0}, kjit_site}; }

#define KJIT_CUDA_TALLY(name, finish)                                        \
  KJIT_INLINE ::kjit::coop::tally_wait<int> name(int predicate, KJIT_SITE) { \
    return {{predicate, {0, 0}, kjit_site}, finish};                         \
  }
KJIT_CUDA_TALLY(__syncthreads_count, [](::kjit::coop::barrier_tally t) { return t.count; })
KJIT_CUDA_TALLY(__syncthreads_and,
                [](::kjit::coop::barrier_tally t) { return int(t.count == t.arrived); })
KJIT_CUDA_TALLY(__syncthreads_or, [](::kjit::coop::barrier_tally t) { return int(t.count != 0); })
#undef KJIT_CUDA_TALLY

KJIT_INLINE ::kjit::coop::simd_wait<int> __syncwarp(unsigned = 0xffffffffu, KJIT_SITE) {
  return ::kjit::coop::simd_op(0, kjit_site, ::kjit::coop::combine_meet);
}

#define KJIT_CUDA_SHUFFLE(name, source)                                                       \
  template <class T>                                                                          \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(unsigned, T v, unsigned arg, int width = 32,    \
                                              KJIT_SITE) {                                    \
    return ::kjit::coop::simd_op(v, kjit_site, ::kjit::coop::combine_shuffle<T, source>, arg, \
                                 ::kjit::lanes::segment_width(width, 32));                    \
  }
KJIT_CUDA_WARP_SHUFFLES(KJIT_CUDA_SHUFFLE)
#undef KJIT_CUDA_SHUFFLE

// Votes over segments of |width| lanes: 32 for the warp functions, N for a tile's.
#define KJIT_CUDA_VOTE(name, T, combine)                                          \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(unsigned, int predicate, KJIT_SITE, \
                                              unsigned width = 32) {              \
    return ::kjit::coop::simd_op<T>(predicate, kjit_site, combine, 0, width);     \
  }
KJIT_CUDA_VOTE(__ballot_sync, unsigned, coop_detail::ballot)
KJIT_CUDA_VOTE(__any_sync, int, coop_detail::any_of)
KJIT_CUDA_VOTE(__all_sync, int, coop_detail::all_of)
#undef KJIT_CUDA_VOTE
KJIT_INLINE ::kjit::coop::simd_wait<unsigned> __activemask(KJIT_SITE) {
  return ::kjit::coop::simd_op<unsigned>(0, kjit_site, coop_detail::active);
}

// Reductions over the warp's lanes present, of unsigned or int values (add, min, max) or of
// unsigned ones (and, or, xor).
#define KJIT_CUDA_REDUCE(name, T, Op)                                                           \
  KJIT_INLINE ::kjit::coop::simd_wait<T> name(unsigned, T v, KJIT_SITE) {                       \
    return ::kjit::coop::simd_op(v, kjit_site,                                                  \
                                 ::kjit::coop::combine_reduce<T, ::cooperative_groups::Op<T>>); \
  }
KJIT_CUDA_WARP_REDUCTIONS(KJIT_CUDA_REDUCE)
#undef KJIT_CUDA_REDUCE

template <class T>
KJIT_INLINE ::kjit::coop::simd_wait<unsigned> __match_any_sync(unsigned, T v, KJIT_SITE) {
  return ::kjit::coop::simd_op<unsigned>(v, kjit_site, coop_detail::match<T, false>);
}
// __match_all_sync's result, which also sets *pred once the lanes have met.
struct match_all_wait : ::kjit::coop::simd_wait<unsigned> {
  int* pred;
  KJIT_INLINE unsigned await_resume() const noexcept {
    const unsigned mask = ::kjit::coop::simd_wait<unsigned>::await_resume();
    *pred = mask != 0;
    return mask;
  }
};
template <class T>
KJIT_INLINE match_all_wait __match_all_sync(unsigned, T v, int* pred, KJIT_SITE) {
  return {::kjit::coop::simd_op<unsigned>(v, kjit_site, coop_detail::match<T, true>), pred};
}

}  // namespace kjit::cuda_dialect

namespace cooperative_groups {

KJIT_INLINE auto thread_block::sync(unsigned site) const {
  return ::kjit::coop::barrier_wait{0, {0, 0}, site};
}

// A tile's operations are the warp's, over segments of N lanes.
template <unsigned N>
KJIT_INLINE auto thread_block_tile<N>::sync(unsigned site) const {
  return ::kjit::cuda_dialect::__syncwarp(0u, site);
}
#define KJIT_TILE_SHUFFLE(member, warp_function, Arg)                                \
  template <unsigned N>                                                              \
  template <class T>                                                                 \
  KJIT_INLINE auto thread_block_tile<N>::member(T v, Arg arg, unsigned site) const { \
    return ::kjit::cuda_dialect::warp_function(0u, v, unsigned(arg), int(N), site);  \
  }
KJIT_TILE_SHUFFLE(shfl, __shfl_sync, int)
KJIT_TILE_SHUFFLE(shfl_up, __shfl_up_sync, unsigned)
KJIT_TILE_SHUFFLE(shfl_down, __shfl_down_sync, unsigned)
KJIT_TILE_SHUFFLE(shfl_xor, __shfl_xor_sync, unsigned)
#undef KJIT_TILE_SHUFFLE
#define KJIT_TILE_VOTE(member, warp_function)                                         \
  template <unsigned N>                                                               \
  KJIT_INLINE auto thread_block_tile<N>::member(int predicate, unsigned site) const { \
    return ::kjit::cuda_dialect::warp_function(0u, predicate, site, N);               \
  }
KJIT_TILE_VOTE(ballot, __ballot_sync)
KJIT_TILE_VOTE(any, __any_sync)
KJIT_TILE_VOTE(all, __all_sync)
#undef KJIT_TILE_VOTE

// The collective free functions (the rewriter awaits them when called as cg::sync and
// cg::reduce). reduce's operation travels to the meeting with the value.
KJIT_INLINE auto sync(const thread_block& block, unsigned site = KJIT_CALL_SITE) {
  return block.sync(site);
}
template <unsigned N>
KJIT_INLINE auto sync(const thread_block_tile<N>& tile, unsigned site = KJIT_CALL_SITE) {
  return tile.sync(site);
}
template <unsigned N, class T, class Op>
KJIT_INLINE auto reduce(const thread_block_tile<N>&, T v, Op op, unsigned site = KJIT_CALL_SITE) {
  static_assert(__is_trivially_copyable(Op) && sizeof(::kjit::coop::reduction<T, Op>) <=
                                                   sizeof(::kjit::coop::simd_request::value),
                "cg::reduce on the CPU: the operation must be trivially copyable and, with the "
                "value, fit in 32 bytes");
  return ::kjit::coop::simd_op<T>(::kjit::coop::reduction<T, Op>{v, op}, site,
                                  ::kjit::coop::combine_butterfly<T, Op>, 0, N);
}

}  // namespace cooperative_groups
#undef KJIT_SITE
