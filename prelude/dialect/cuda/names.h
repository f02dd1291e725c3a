// CUDA names that NVRTC lacks without the toolkit's headers and that the CPU lacks too: __half
// and __nv_bfloat16 (kjit's half and bfloat, with Metal's promotion rules) and their functions.
#pragma once

#include "common/vec.h"

namespace kjit::cuda_dialect {

typedef ::kjit::half_t __half;
typedef ::kjit::bfloat_t __nv_bfloat16;

KJIT_INLINE float __half2float(__half h) { return float(h); }
KJIT_INLINE __half __float2half(float f) { return __half(f); }
KJIT_INLINE __half __float2half_rn(float f) { return __half(f); }
KJIT_INLINE float __bfloat162float(__nv_bfloat16 h) { return float(h); }
KJIT_INLINE __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
KJIT_INLINE __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
KJIT_INLINE unsigned short __half_as_ushort(__half h) { return h.bits; }
KJIT_INLINE __half __ushort_as_half(unsigned short b) { return __half::from_bits(b); }
KJIT_INLINE unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }
KJIT_INLINE __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) {
  return __nv_bfloat16::from_bits(b);
}

namespace low_float_detail {
// |s| + |error| (the sum and its exact rounding error) rounded to odd in double: unchanged when
// exact, else the neighbour with an odd last digit on the value's side.
KJIT_INLINE double odd_double(double s, double error) {
  uint64_t b = __builtin_bit_cast(uint64_t, s);
  if (error == 0 || !(s - s == 0) || (b & 1)) return s;
  b = (error > 0) == (s > 0) ? b + 1 : b - 1;
  return __builtin_bit_cast(double, b);
}
// |x| rounded to odd in float.
KJIT_INLINE float odd_float(double x) {
  const float f = float(x);
  uint32_t b = __builtin_bit_cast(uint32_t, f);
  if (double(f) == x || !(f - f == 0) || (b & 1)) return f;
  if (f == 0) return __builtin_bit_cast(float, (x < 0 ? 0x80000000u : 0u) | 1u);
  b = (x > double(f)) == (f > 0) ? b + 1 : b - 1;
  return __builtin_bit_cast(float, b);
}
// a * b + c rounded once to H: a * b is exact in double, the sum's rounding error is recovered
// exactly (Knuth's two-sum), and rounding to odd in double and then in float leaves the last
// rounding, to H's far fewer digits, the only one that counts.
template <class H>
KJIT_INLINE H fma(H a, H b, H c) {
  const double p = double(float(a)) * double(float(b)), z = double(float(c));
  const double s = p + z, v = s - p;
  return H(odd_float(odd_double(s, (p - (s - v)) + (z - v))));
}
// fmax and fmin with +0 above -0, as __hmax and __hmin order them.
KJIT_INLINE float max(float a, float b) {
  if (a == 0.0f && b == 0.0f) return ::kjit::signbit(a) ? b : a;
  return ::kjit::fmax(a, b);
}
KJIT_INLINE float min(float a, float b) {
  if (a == 0.0f && b == 0.0f) return ::kjit::signbit(a) ? a : b;
  return ::kjit::fmin(a, b);
}
}  // namespace low_float_detail

// The arithmetic of cuda_fp16.h and cuda_bf16.h, for each of the two types: computed in float and
// rounded once, which for +, -, *, / and sqrt is the correctly rounded result (float has more
// than twice the digits plus two); fma as above. Overloads, not templates: on the GPU an int
// __hadd (the halving add) exists, and a half must not reach it through a conversion.
#define KJIT_LOW_FLOAT_OPS(H)                                                             \
  KJIT_INLINE H __hadd(H a, H b) { return H(float(a) + float(b)); }                       \
  KJIT_INLINE H __hsub(H a, H b) { return H(float(a) - float(b)); }                       \
  KJIT_INLINE H __hmul(H a, H b) { return H(float(a) * float(b)); }                       \
  KJIT_INLINE H __hdiv(H a, H b) { return H(float(a) / float(b)); }                       \
  KJIT_INLINE H __hfma(H a, H b, H c) { return low_float_detail::fma(a, b, c); }          \
  KJIT_INLINE H __hneg(H a) { return H(-float(a)); }                                      \
  KJIT_INLINE H __habs(H a) { return H(::kjit::fabs(float(a))); }                         \
  KJIT_INLINE H __hmax(H a, H b) { return H(low_float_detail::max(float(a), float(b))); } \
  KJIT_INLINE H __hmin(H a, H b) { return H(low_float_detail::min(float(a), float(b))); } \
  KJIT_INLINE bool __heq(H a, H b) { return float(a) == float(b); }                       \
  KJIT_INLINE bool __hne(H a, H b) { return float(a) < float(b) || float(a) > float(b); } \
  KJIT_INLINE bool __hlt(H a, H b) { return float(a) < float(b); }                        \
  KJIT_INLINE bool __hle(H a, H b) { return float(a) <= float(b); }                       \
  KJIT_INLINE bool __hgt(H a, H b) { return float(a) > float(b); }                        \
  KJIT_INLINE bool __hge(H a, H b) { return float(a) >= float(b); }                       \
  KJIT_INLINE bool __hequ(H a, H b) { return !__hne(a, b); }                              \
  KJIT_INLINE bool __hneu(H a, H b) { return !__heq(a, b); }                              \
  KJIT_INLINE bool __hltu(H a, H b) { return !__hge(a, b); }                              \
  KJIT_INLINE bool __hleu(H a, H b) { return !__hgt(a, b); }                              \
  KJIT_INLINE bool __hgtu(H a, H b) { return !__hle(a, b); }                              \
  KJIT_INLINE bool __hgeu(H a, H b) { return !__hlt(a, b); }                              \
  KJIT_INLINE bool __hisnan(H a) { return float(a) != float(a); }                         \
  KJIT_INLINE int __hisinf(H a) { return ::kjit::isinf(float(a)) ? (float(a) > 0 ? 1 : -1) : 0; }
KJIT_LOW_FLOAT_OPS(__half)
KJIT_LOW_FLOAT_OPS(__nv_bfloat16)
#undef KJIT_LOW_FLOAT_OPS

// hexp, hsqrt...: the math functions of both types.
#define KJIT_LOW_FLOAT_MATH(name, f) \
  template <class H>                 \
  KJIT_INLINE H name(H x) {          \
    return H(::kjit::f(float(x)));   \
  }
KJIT_LOW_FLOAT_MATH(hexp, exp)
KJIT_LOW_FLOAT_MATH(hexp2, exp2)
KJIT_LOW_FLOAT_MATH(hlog, log)
KJIT_LOW_FLOAT_MATH(hlog2, log2)
KJIT_LOW_FLOAT_MATH(hlog10, log10)
KJIT_LOW_FLOAT_MATH(hsqrt, sqrt)
KJIT_LOW_FLOAT_MATH(hrsqrt, rsqrt)
KJIT_LOW_FLOAT_MATH(hsin, sin)
KJIT_LOW_FLOAT_MATH(hcos, cos)
KJIT_LOW_FLOAT_MATH(hfloor, floor)
KJIT_LOW_FLOAT_MATH(hceil, ceil)
KJIT_LOW_FLOAT_MATH(htrunc, trunc)
KJIT_LOW_FLOAT_MATH(hrint, rint)
#undef KJIT_LOW_FLOAT_MATH
template <class H>
KJIT_INLINE H hrcp(H x) {
  return H(1.0f / float(x));
}

}  // namespace kjit::cuda_dialect

// cg::reduce's operations, which the CPU's warp reductions (__reduce_*_sync) use too: less and
// greater give the lesser and the greater value.
namespace cooperative_groups {
template <class T>
struct plus {
  KJIT_INLINE T operator()(T a, T b) const { return a + b; }
};
template <class T>
struct less {
  KJIT_INLINE T operator()(T a, T b) const { return a < b ? a : b; }
};
template <class T>
struct greater {
  KJIT_INLINE T operator()(T a, T b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
  KJIT_INLINE T operator()(T a, T b) const { return a & b; }
};
template <class T>
struct bit_or {
  KJIT_INLINE T operator()(T a, T b) const { return a | b; }
};
template <class T>
struct bit_xor {
  KJIT_INLINE T operator()(T a, T b) const { return a ^ b; }
};
}  // namespace cooperative_groups

// The CPU's warp shuffles and reductions, as rows each mode's SHUFFLE(name, lane source in
// common/lanes.h) and REDUCE(name, type, cg operation) macros expand (mode/coop/cuda.h,
// mode/regions/cuda.h).
#define KJIT_CUDA_WARP_SHUFFLES(SHUFFLE)                                                \
  SHUFFLE(__shfl_sync, ::kjit::lanes::by_low_five_bits<::kjit::lanes::from_lane>)       \
  SHUFFLE(__shfl_up_sync, ::kjit::lanes::by_low_five_bits<::kjit::lanes::from_below>)   \
  SHUFFLE(__shfl_down_sync, ::kjit::lanes::by_low_five_bits<::kjit::lanes::from_above>) \
  SHUFFLE(__shfl_xor_sync, ::kjit::lanes::by_low_five_bits<::kjit::lanes::from_xor>)
#define KJIT_CUDA_WARP_REDUCTIONS(REDUCE)      \
  REDUCE(__reduce_add_sync, unsigned, plus)    \
  REDUCE(__reduce_add_sync, int, plus)         \
  REDUCE(__reduce_min_sync, unsigned, less)    \
  REDUCE(__reduce_min_sync, int, less)         \
  REDUCE(__reduce_max_sync, unsigned, greater) \
  REDUCE(__reduce_max_sync, int, greater)      \
  REDUCE(__reduce_and_sync, unsigned, bit_and) \
  REDUCE(__reduce_or_sync, unsigned, bit_or)   \
  REDUCE(__reduce_xor_sync, unsigned, bit_xor)
