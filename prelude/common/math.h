// Math for kernels: float, double, half and bfloat overloads of the C math names. exp is our
// own branch-free float implementation (within 1 ulp, IEEE edge cases kept) so that loops over
// it vectorise; the rest use compiler builtins (-fno-math-errno lets them vectorise too).
#pragma once

#include "common/scalar.h"

namespace kjit {

template <class T>
T declval();

// The type of a + b: Metal's promotion rules for half/bfloat, C++'s for the rest.
template <class A, class B>
using promote_t = decltype(declval<A>() + declval<B>());

#ifdef KJIT_CPU
KJIT_INLINE float exp(float x) {
  // exp(x) = 2^k * e^r with |r| <= ln2/2; ln2 is split in two so that r is exact.
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 89.0f ? 89.0f : xc;
  float k = __builtin_rintf(xc * 1.44269504088896341f);
  float r = __builtin_fmaf(k, -0.693145751953125f, xc);
  r = __builtin_fmaf(k, -1.42860682030941723212e-6f, r);
  float p = 1.98412698e-4f;
  p = __builtin_fmaf(p, r, 1.38888889e-3f);
  p = __builtin_fmaf(p, r, 8.33333333e-3f);
  p = __builtin_fmaf(p, r, 4.16666667e-2f);
  p = __builtin_fmaf(p, r, 1.66666667e-1f);
  p = __builtin_fmaf(p, r, 0.5f);
  p = __builtin_fmaf(p, r, 1.0f);
  p = __builtin_fmaf(p, r, 1.0f);
  // 2^k in two factors so that subnormal results and 2^128 * small p stay representable.
  int ki = static_cast<int>(k);
  int k1 = ki / 2;
  int k2 = ki - k1;
  float s1 = __builtin_bit_cast(float, static_cast<uint32_t>(k1 + 127) << 23);
  float s2 = __builtin_bit_cast(float, static_cast<uint32_t>(k2 + 127) << 23);
  float y = p * s1 * s2;
  y = x > 88.72283935546875f ? __builtin_bit_cast(float, 0x7f800000u) : y;
  y = x < -103.972084045410f ? 0.0f : y;
  return x != x ? x : y;
}
#else
KJIT_INLINE float exp(float x) { return ::expf(x); }
#endif
KJIT_INLINE double exp(double x) { return KJIT_MATH(exp)(x); }

#define KJIT_UNARY_BUILTIN(name)                                  \
  KJIT_INLINE float name(float x) { return KJIT_MATHF(name)(x); } \
  KJIT_INLINE double name(double x) { return KJIT_MATH(name)(x); }
KJIT_UNARY_BUILTIN(exp2)
KJIT_UNARY_BUILTIN(expm1)
KJIT_UNARY_BUILTIN(log)
KJIT_UNARY_BUILTIN(log2)
KJIT_UNARY_BUILTIN(log10)
KJIT_UNARY_BUILTIN(log1p)
KJIT_UNARY_BUILTIN(sqrt)
KJIT_UNARY_BUILTIN(cbrt)
KJIT_UNARY_BUILTIN(sin)
KJIT_UNARY_BUILTIN(cos)
KJIT_UNARY_BUILTIN(tan)
KJIT_UNARY_BUILTIN(asin)
KJIT_UNARY_BUILTIN(acos)
KJIT_UNARY_BUILTIN(atan)
KJIT_UNARY_BUILTIN(sinh)
KJIT_UNARY_BUILTIN(cosh)
KJIT_UNARY_BUILTIN(tanh)
KJIT_UNARY_BUILTIN(asinh)
KJIT_UNARY_BUILTIN(acosh)
KJIT_UNARY_BUILTIN(atanh)
KJIT_UNARY_BUILTIN(erf)
KJIT_UNARY_BUILTIN(erfc)
KJIT_UNARY_BUILTIN(tgamma)
KJIT_UNARY_BUILTIN(lgamma)
KJIT_UNARY_BUILTIN(floor)
KJIT_UNARY_BUILTIN(ceil)
KJIT_UNARY_BUILTIN(trunc)
KJIT_UNARY_BUILTIN(round)
KJIT_UNARY_BUILTIN(rint)
KJIT_UNARY_BUILTIN(fabs)
#undef KJIT_UNARY_BUILTIN

#ifdef KJIT_CPU
KJIT_INLINE float rsqrt(float x) { return 1.0f / KJIT_MATHF(sqrt)(x); }
KJIT_INLINE double rsqrt(double x) { return 1.0 / KJIT_MATH(sqrt)(x); }
#else
KJIT_INLINE float rsqrt(float x) { return ::rsqrtf(x); }
KJIT_INLINE double rsqrt(double x) { return ::rsqrt(x); }
#endif
KJIT_INLINE float abs(float x) { return KJIT_MATHF(fabs)(x); }
KJIT_INLINE double abs(double x) { return KJIT_MATH(fabs)(x); }
KJIT_INLINE int abs(int x) { return x < 0 ? -x : x; }
KJIT_INLINE long abs(long x) { return x < 0 ? -x : x; }
KJIT_INLINE long long abs(long long x) { return x < 0 ? -x : x; }
#ifdef KJIT_METAL
// Metal declares abs for every integer type: an unsigned value is its own. (In CUDA, as in C++,
// abs of an unsigned integer is ambiguous.)
KJIT_INLINE unsigned char abs(unsigned char x) { return x; }
KJIT_INLINE unsigned short abs(unsigned short x) { return x; }
KJIT_INLINE unsigned abs(unsigned x) { return x; }
KJIT_INLINE unsigned long abs(unsigned long x) { return x; }
KJIT_INLINE unsigned long long abs(unsigned long long x) { return x; }
#endif

#define KJIT_BINARY_BUILTIN(name)                                             \
  KJIT_INLINE float name(float x, float y) { return KJIT_MATHF(name)(x, y); } \
  KJIT_INLINE double name(double x, double y) { return KJIT_MATH(name)(x, y); }
KJIT_BINARY_BUILTIN(pow)
KJIT_BINARY_BUILTIN(atan2)
KJIT_BINARY_BUILTIN(fmod)
KJIT_BINARY_BUILTIN(copysign)
KJIT_BINARY_BUILTIN(hypot)
KJIT_BINARY_BUILTIN(remainder)
KJIT_BINARY_BUILTIN(fdim)
#undef KJIT_BINARY_BUILTIN

// fmax/fmin: a NaN operand yields the other one. The GPU has an instruction for each; on the
// CPU selects vectorise where the builtins do not.
#ifdef KJIT_CUDA
KJIT_INLINE float fmax(float a, float b) { return ::fmaxf(a, b); }
KJIT_INLINE double fmax(double a, double b) { return ::fmax(a, b); }
KJIT_INLINE float fmin(float a, float b) { return ::fminf(a, b); }
KJIT_INLINE double fmin(double a, double b) { return ::fmin(a, b); }
#else
KJIT_INLINE float fmax(float a, float b) { return a >= b || b != b ? a : b; }
KJIT_INLINE double fmax(double a, double b) { return a >= b || b != b ? a : b; }
KJIT_INLINE float fmin(float a, float b) { return a <= b || b != b ? a : b; }
KJIT_INLINE double fmin(double a, double b) { return a <= b || b != b ? a : b; }
#endif

KJIT_INLINE float fma(float a, float b, float c) { return KJIT_MATHF(fma)(a, b, c); }
KJIT_INLINE double fma(double a, double b, double c) { return KJIT_MATH(fma)(a, b, c); }

// Classification by comparisons and bits, the same on every platform.
KJIT_INLINE bool isnan(float x) { return x != x; }
KJIT_INLINE bool isnan(double x) { return x != x; }
KJIT_INLINE bool isinf(float x) { return fabs(x) == __builtin_bit_cast(float, 0x7f800000u); }
KJIT_INLINE bool isinf(double x) {
  return fabs(x) == __builtin_bit_cast(double, 0x7ff0000000000000ull);
}
KJIT_INLINE bool isfinite(float x) { return fabs(x) < __builtin_bit_cast(float, 0x7f800000u); }
KJIT_INLINE bool isfinite(double x) {
  return fabs(x) < __builtin_bit_cast(double, 0x7ff0000000000000ull);
}
KJIT_INLINE bool signbit(float x) { return (__builtin_bit_cast(uint32_t, x) >> 31) != 0; }
KJIT_INLINE bool signbit(double x) { return (__builtin_bit_cast(uint64_t, x) >> 63) != 0; }

// half and bfloat: compute in float, round back (as MLX's bf16 math does).
#define KJIT_LOW_UNARY(name)                     \
  template <class H, KJIT_IF(is_low_float_v<H>)> \
  KJIT_INLINE H name(H x) {                      \
    return H(name(float(x)));                    \
  }
KJIT_LOW_UNARY(exp)
KJIT_LOW_UNARY(exp2)
KJIT_LOW_UNARY(expm1)
KJIT_LOW_UNARY(log)
KJIT_LOW_UNARY(log2)
KJIT_LOW_UNARY(log10)
KJIT_LOW_UNARY(log1p)
KJIT_LOW_UNARY(sqrt)
KJIT_LOW_UNARY(rsqrt)
KJIT_LOW_UNARY(cbrt)
KJIT_LOW_UNARY(sin)
KJIT_LOW_UNARY(cos)
KJIT_LOW_UNARY(tan)
KJIT_LOW_UNARY(asin)
KJIT_LOW_UNARY(acos)
KJIT_LOW_UNARY(atan)
KJIT_LOW_UNARY(sinh)
KJIT_LOW_UNARY(cosh)
KJIT_LOW_UNARY(tanh)
KJIT_LOW_UNARY(asinh)
KJIT_LOW_UNARY(acosh)
KJIT_LOW_UNARY(atanh)
KJIT_LOW_UNARY(erf)
KJIT_LOW_UNARY(erfc)
KJIT_LOW_UNARY(tgamma)
KJIT_LOW_UNARY(lgamma)
KJIT_LOW_UNARY(floor)
KJIT_LOW_UNARY(ceil)
KJIT_LOW_UNARY(trunc)
KJIT_LOW_UNARY(round)
KJIT_LOW_UNARY(rint)
KJIT_LOW_UNARY(fabs)
KJIT_LOW_UNARY(abs)
#undef KJIT_LOW_UNARY

template <class H, KJIT_IF(is_low_float_v<H>)>
KJIT_INLINE bool isnan(H x) {
  return isnan(float(x));
}
template <class H, KJIT_IF(is_low_float_v<H>)>
KJIT_INLINE bool isinf(H x) {
  return isinf(float(x));
}
template <class H, KJIT_IF(is_low_float_v<H>)>
KJIT_INLINE bool isfinite(H x) {
  return isfinite(float(x));
}

// Two-argument functions on mixed types promote first: max(half, 1) is a half, max(float, 0)
// a float. Integers use plain comparisons; floats follow fmax/fmin's NaN rule.
template <class T>
KJIT_INLINE T max_same(T a, T b) {
  if constexpr (is_builtin_float_v<T>) {
    return fmax(a, b);
  } else if constexpr (is_low_float_v<T>) {
    return T(fmax(float(a), float(b)));
  } else {
    return a < b ? b : a;
  }
}
template <class T>
KJIT_INLINE T min_same(T a, T b) {
  if constexpr (is_builtin_float_v<T>) {
    return fmin(a, b);
  } else if constexpr (is_low_float_v<T>) {
    return T(fmin(float(a), float(b)));
  } else {
    return a < b ? a : b;
  }
}
template <class A, class B>
KJIT_INLINE promote_t<A, B> max(A a, B b) {
  using P = promote_t<A, B>;
  return max_same(P(a), P(b));
}
template <class A, class B>
KJIT_INLINE promote_t<A, B> min(A a, B b) {
  using P = promote_t<A, B>;
  return min_same(P(a), P(b));
}
template <class X, class L, class H>
KJIT_INLINE X clamp(X x, L lo, H hi) {
  return X(min(max(x, X(lo)), X(hi)));
}

#define KJIT_LOW_BINARY(name)                                                  \
  template <class A, class B, KJIT_IF(is_low_float_v<A> || is_low_float_v<B>)> \
  KJIT_INLINE promote_t<A, B> name(A a, B b) {                                 \
    return promote_t<A, B>(name(float(a), float(b)));                          \
  }
KJIT_LOW_BINARY(pow)
KJIT_LOW_BINARY(atan2)
KJIT_LOW_BINARY(fmod)
KJIT_LOW_BINARY(fmax)
KJIT_LOW_BINARY(fmin)
KJIT_LOW_BINARY(copysign)
#undef KJIT_LOW_BINARY

template <class A, class B, class C,
          KJIT_IF(is_low_float_v<A> || is_low_float_v<B> || is_low_float_v<C>)>
KJIT_INLINE A fma(A a, B b, C c) {
  return A(fma(float(a), float(b), float(c)));
}

// 10^x (exp10 is a GNU extension: clang's builtins lack it).
#ifdef KJIT_CPU
KJIT_INLINE double exp10(double x) { return __builtin_pow(10.0, x); }
KJIT_INLINE float exp10(float x) { return float(__builtin_pow(10.0, double(x))); }
#else
KJIT_INLINE double exp10(double x) { return ::exp10(x); }
KJIT_INLINE float exp10(float x) { return ::exp10f(x); }
#endif

// sin(pi x) and cos(pi x): exactly 0 where they are (integers, and halves for the cosine), as
// CUDA's and Metal's are. On the CPU x is reduced exactly to [-1, 1] and the rest is done in
// double.
inline constexpr double kPi = 3.14159265358979323846;

#ifdef KJIT_CPU
// sin(pi a) for a in [-1/2, 1/2] after exact reductions: r = x mod 2 in [-1, 1], then 1 - |r|
// for |r| > 1/2 (exact there), so that values near the zeros keep their relative accuracy.
KJIT_INLINE double sinpi(double x) {
  if (__builtin_rint(x) == x && x - x == 0) return __builtin_copysign(0.0, x);  // inf: NaN below
  const double r = __builtin_remainder(x, 2.0), a = __builtin_fabs(r);
  return __builtin_copysign(__builtin_sin(kPi * (a > 0.5 ? 1.0 - a : a)), r);
}
// cos(pi x): cos(pi a) itself for |a| < 1/4, else sin(pi (1/2 - a)) (1/2 - a exact there).
KJIT_INLINE double cospi(double x) {
  const double a = __builtin_fabs(__builtin_remainder(x, 2.0));
  if (a < 0.25) return __builtin_cos(kPi * a);
  return sinpi(0.5 - a);
}
KJIT_INLINE float sinpi(float x) { return float(sinpi(double(x))); }
KJIT_INLINE float cospi(float x) { return float(cospi(double(x))); }
#else
KJIT_INLINE double sinpi(double x) { return ::sinpi(x); }
KJIT_INLINE double cospi(double x) { return ::cospi(x); }
KJIT_INLINE float sinpi(float x) { return ::sinpif(x); }
KJIT_INLINE float cospi(float x) { return ::cospif(x); }
#endif

}  // namespace kjit
