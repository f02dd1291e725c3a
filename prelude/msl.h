// Metal Shading Language names for kernels compiled for the CPU: namespace metal (scalar and
// vector types, math with fast:: and precise::) and the names MLX's utils.h brings.
#include "cpu_thread.h"

namespace metal {

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
typedef ::kjit::half_t half;
typedef ::kjit::bfloat_t bfloat;
typedef ::kjit::half_t float16_t;
typedef ::kjit::bfloat_t bfloat16_t;

template <class T, int N>
using vec = ::kjit::vec<T, N>;

#define KJIT_MSL_VECTORS(T, name) \
  typedef vec<T, 2> name##2;      \
  typedef vec<T, 3> name##3;      \
  typedef vec<T, 4> name##4;
KJIT_MSL_VECTORS(float, float)
KJIT_MSL_VECTORS(half, half)
KJIT_MSL_VECTORS(bfloat, bfloat)
KJIT_MSL_VECTORS(int, int)
KJIT_MSL_VECTORS(uint, uint)
KJIT_MSL_VECTORS(short, short)
KJIT_MSL_VECTORS(ushort, ushort)
KJIT_MSL_VECTORS(char, char)
KJIT_MSL_VECTORS(uchar, uchar)
KJIT_MSL_VECTORS(long, long)
KJIT_MSL_VECTORS(ulong, ulong)
KJIT_MSL_VECTORS(bool, bool)
#undef KJIT_MSL_VECTORS

template <class T>
KJIT_INLINE T select(T a, T b, bool c) {
  return c ? b : a;
}
template <class T, class U>
KJIT_INLINE T mix(T x, T y, U a) {
  return x + (y - x) * a;
}
template <class T>
KJIT_INLINE T saturate(T x) {
  return ::kjit::clamp(x, T(0), T(1));
}
template <class T>
KJIT_INLINE T sign(T x) {
  return ::kjit::isnan(x) ? T(0) : x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
}
template <class T>
KJIT_INLINE T step(T edge, T x) {
  return x < edge ? T(0) : T(1);
}
template <class T>
KJIT_INLINE T fract(T x) {
  return ::kjit::fmin(x - ::kjit::floor(x), T(0x1.fffffep-1f));
}
template <class T>
KJIT_INLINE T divide(T x, T y) {
  return x / y;
}
template <class T, class U>
KJIT_INLINE auto powr(T x, U y) {
  return ::kjit::pow(x, y);
}

#define KJIT_MSL_MATH                                                                            \
  using ::kjit::exp, ::kjit::exp2, ::kjit::expm1, ::kjit::log, ::kjit::log2, ::kjit::log10,      \
      ::kjit::log1p, ::kjit::sqrt, ::kjit::rsqrt, ::kjit::cbrt, ::kjit::sin, ::kjit::cos,        \
      ::kjit::tan, ::kjit::asin, ::kjit::acos, ::kjit::atan, ::kjit::sinh, ::kjit::cosh,         \
      ::kjit::tanh, ::kjit::asinh, ::kjit::acosh, ::kjit::atanh, ::kjit::erf, ::kjit::erfc,      \
      ::kjit::floor, ::kjit::ceil, ::kjit::trunc, ::kjit::round, ::kjit::rint, ::kjit::fabs,     \
      ::kjit::abs, ::kjit::pow, ::kjit::atan2, ::kjit::fmod, ::kjit::fmax, ::kjit::fmin,         \
      ::kjit::copysign, ::kjit::fma, ::kjit::isnan, ::kjit::isinf, ::kjit::isfinite,             \
      ::kjit::signbit, ::kjit::max, ::kjit::min, ::kjit::clamp, ::kjit::dot, ::kjit::length,     \
      ::kjit::all, ::kjit::any, ::metal::select, ::metal::mix, ::metal::saturate, ::metal::sign, \
      ::metal::step, ::metal::fract, ::metal::divide, ::metal::powr;
using ::kjit::exp, ::kjit::exp2, ::kjit::expm1, ::kjit::log, ::kjit::log2, ::kjit::log10,
    ::kjit::log1p, ::kjit::sqrt, ::kjit::rsqrt, ::kjit::cbrt, ::kjit::sin, ::kjit::cos, ::kjit::tan,
    ::kjit::asin, ::kjit::acos, ::kjit::atan, ::kjit::sinh, ::kjit::cosh, ::kjit::tanh,
    ::kjit::asinh, ::kjit::acosh, ::kjit::atanh, ::kjit::erf, ::kjit::erfc, ::kjit::floor,
    ::kjit::ceil, ::kjit::trunc, ::kjit::round, ::kjit::rint, ::kjit::fabs, ::kjit::abs,
    ::kjit::pow, ::kjit::atan2, ::kjit::fmod, ::kjit::fmax, ::kjit::fmin, ::kjit::copysign,
    ::kjit::fma, ::kjit::isnan, ::kjit::isinf, ::kjit::isfinite, ::kjit::signbit, ::kjit::max,
    ::kjit::min, ::kjit::clamp, ::kjit::dot, ::kjit::length, ::kjit::all, ::kjit::any;
// On the CPU the fast and precise variants are the default functions.
namespace fast {
KJIT_MSL_MATH
}
namespace precise {
KJIT_MSL_MATH
}
#undef KJIT_MSL_MATH

}  // namespace metal

namespace kjit_user {
using namespace metal;
using ::kjit::ceildiv, ::kjit::elem_to_loc, ::kjit::elem_to_loc_1, ::kjit::elem_to_loc_2,
    ::kjit::elem_to_loc_3, ::kjit::Limits;
typedef ::kjit::half_t float16_t;
typedef ::kjit::bfloat_t bfloat16_t;
}  // namespace kjit_user
