// Metal's barriers and SIMD-group operations on the GPU, over the 32 lanes of a warp. (The
// rewriter turns threadgroup storage into __shared__ arrays; atomics are in msl_atomics.h.) Lanes
// are the hardware's: kjit numbers a group's threads x-fastest, as CUDA forms warps, so
// thread_index_in_simdgroup is the lane wherever groups are full in y and z.
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
// The butterfly step of a full-warp reduction: __shfl_xor_sync needs no lane arithmetic.
template <class T>
KJIT_INLINE T shuffle_xor(T x, int d) {
  if constexpr (::kjit::is_same_v<T, float> || ::kjit::is_same_v<T, int> ||
                ::kjit::is_same_v<T, unsigned>) {
    return __shfl_xor_sync(0xffffffffu, x, d);
  } else {
    return shuffle(0xffffffffu, x, lane() ^ unsigned(d));
  }
}

// Combines every active lane's |x| with |op|; the same result on every lane.
template <class T, class Op>
KJIT_INLINE T reduce(T x, Op op) {
  const unsigned m = __activemask();
  if (m == 0xffffffffu) {
    for (int d = 16; d >= 1; d >>= 1) x = op(x, shuffle_xor(x, d));
    return x;
  }
  // A partial warp: fold the active lanes in lane order.
  T r = shuffle(m, x, unsigned(__ffs(m) - 1));
  for (unsigned rest = m & (m - 1); rest; rest &= rest - 1) {
    r = op(r, shuffle(m, x, unsigned(__ffs(rest) - 1)));
  }
  return r;
}

// Combines the values of the active lanes up to this one (inclusive) or before it.
template <bool Inclusive, class T, class Op>
KJIT_INLINE T scan(T x, Op op, T identity) {
  const unsigned m = __activemask();
  const unsigned me = lane();
  T acc = identity;
  for (unsigned rest = m; rest; rest &= rest - 1) {
    const unsigned src = unsigned(__ffs(rest) - 1);
    const T v = shuffle(m, x, src);
    if (Inclusive ? src <= me : src < me) acc = op(acc, v);
  }
  return acc;
}

}  // namespace simd_detail

#define KJIT_SIMD_REDUCTION(name, op)    \
  template <class T>                     \
  KJIT_INLINE T name(T x) {              \
    return simd_detail::reduce(x, op{}); \
  }
KJIT_SIMD_REDUCTION(simd_sum, simd_ops::add_op)
KJIT_SIMD_REDUCTION(simd_product, simd_ops::mul_op)
KJIT_SIMD_REDUCTION(simd_max, simd_ops::max_op)
KJIT_SIMD_REDUCTION(simd_min, simd_ops::min_op)
KJIT_SIMD_REDUCTION(simd_and, simd_ops::and_op)
KJIT_SIMD_REDUCTION(simd_or, simd_ops::or_op)
KJIT_SIMD_REDUCTION(simd_xor, simd_ops::xor_op)
#undef KJIT_SIMD_REDUCTION

#define KJIT_SIMD_SCAN(name, op, inclusive)                                   \
  template <class T>                                                          \
  KJIT_INLINE T name(T x) {                                                   \
    return simd_detail::scan<inclusive>(x, op{}, op::template identity<T>()); \
  }
KJIT_SIMD_SCAN(simd_prefix_inclusive_sum, simd_ops::add_op, true)
KJIT_SIMD_SCAN(simd_prefix_exclusive_sum, simd_ops::add_op, false)
KJIT_SIMD_SCAN(simd_prefix_inclusive_product, simd_ops::mul_op, true)
KJIT_SIMD_SCAN(simd_prefix_exclusive_product, simd_ops::mul_op, false)
#undef KJIT_SIMD_SCAN

// Shuffles: a lane out of range keeps its own value (CUDA's rule and Metal's).
template <class T>
KJIT_INLINE T simd_shuffle(T x, unsigned short lane) {
  return simd_detail::shuffle(__activemask(), x, lane);
}
template <class T>
KJIT_INLINE T simd_broadcast(T x, unsigned short lane) {
  return simd_detail::shuffle(__activemask(), x, lane);
}
template <class T>
KJIT_INLINE T simd_broadcast_first(T x) {
  const unsigned m = __activemask();
  return simd_detail::shuffle(m, x, unsigned(__ffs(m) - 1));
}
template <class T>
KJIT_INLINE T simd_shuffle_down(T x, unsigned short delta) {
  const unsigned me = simd_detail::lane();
  return simd_detail::shuffle(__activemask(), x, me + delta < 32 ? me + delta : me);
}
template <class T>
KJIT_INLINE T simd_shuffle_up(T x, unsigned short delta) {
  const unsigned me = simd_detail::lane();
  return simd_detail::shuffle(__activemask(), x, me >= delta ? me - delta : me);
}
template <class T>
KJIT_INLINE T simd_shuffle_xor(T x, unsigned short mask) {
  return simd_detail::shuffle(__activemask(), x, (simd_detail::lane() ^ mask) & 31u);
}
KJIT_INLINE bool simd_all(bool b) { return __all_sync(__activemask(), b) != 0; }
KJIT_INLINE bool simd_any(bool b) { return __any_sync(__activemask(), b) != 0; }
KJIT_INLINE bool simd_is_first() {
  return simd_detail::lane() == unsigned(__ffs(__activemask()) - 1);
}
struct simd_vote {
  typedef unsigned long vote_t;
  vote_t bits;
  KJIT_INLINE explicit operator vote_t() const { return bits; }
  KJIT_INLINE bool all() const { return bits == __activemask(); }
  KJIT_INLINE bool any() const { return bits != 0; }
};
KJIT_INLINE simd_vote simd_ballot(bool b) { return {__ballot_sync(__activemask(), b)}; }

}  // namespace metal

namespace kjit_user {
using KJIT_MSL_SIMD_NAMES;
}  // namespace kjit_user
