// CUDA's intrinsics on the CPU that are not math: integer bit operations, reinterpreting and
// converting numbers (float to int conversions saturate, as on a GPU), reads
// through the read-only cache, the clock, and the warp's size.
#pragma once

#include "common/int_bits.h"

namespace kjit::cuda_dialect {

constexpr int warpSize = 32;

// Integer intrinsics (common/int_bits.h).
KJIT_INLINE int __popc(unsigned x) { return int(::kjit::bits::popcount(x)); }
KJIT_INLINE int __popcll(unsigned long long x) { return int(::kjit::bits::popcount(x)); }
KJIT_INLINE int __clz(int x) { return ::kjit::bits::clz(x); }
KJIT_INLINE int __clzll(long long x) { return int(::kjit::bits::clz(x)); }
KJIT_INLINE int __ffs(int x) { return x ? ::kjit::bits::ctz(x) + 1 : 0; }
KJIT_INLINE int __ffsll(long long x) { return x ? int(::kjit::bits::ctz(x)) + 1 : 0; }
KJIT_INLINE unsigned __brev(unsigned x) { return ::kjit::bits::reverse_bits(x); }
KJIT_INLINE unsigned long long __brevll(unsigned long long x) {
  return ::kjit::bits::reverse_bits(x);
}
KJIT_INLINE unsigned __umulhi(unsigned a, unsigned b) { return ::kjit::bits::mulhi(a, b); }
KJIT_INLINE int __mulhi(int a, int b) { return ::kjit::bits::mulhi(a, b); }
KJIT_INLINE unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return ::kjit::bits::mulhi(a, b);
}
KJIT_INLINE long long __mul64hi(long long a, long long b) { return ::kjit::bits::mulhi(a, b); }
// The low 24 bits of each operand (sign-extended for __mul24), multiplied.
KJIT_INLINE int __mul24(int a, int b) { return ::kjit::bits::mul24(a, b); }
KJIT_INLINE unsigned __umul24(unsigned a, unsigned b) { return ::kjit::bits::mul24(a, b); }
// Halving adds, without overflow: (a + b) >> 1, and rounded up (__rhadd).
KJIT_INLINE int __hadd(int a, int b) { return ::kjit::bits::hadd(a, b); }
KJIT_INLINE int __rhadd(int a, int b) { return ::kjit::bits::rhadd(a, b); }
KJIT_INLINE unsigned __uhadd(unsigned a, unsigned b) { return ::kjit::bits::hadd(a, b); }
KJIT_INLINE unsigned __urhadd(unsigned a, unsigned b) { return ::kjit::bits::rhadd(a, b); }
// |x - y| + z.
KJIT_INLINE unsigned __sad(int x, int y, unsigned z) { return ::kjit::bits::absdiff(x, y) + z; }
KJIT_INLINE unsigned __usad(unsigned x, unsigned y, unsigned z) {
  return ::kjit::bits::absdiff(x, y) + z;
}
// Byte k of the result is byte (s >> 4k) & 7 of the eight bytes of y:x.
KJIT_INLINE unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long bytes = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int k = 0; k < 4; ++k) r |= ((bytes >> (8 * ((s >> (4 * k)) & 7))) & 0xffu) << (8 * k);
  return r;
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

KJIT_INLINE long labs(long x) { return x < 0 ? -x : x; }
KJIT_INLINE long long llabs(long long x) { return x < 0 ? -x : x; }

// Bits read as another type.
KJIT_INLINE int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
KJIT_INLINE float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
KJIT_INLINE unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
KJIT_INLINE float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
KJIT_INLINE long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
KJIT_INLINE double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
KJIT_INLINE int __double2hiint(double x) { return int(__double_as_longlong(x) >> 32); }
KJIT_INLINE int __double2loint(double x) { return int(__double_as_longlong(x)); }
KJIT_INLINE double __hiloint2double(int hi, int lo) {
  return __longlong_as_double(static_cast<long long>(static_cast<unsigned long long>(hi) << 32 |
                                                     static_cast<unsigned>(lo)));
}

namespace convert_detail {
// |r| (a From, already rounded to an integer, given as a double) as an I, clamped to I's range.
// NaN gives what an H200 gives: 0 from a float to a 32-bit int, otherwise the value whose top
// bit alone is set (the lowest int, or 2^31 or 2^63 unsigned).
template <class I, class From>
KJIT_INLINE I saturate(double r) {
  if (r != r) return sizeof(From) == 4 && sizeof(I) == 4 ? I(0) : I(1ull << (sizeof(I) * 8 - 1));
  // The limits as doubles are exact, or (for 64 bits) 2^63 and 2^64, past every value below.
  if (r >= double(::kjit::bits::highest<I>)) return ::kjit::bits::highest<I>;
  if (r <= double(::kjit::bits::lowest<I>)) return ::kjit::bits::lowest<I>;
  return I(r);
}
}  // namespace convert_detail

// __float2int_rn, __double2ull_rd...: rounded to nearest even, towards zero, up or down.
#define KJIT_CUDA_TO_INT(from, F, to, I)                                            \
  KJIT_INLINE I __##from##2##to##_rn(F x) {                                         \
    return convert_detail::saturate<I, F>(__builtin_rint(static_cast<double>(x)));  \
  }                                                                                 \
  KJIT_INLINE I __##from##2##to##_rz(F x) {                                         \
    return convert_detail::saturate<I, F>(__builtin_trunc(static_cast<double>(x))); \
  }                                                                                 \
  KJIT_INLINE I __##from##2##to##_ru(F x) {                                         \
    return convert_detail::saturate<I, F>(__builtin_ceil(static_cast<double>(x)));  \
  }                                                                                 \
  KJIT_INLINE I __##from##2##to##_rd(F x) {                                         \
    return convert_detail::saturate<I, F>(__builtin_floor(static_cast<double>(x))); \
  }
KJIT_CUDA_TO_INT(float, float, int, int)
KJIT_CUDA_TO_INT(float, float, uint, unsigned)
KJIT_CUDA_TO_INT(float, float, ll, long long)
KJIT_CUDA_TO_INT(float, float, ull, unsigned long long)
KJIT_CUDA_TO_INT(double, double, int, int)
KJIT_CUDA_TO_INT(double, double, uint, unsigned)
KJIT_CUDA_TO_INT(double, double, ll, long long)
KJIT_CUDA_TO_INT(double, double, ull, unsigned long long)
#undef KJIT_CUDA_TO_INT
KJIT_INLINE float __int2float_rn(int x) { return float(x); }
KJIT_INLINE float __uint2float_rn(unsigned x) { return float(x); }
KJIT_INLINE float __ll2float_rn(long long x) { return float(x); }
KJIT_INLINE float __ull2float_rn(unsigned long long x) { return float(x); }
KJIT_INLINE double __int2double_rn(int x) { return double(x); }
KJIT_INLINE double __uint2double_rn(unsigned x) { return double(x); }
KJIT_INLINE double __ll2double_rn(long long x) { return double(x); }
KJIT_INLINE double __ull2double_rn(unsigned long long x) { return double(x); }
KJIT_INLINE float __double2float_rn(double x) { return float(x); }

// Reads and writes with cache hints (the read-only data cache, streaming, write-through...):
// plain ones here.
#define KJIT_CUDA_LOAD(name)       \
  template <class T>               \
  KJIT_INLINE T name(const T* p) { \
    return *p;                     \
  }
KJIT_CUDA_LOAD(__ldg)
KJIT_CUDA_LOAD(__ldca)
KJIT_CUDA_LOAD(__ldcg)
KJIT_CUDA_LOAD(__ldcs)
KJIT_CUDA_LOAD(__ldlu)
KJIT_CUDA_LOAD(__ldcv)
#undef KJIT_CUDA_LOAD
#define KJIT_CUDA_STORE(name)            \
  template <class T>                     \
  KJIT_INLINE void name(T* p, T value) { \
    *p = value;                          \
  }
KJIT_CUDA_STORE(__stwb)
KJIT_CUDA_STORE(__stcg)
KJIT_CUDA_STORE(__stcs)
KJIT_CUDA_STORE(__stwt)
#undef KJIT_CUDA_STORE

// A cycle counter, and a pause that the CPU, whose threads of a group take turns, skips.
KJIT_INLINE long long clock64() {
#if defined(__x86_64__)
  return static_cast<long long>(__builtin_ia32_rdtsc());
#elif defined(__aarch64__)
  unsigned long long ticks;
  asm volatile("mrs %0, cntvct_el0" : "=r"(ticks));
  return static_cast<long long>(ticks);
#else
  return 0;
#endif
}
KJIT_INLINE void __nanosleep(unsigned) {}

}  // namespace kjit::cuda_dialect
