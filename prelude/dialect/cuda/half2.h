// cuda_fp16.h's __half2 and cuda_bf16.h's __nv_bfloat162 on every target: two halves (or
// bfloats) in one 4-byte word, their conversions, and their arithmetic and math lane by lane
// through the scalar intrinsics (dialect/cuda/names.h), so each lane is rounded as theirs are.
#pragma once

#include "dialect/cuda/names.h"

namespace kjit::cuda_dialect {

#define KJIT_CUDA_PAIR(H2, H, name, to_h, from_h)                                             \
  struct alignas(4) H2 {                                                                      \
    H x, y;                                                                                   \
    H2() = default;                                                                           \
    KJIT_INLINE H2(H a, H b) : x(a), y(b) {}                                                  \
  };                                                                                          \
  KJIT_INLINE H2 make_##name##2(H a, H b) { return H2(a, b); }                                \
  KJIT_INLINE H2 __halves2##name##2(H a, H b) { return H2(a, b); }                            \
  KJIT_INLINE H2 __##name##2##name##2(H a) { return H2(a, a); }                               \
  KJIT_INLINE H2 __float2##name##2_rn(float a) { return H2(H(a), H(a)); }                     \
  KJIT_INLINE H2 __floats2##name##2_rn(float a, float b) { return H2(H(a), H(b)); }           \
  KJIT_INLINE H2 __float22##name##2_rn(float2 f) { return H2(H(f.x), H(f.y)); }               \
  KJIT_INLINE float2 from_h(H2 h) { return make_float2(float(h.x), float(h.y)); }             \
  KJIT_INLINE H __low2##to_h(H2 h) { return h.x; }                                            \
  KJIT_INLINE H __high2##to_h(H2 h) { return h.y; }                                           \
  KJIT_INLINE float __low2float(H2 h) { return float(h.x); }                                  \
  KJIT_INLINE float __high2float(H2 h) { return float(h.y); }                                 \
  KJIT_INLINE H2 __lows2##name##2(H2 a, H2 b) { return H2(a.x, b.x); }                        \
  KJIT_INLINE H2 __highs2##name##2(H2 a, H2 b) { return H2(a.y, b.y); }                       \
  KJIT_INLINE H2 __low2##name##2(H2 a) { return H2(a.x, a.x); }                               \
  KJIT_INLINE H2 __high2##name##2(H2 a) { return H2(a.y, a.y); }                              \
  KJIT_INLINE H2 __lowhigh2highlow(H2 a) { return H2(a.y, a.x); }                             \
  /* Arithmetic, and the operators (== != < <= > >= are __hbeq2 __hbneu2 __hblt2..., as in */ \
  /* cuda_fp16.h). */                                                                         \
  KJIT_INLINE H2 __hadd2(H2 a, H2 b) { return H2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }       \
  KJIT_INLINE H2 __hsub2(H2 a, H2 b) { return H2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }       \
  KJIT_INLINE H2 __hmul2(H2 a, H2 b) { return H2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }       \
  KJIT_INLINE H2 __h2div(H2 a, H2 b) { return H2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }       \
  KJIT_INLINE H2 __hfma2(H2 a, H2 b, H2 c) {                                                  \
    return H2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));                                  \
  }                                                                                           \
  KJIT_INLINE H2 __hneg2(H2 a) { return H2(__hneg(a.x), __hneg(a.y)); }                       \
  KJIT_INLINE H2 __habs2(H2 a) { return H2(__habs(a.x), __habs(a.y)); }                       \
  KJIT_INLINE H2 __hmax2(H2 a, H2 b) { return H2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }       \
  KJIT_INLINE H2 __hmin2(H2 a, H2 b) { return H2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }       \
  KJIT_CUDA_PAIR_COMPARES(H2, H)                                                              \
  KJIT_INLINE H2 operator+(H2 a, H2 b) { return __hadd2(a, b); }                              \
  KJIT_INLINE H2 operator-(H2 a, H2 b) { return __hsub2(a, b); }                              \
  KJIT_INLINE H2 operator*(H2 a, H2 b) { return __hmul2(a, b); }                              \
  KJIT_INLINE H2 operator/(H2 a, H2 b) { return __h2div(a, b); }                              \
  KJIT_INLINE H2 operator-(H2 a) { return __hneg2(a); }                                       \
  KJIT_INLINE H2 operator+(H2 a) { return a; }                                                \
  KJIT_INLINE H2& operator++(H2& a) { return a = a + __float2##name##2_rn(1.0f); }            \
  KJIT_INLINE H2& operator--(H2& a) { return a = a - __float2##name##2_rn(1.0f); }            \
  KJIT_INLINE H2 operator++(H2& a, int) {                                                     \
    const H2 before = a;                                                                      \
    ++a;                                                                                      \
    return before;                                                                            \
  }                                                                                           \
  KJIT_INLINE H2 operator--(H2& a, int) {                                                     \
    const H2 before = a;                                                                      \
    --a;                                                                                      \
    return before;                                                                            \
  }                                                                                           \
  KJIT_INLINE bool operator<(H2 a, H2 b) { return __hblt2(a, b); }                            \
  KJIT_INLINE bool operator<=(H2 a, H2 b) { return __hble2(a, b); }                           \
  KJIT_INLINE bool operator>(H2 a, H2 b) { return __hbgt2(a, b); }                            \
  KJIT_INLINE bool operator>=(H2 a, H2 b) { return __hbge2(a, b); }                           \
  KJIT_INLINE H2& operator+=(H2& a, H2 b) { return a = a + b; }                               \
  KJIT_INLINE H2& operator-=(H2& a, H2 b) { return a = a - b; }                               \
  KJIT_INLINE H2& operator*=(H2& a, H2 b) { return a = a * b; }                               \
  KJIT_INLINE H2& operator/=(H2& a, H2 b) { return a = a / b; }                               \
  KJIT_INLINE bool operator==(H2 a, H2 b) { return __hbeq2(a, b); }                           \
  KJIT_INLINE bool operator!=(H2 a, H2 b) { return __hbneu2(a, b); }                          \
  KJIT_CUDA_PAIR_SHUFFLES(H2)
// The comparisons, ordered and unordered (__hequ2...): __heq2 gives lanes of 1 or 0, __hbeq2
// whether both lanes compare true.
// clang-format off
#define KJIT_CUDA_PAIR_COMPARES(H2, H) \
  KJIT_CUDA_PAIR_COMPARE(H2, H, eq) KJIT_CUDA_PAIR_COMPARE(H2, H, ne) \
  KJIT_CUDA_PAIR_COMPARE(H2, H, lt) KJIT_CUDA_PAIR_COMPARE(H2, H, le) \
  KJIT_CUDA_PAIR_COMPARE(H2, H, gt) KJIT_CUDA_PAIR_COMPARE(H2, H, ge) \
  KJIT_CUDA_PAIR_COMPARE(H2, H, equ) KJIT_CUDA_PAIR_COMPARE(H2, H, neu) \
  KJIT_CUDA_PAIR_COMPARE(H2, H, ltu) KJIT_CUDA_PAIR_COMPARE(H2, H, leu) \
  KJIT_CUDA_PAIR_COMPARE(H2, H, gtu) KJIT_CUDA_PAIR_COMPARE(H2, H, geu)
// clang-format on
#define KJIT_CUDA_PAIR_COMPARE(H2, H, op)                                              \
  KJIT_INLINE H2 __h##op##2(H2 a, H2 b) {                                              \
    return H2(H(__h##op(a.x, b.x) ? 1.0f : 0.0f), H(__h##op(a.y, b.y) ? 1.0f : 0.0f)); \
  }                                                                                    \
  KJIT_INLINE bool __hb##op##2(H2 a, H2 b) { return __h##op(a.x, b.x) && __h##op(a.y, b.y); }
// On the GPU the warp shuffles take 32-bit words: a pair travels as one. (On the CPU they take
// any type.)
#ifdef KJIT_CUDA
#define KJIT_CUDA_PAIR_SHUFFLE(H2, name, Arg)                                                 \
  KJIT_INLINE H2 name(unsigned mask, H2 v, Arg arg, int width = 32) {                         \
    return __builtin_bit_cast(H2, ::name(mask, __builtin_bit_cast(unsigned, v), arg, width)); \
  }
#define KJIT_CUDA_PAIR_SHUFFLES(H2)                    \
  KJIT_CUDA_PAIR_SHUFFLE(H2, __shfl_sync, int)         \
  KJIT_CUDA_PAIR_SHUFFLE(H2, __shfl_xor_sync, int)     \
  KJIT_CUDA_PAIR_SHUFFLE(H2, __shfl_up_sync, unsigned) \
  KJIT_CUDA_PAIR_SHUFFLE(H2, __shfl_down_sync, unsigned)
#else
#define KJIT_CUDA_PAIR_SHUFFLES(H2)
#endif

KJIT_CUDA_PAIR(__half2, __half, half, half, __half22float2)
KJIT_CUDA_PAIR(__nv_bfloat162, __nv_bfloat16, bfloat16, bfloat16, __bfloat1622float2)
#undef KJIT_CUDA_PAIR

#ifdef KJIT_CUDA
// The cache-hinted loads and stores that cuda_fp16.h and cuda_bf16.h declare for the 16-bit
// floats and their pairs, through the unsigned integer of their size. (The CPU's take any type.)
#define KJIT_CUDA_HINTED_LOAD(name, T, U)                                \
  KJIT_INLINE T name(const T* p) {                                       \
    return __builtin_bit_cast(T, ::name(reinterpret_cast<const U*>(p))); \
  }
#define KJIT_CUDA_HINTED_STORE(name, T, U) \
  KJIT_INLINE void name(T* p, T v) { ::name(reinterpret_cast<U*>(p), __builtin_bit_cast(U, v)); }
// clang-format off
#define KJIT_CUDA_HINTED(T, U)                                                                     \
  KJIT_CUDA_HINTED_LOAD(__ldg, T, U) KJIT_CUDA_HINTED_LOAD(__ldca, T, U)                           \
  KJIT_CUDA_HINTED_LOAD(__ldcg, T, U) KJIT_CUDA_HINTED_LOAD(__ldcs, T, U)                          \
  KJIT_CUDA_HINTED_LOAD(__ldlu, T, U) KJIT_CUDA_HINTED_LOAD(__ldcv, T, U)                          \
  KJIT_CUDA_HINTED_STORE(__stwb, T, U) KJIT_CUDA_HINTED_STORE(__stcg, T, U)                        \
  KJIT_CUDA_HINTED_STORE(__stcs, T, U) KJIT_CUDA_HINTED_STORE(__stwt, T, U)
// clang-format on
KJIT_CUDA_HINTED(__half, unsigned short)
KJIT_CUDA_HINTED(__nv_bfloat16, unsigned short)
KJIT_CUDA_HINTED(__half2, unsigned)
KJIT_CUDA_HINTED(__nv_bfloat162, unsigned)
#undef KJIT_CUDA_HINTED
#undef KJIT_CUDA_HINTED_STORE
#undef KJIT_CUDA_HINTED_LOAD
#endif
#undef KJIT_CUDA_PAIR_COMPARES
#undef KJIT_CUDA_PAIR_COMPARE
#undef KJIT_CUDA_PAIR_SHUFFLE
#undef KJIT_CUDA_PAIR_SHUFFLES

// Lane-by-lane math of both pairs: h2exp, h2sqrt...
#define KJIT_CUDA_PAIR_MATH(name, scalar) \
  template <class H2>                     \
  KJIT_INLINE H2 name(H2 a) {             \
    return H2(scalar(a.x), scalar(a.y));  \
  }
KJIT_CUDA_PAIR_MATH(h2exp, hexp)
KJIT_CUDA_PAIR_MATH(h2exp2, hexp2)
KJIT_CUDA_PAIR_MATH(h2log, hlog)
KJIT_CUDA_PAIR_MATH(h2log2, hlog2)
KJIT_CUDA_PAIR_MATH(h2log10, hlog10)
KJIT_CUDA_PAIR_MATH(h2sqrt, hsqrt)
KJIT_CUDA_PAIR_MATH(h2rsqrt, hrsqrt)
KJIT_CUDA_PAIR_MATH(h2rcp, hrcp)
KJIT_CUDA_PAIR_MATH(h2sin, hsin)
KJIT_CUDA_PAIR_MATH(h2cos, hcos)
KJIT_CUDA_PAIR_MATH(h2floor, hfloor)
KJIT_CUDA_PAIR_MATH(h2ceil, hceil)
KJIT_CUDA_PAIR_MATH(h2trunc, htrunc)
KJIT_CUDA_PAIR_MATH(h2rint, hrint)
#undef KJIT_CUDA_PAIR_MATH

}  // namespace kjit::cuda_dialect
