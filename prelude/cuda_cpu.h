// CUDA C++ on the CPU: execution-space qualifiers, the index types, the math library's float
// functions and intrinsics, atomics, and cooperative_groups basics over the running thread's
// context.
#include "atomics.h"
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))

namespace kjit {
// CUDA's dynamic shared memory (extern __shared__) on the CPU, in loop and cooperative mode
// alike: one buffer per worker.
inline unsigned char* dynamic_shared(unsigned long bytes) {
  static thread_local unsigned char* buffer = nullptr;
  static thread_local unsigned long size = 0;
  if (size < bytes) {
    buffer = static_cast<unsigned char*>(__builtin_realloc(buffer, bytes));
    size = bytes;
  }
  return buffer;
}
}  // namespace kjit

namespace kjit::cuda_dialect {

typedef ::kjit::uint3 uint3;
typedef ::kjit::uint3 dim3;

using KJIT_MATH_NAMES;

#define KJIT_CUDA_F1(name) \
  KJIT_INLINE float name##f(float x) { return ::kjit::name(x); }
KJIT_CUDA_F1(exp)
KJIT_CUDA_F1(exp2)
KJIT_CUDA_F1(expm1)
KJIT_CUDA_F1(log)
KJIT_CUDA_F1(log2)
KJIT_CUDA_F1(log10)
KJIT_CUDA_F1(log1p)
KJIT_CUDA_F1(sqrt)
KJIT_CUDA_F1(rsqrt)
KJIT_CUDA_F1(cbrt)
KJIT_CUDA_F1(sin)
KJIT_CUDA_F1(cos)
KJIT_CUDA_F1(tan)
KJIT_CUDA_F1(asin)
KJIT_CUDA_F1(acos)
KJIT_CUDA_F1(atan)
KJIT_CUDA_F1(sinh)
KJIT_CUDA_F1(cosh)
KJIT_CUDA_F1(tanh)
KJIT_CUDA_F1(erf)
KJIT_CUDA_F1(erfc)
KJIT_CUDA_F1(floor)
KJIT_CUDA_F1(ceil)
KJIT_CUDA_F1(trunc)
KJIT_CUDA_F1(round)
KJIT_CUDA_F1(rint)
KJIT_CUDA_F1(fabs)
#undef KJIT_CUDA_F1
#define KJIT_CUDA_F2(name) \
  KJIT_INLINE float name##f(float x, float y) { return ::kjit::name(x, y); }
KJIT_CUDA_F2(pow)
KJIT_CUDA_F2(atan2)
KJIT_CUDA_F2(fmod)
KJIT_CUDA_F2(fmax)
KJIT_CUDA_F2(fmin)
KJIT_CUDA_F2(copysign)
KJIT_CUDA_F2(hypot)
#undef KJIT_CUDA_F2
KJIT_INLINE float fmaf(float a, float b, float c) { return ::kjit::fma(a, b, c); }
// Intrinsics: on the CPU the approximate forms are the exact ones.
KJIT_INLINE float __expf(float x) { return ::kjit::exp(x); }
KJIT_INLINE float __logf(float x) { return ::kjit::log(x); }
KJIT_INLINE float __sinf(float x) { return ::kjit::sin(x); }
KJIT_INLINE float __cosf(float x) { return ::kjit::cos(x); }
KJIT_INLINE float __tanf(float x) { return ::kjit::tan(x); }
KJIT_INLINE float __powf(float x, float y) { return ::kjit::pow(x, y); }
KJIT_INLINE float __fdividef(float x, float y) { return x / y; }
KJIT_INLINE float __frcp_rn(float x) { return 1.0f / x; }
KJIT_INLINE float __fsqrt_rn(float x) { return ::kjit::sqrt(x); }
KJIT_INLINE float __saturatef(float x) { return ::kjit::clamp(x, 0.0f, 1.0f); }

// Integer intrinsics.
KJIT_INLINE int __popc(unsigned x) { return __builtin_popcount(x); }
KJIT_INLINE int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
KJIT_INLINE int __clz(int x) { return x ? __builtin_clz(static_cast<unsigned>(x)) : 32; }
KJIT_INLINE int __clzll(long long x) {
  return x ? __builtin_clzll(static_cast<unsigned long long>(x)) : 64;
}
KJIT_INLINE int __ffs(int x) { return __builtin_ffs(x); }
KJIT_INLINE int __ffsll(long long x) { return __builtin_ffsll(x); }
KJIT_INLINE unsigned long long __brevll(unsigned long long x) {
  unsigned long long r = 0;
  for (int b = 0; b < 64; ++b) r |= ((x >> b) & 1ull) << (63 - b);
  return r;
}
KJIT_INLINE unsigned __brev(unsigned x) { return static_cast<unsigned>(__brevll(x) >> 32); }
KJIT_INLINE unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
KJIT_INLINE int __mulhi(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) * b) >> 32);
}
KJIT_INLINE unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
KJIT_INLINE long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
// The low 24 bits of each operand (sign-extended for __mul24), multiplied; the low 32 bits kept.
KJIT_INLINE int __mul24(int a, int b) {
  const int a24 = static_cast<int>(static_cast<unsigned>(a) << 8) >> 8;
  const int b24 = static_cast<int>(static_cast<unsigned>(b) << 8) >> 8;
  return static_cast<int>(static_cast<unsigned>(a24) * static_cast<unsigned>(b24));
}
KJIT_INLINE unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
// Byte k of the result is byte (s >> 4k) & 7 of the eight bytes of y:x.
KJIT_INLINE unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long bytes = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int k = 0; k < 4; ++k) r |= ((bytes >> (8 * ((s >> (4 * k)) & 7))) & 0xffu) << (8 * k);
  return r;
}
KJIT_INLINE unsigned __sad(int x, int y, unsigned z) {
  return (x > y ? static_cast<unsigned>(x) - static_cast<unsigned>(y)
                : static_cast<unsigned>(y) - static_cast<unsigned>(x)) +
         z;
}
KJIT_INLINE unsigned __usad(unsigned x, unsigned y, unsigned z) {
  return (x > y ? x - y : y - x) + z;
}
// The high (left) or low (right) word of hi:lo shifted by |shift|: modulo 32, or clamped to 32
// in the forms ending in c.
KJIT_INLINE unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((both << (shift & 31)) >> 32);
}
KJIT_INLINE unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  return shift >= 32 ? lo : __funnelshift_l(lo, hi, shift);
}
KJIT_INLINE unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long both = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(both >> (shift & 31));
}
KJIT_INLINE unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  return shift >= 32 ? hi : __funnelshift_r(lo, hi, shift);
}

// Atomics, relaxed (CUDA's device-scope atomics order nothing else either).
#define KJIT_CUDA_ATOMIC(name, op)       \
  template <class T, class U>            \
  KJIT_INLINE T name(T* p, U v) {        \
    return ::kjit::atomics::op(p, T(v)); \
  }
KJIT_CUDA_ATOMIC(atomicAdd, add)
KJIT_CUDA_ATOMIC(atomicSub, sub)
KJIT_CUDA_ATOMIC(atomicMax, max)
KJIT_CUDA_ATOMIC(atomicMin, min)
KJIT_CUDA_ATOMIC(atomicExch, exchange)
KJIT_CUDA_ATOMIC(atomicAnd, bit_and)
KJIT_CUDA_ATOMIC(atomicOr, bit_or)
KJIT_CUDA_ATOMIC(atomicXor, bit_xor)
#undef KJIT_CUDA_ATOMIC
template <class T, class U, class V>
KJIT_INLINE T atomicCAS(T* p, U expected, V desired) {
  return ::kjit::atomics::cas(p, T(expected), T(desired));
}
// Wrapping increment and decrement: old >= limit becomes 0; old == 0 or old > limit becomes
// limit.
KJIT_INLINE unsigned atomicInc(unsigned* p, unsigned limit) {
  unsigned seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &seen, seen >= limit ? 0u : seen + 1, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return seen;
}
KJIT_INLINE unsigned atomicDec(unsigned* p, unsigned limit) {
  unsigned seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &seen, seen == 0 || seen > limit ? limit : seen - 1, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return seen;
}
KJIT_INLINE void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
KJIT_INLINE void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

}  // namespace kjit::cuda_dialect

namespace cooperative_groups {

struct grid_group {
  KJIT_INLINE unsigned long long thread_rank() const {
    const ::kjit::thread_ctx& t = *::kjit::current_thread;
    return t.block_rank() * t.full_group_threads() + t.rank_in_block();
  }
  KJIT_INLINE unsigned long long size() const {
    const ::kjit::thread_ctx& t = *::kjit::current_thread;
    const ::kjit::uint3 n = t.groups;
    return static_cast<unsigned long long>(n.x) * n.y * n.z * t.full_group_threads();
  }
  KJIT_INLINE unsigned long long num_threads() const { return size(); }
};

struct thread_block {
  KJIT_INLINE unsigned thread_rank() const { return ::kjit::current_thread->rank_in_block(); }
  KJIT_INLINE unsigned size() const { return ::kjit::current_thread->full_group_threads(); }
  KJIT_INLINE unsigned num_threads() const { return size(); }
  KJIT_INLINE ::kjit::uint3 group_index() const { return ::kjit::current_thread->group_id; }
  KJIT_INLINE ::kjit::uint3 thread_index() const { return ::kjit::current_thread->local_id(); }
  // A barrier: defined by the cooperative mode (cuda_cpu_coop.h), which every body calling it
  // runs in.
  auto sync() const;
};

// A tile of N consecutive threads of a block (N a power of two up to 32, so tiles never span
// warps). Its collective operations, like sync(), exist in cooperative mode.
template <unsigned N>
struct thread_block_tile {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
                "thread_block_tile: the size must be a power of two up to 32");
  KJIT_INLINE unsigned thread_rank() const { return ::kjit::current_thread->rank_in_block() % N; }
  KJIT_INLINE static constexpr unsigned size() { return N; }
  KJIT_INLINE static constexpr unsigned num_threads() { return N; }
  KJIT_INLINE unsigned meta_group_rank() const {
    return ::kjit::current_thread->rank_in_block() / N;
  }
  KJIT_INLINE unsigned meta_group_size() const {
    return (::kjit::current_thread->full_group_threads() + N - 1) / N;
  }
  // |line| is the calling line, which tells the lanes that meet at the same operation.
  auto sync(unsigned line = KJIT_CALL_SITE) const;
  template <class T>
  auto shfl(T v, int src, unsigned line = KJIT_CALL_SITE) const;
  template <class T>
  auto shfl_up(T v, unsigned delta, unsigned line = KJIT_CALL_SITE) const;
  template <class T>
  auto shfl_down(T v, unsigned delta, unsigned line = KJIT_CALL_SITE) const;
  template <class T>
  auto shfl_xor(T v, unsigned mask, unsigned line = KJIT_CALL_SITE) const;
  auto ballot(int predicate, unsigned line = KJIT_CALL_SITE) const;
  auto any(int predicate, unsigned line = KJIT_CALL_SITE) const;
  auto all(int predicate, unsigned line = KJIT_CALL_SITE) const;
};

}  // namespace cooperative_groups
