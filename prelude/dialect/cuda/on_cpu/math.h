// CUDA's math library on the CPU: the float functions (expf...), the ones C++ lacks (sinpif,
// erfinvf, normcdff...), and the intrinsics, whose approximate forms are the exact ones here.
// Functions of both widths where CUDA has them for doubles under the same name without the f.
#pragma once

#include "common/math.h"

namespace kjit::cuda_dialect {

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
KJIT_CUDA_F1(asinh)
KJIT_CUDA_F1(acosh)
KJIT_CUDA_F1(atanh)
KJIT_CUDA_F1(lgamma)
KJIT_CUDA_F1(tgamma)
KJIT_CUDA_F1(exp10)
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
// [+0, 1], NaN to +0, as on a GPU.
KJIT_INLINE float __saturatef(float x) { return x >= 1.0f ? 1.0f : x > 0.0f ? x : 0.0f; }

// Functions with no ::kjit counterpart, from the compiler's builtins (libm's functions).
#define KJIT_CUDA_LIBM1(R, name)                                    \
  KJIT_INLINE R name##f(float x) { return __builtin_##name##f(x); } \
  KJIT_INLINE R name(double x) { return __builtin_##name(x); }
KJIT_CUDA_LIBM1(float, nearbyint)
KJIT_CUDA_LIBM1(float, logb)
KJIT_CUDA_LIBM1(int, ilogb)
KJIT_CUDA_LIBM1(long, lrint)
KJIT_CUDA_LIBM1(long long, llrint)
KJIT_CUDA_LIBM1(long, lround)
KJIT_CUDA_LIBM1(long long, llround)
#undef KJIT_CUDA_LIBM1
KJIT_INLINE double exp10(double x) { return ::kjit::exp10(x); }
KJIT_INLINE float fdimf(float x, float y) { return __builtin_fdimf(x, y); }
KJIT_INLINE double fdim(double x, double y) { return __builtin_fdim(x, y); }
KJIT_INLINE float remainderf(float x, float y) { return __builtin_remainderf(x, y); }
KJIT_INLINE double remainder(double x, double y) { return __builtin_remainder(x, y); }
KJIT_INLINE float remquof(float x, float y, int* q) { return __builtin_remquof(x, y, q); }
KJIT_INLINE double remquo(double x, double y, int* q) { return __builtin_remquo(x, y, q); }
KJIT_INLINE float nextafterf(float x, float y) { return __builtin_nextafterf(x, y); }
KJIT_INLINE float nextafter(float x, float y) { return __builtin_nextafterf(x, y); }
KJIT_INLINE double nextafter(double x, double y) { return __builtin_nextafter(x, y); }
// A quiet NaN (the tag chooses no payload).
KJIT_INLINE float nanf(const char*) { return __builtin_nanf(""); }
KJIT_INLINE double nan(const char*) { return __builtin_nan(""); }
KJIT_INLINE float scalblnf(float x, long e) { return __builtin_scalblnf(x, e); }
KJIT_INLINE double scalbln(double x, long e) { return __builtin_scalbln(x, e); }
KJIT_INLINE float ldexpf(float x, int e) { return __builtin_ldexpf(x, e); }
KJIT_INLINE double ldexp(double x, int e) { return __builtin_ldexp(x, e); }
KJIT_INLINE float scalbnf(float x, int e) { return __builtin_scalbnf(x, e); }
KJIT_INLINE double scalbn(double x, int e) { return __builtin_scalbn(x, e); }
KJIT_INLINE float frexpf(float x, int* e) { return __builtin_frexpf(x, e); }
KJIT_INLINE double frexp(double x, int* e) { return __builtin_frexp(x, e); }
KJIT_INLINE float modff(float x, float* i) { return __builtin_modff(x, i); }
KJIT_INLINE double modf(double x, double* i) { return __builtin_modf(x, i); }
KJIT_INLINE void sincosf(float x, float* s, float* c) { *s = ::kjit::sin(x), *c = ::kjit::cos(x); }
KJIT_INLINE void sincos(double x, double* s, double* c) {
  *s = ::kjit::sin(x), *c = ::kjit::cos(x);
}
KJIT_INLINE float rcbrtf(float x) { return float(1.0 / __builtin_cbrt(x)); }
KJIT_INLINE double rcbrt(double x) { return 1.0 / __builtin_cbrt(x); }
KJIT_INLINE float rhypotf(float x, float y) { return float(1.0 / __builtin_hypot(x, y)); }
KJIT_INLINE double rhypot(double x, double y) { return 1.0 / __builtin_hypot(x, y); }

namespace math_detail {
using ::kjit::kPi;
// The inverse of erf for |x| <= 1/2, where erf(y) - x does not cancel: Newton steps from
// Winitzki's approximation (within 2e-3), each squaring the relative error.
KJIT_INLINE double erfinv_central(double x) {
  const double a = 0.147, l = __builtin_log((1.0 - x) * (1.0 + x));
  const double b = 2.0 / (kPi * a) + l / 2;
  double y = __builtin_copysign(__builtin_sqrt(__builtin_sqrt(b * b - l / a) - b), x);
  for (int k = 0; k < 4; ++k) {
    y -= (__builtin_erf(y) - x) / (2.0 / __builtin_sqrt(kPi) * __builtin_exp(-y * y));
  }
  return y;
}
// log(erfc(t)) and its derivative for t > 0.4; past t = 26, where erfc underflows, from the
// asymptotic series erfc(t) = exp(-t^2) / (t sqrt(pi)) (1 - u + 3u^2 - 15u^3 + 105u^4 - 945u^5
// ...), u = 1 / (2t^2), whose next term is below 1e-15 there.
KJIT_INLINE double log_erfc(double t, double& slope) {
  if (t < 26.0) {
    const double e = __builtin_erfc(t);
    slope = -2.0 / __builtin_sqrt(kPi) * __builtin_exp(-t * t) / e;
    return __builtin_log(e);
  }
  const double u = 1.0 / (2.0 * t * t);
  const double series = 1.0 - u * (1.0 - u * (3.0 - u * (15.0 - u * (105.0 - u * 945.0))));
  slope = -2.0 * t / series;
  return -t * t - __builtin_log(t * __builtin_sqrt(kPi)) + __builtin_log(series);
}
// The inverse of erfc on (0, 1]: on [1/2, 1], erfinv of 1 - y (exact there); below 1/2, Newton
// steps on log(erfc(t)) = log(y), which is concave and decreasing, so that from sqrt(-log y),
// right of the root, the steps fall towards it without passing it.
inline double erfcinv_lower(double y) {
  if (y >= 0.5) return erfinv_central(1.0 - y);
  const double target = __builtin_log(y);
  double t = __builtin_sqrt(-target);
  for (int k = 0; k < 100; ++k) {
    double slope;
    const double step = (log_erfc(t, slope) - target) / slope;
    t -= step;
    if (!(__builtin_fabs(step) > 1e-17 * t)) break;
  }
  return t;
}
// On (0, 2), the upper half from the lower: erfc(-t) = 2 - erfc(t) (2 - y is exact there).
KJIT_INLINE double erfcinv(double y) {
  if (y != y || y < 0.0 || y > 2.0) return __builtin_nan("");
  if (y == 0.0) return __builtin_inf();
  if (y == 2.0) return -__builtin_inf();
  return y > 1.0 ? -erfcinv_lower(2.0 - y) : erfcinv_lower(y);
}
KJIT_INLINE double erfinv(double x) {
  if (x != x || __builtin_fabs(x) > 1.0) return __builtin_nan("");
  if (__builtin_fabs(x) <= 0.5) return erfinv_central(x);
  if (__builtin_fabs(x) == 1.0) return __builtin_copysign(__builtin_inf(), x);
  return __builtin_copysign(erfcinv_lower(1.0 - __builtin_fabs(x)), x);
}
}  // namespace math_detail

#define KJIT_CUDA_DOUBLE_MATH(name, expression) \
  KJIT_INLINE float name##f(float x) {          \
    const double d = x;                         \
    return float(expression);                   \
  }                                             \
  KJIT_INLINE double name(double x) {           \
    const double d = x;                         \
    return expression;                          \
  }
KJIT_CUDA_DOUBLE_MATH(sinpi, ::kjit::sinpi(d))
KJIT_CUDA_DOUBLE_MATH(cospi, ::kjit::cospi(d))
KJIT_CUDA_DOUBLE_MATH(erfinv, math_detail::erfinv(d))
KJIT_CUDA_DOUBLE_MATH(erfcinv, math_detail::erfcinv(d))
KJIT_CUDA_DOUBLE_MATH(normcdf, 0.5 * __builtin_erfc(-d / 1.41421356237309504880))
KJIT_CUDA_DOUBLE_MATH(normcdfinv, 0.0 - 1.41421356237309504880 * math_detail::erfcinv(2.0 * d))
#undef KJIT_CUDA_DOUBLE_MATH

// Intrinsics in rounding to nearest, the CPU's own: products and sums are not fused.
KJIT_INLINE float __fadd_rn(float a, float b) { return a + b; }
KJIT_INLINE float __fsub_rn(float a, float b) { return a - b; }
KJIT_INLINE float __fmul_rn(float a, float b) { return a * b; }
KJIT_INLINE float __fdiv_rn(float a, float b) { return a / b; }
KJIT_INLINE float __fmaf_rn(float a, float b, float c) { return ::kjit::fma(a, b, c); }
KJIT_INLINE double __dadd_rn(double a, double b) { return a + b; }
KJIT_INLINE double __dsub_rn(double a, double b) { return a - b; }
KJIT_INLINE double __dmul_rn(double a, double b) { return a * b; }
KJIT_INLINE double __ddiv_rn(double a, double b) { return a / b; }
KJIT_INLINE double __fma_rn(double a, double b, double c) { return ::kjit::fma(a, b, c); }
KJIT_INLINE double __drcp_rn(double x) { return 1.0 / x; }
KJIT_INLINE double __dsqrt_rn(double x) { return __builtin_sqrt(x); }
// Through double, whose square root and quotient are each rounded once: the float result is
// correctly rounded save for a double rounding, rarer than one input in 2^29.
KJIT_INLINE float __frsqrt_rn(float x) { return float(1.0 / __builtin_sqrt(double(x))); }
KJIT_INLINE float __exp10f(float x) { return exp10f(x); }
KJIT_INLINE void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }

}  // namespace kjit::cuda_dialect
