// Metal's type utilities for kernels on every target: as_type, numeric_limits, packed vectors and
// the constants of <metal_math> (INFINITY, NAN, FLT_MAX, M_PI_F, ...).
#pragma once

#include "common/numeric_limits.h"
#include "dialect/msl/names.h"

namespace metal {

// Reinterprets the bits of |x| as a T of the same size (scalars and vectors alike).
template <class T, class U>
KJIT_INLINE T as_type(const U& x) {
  static_assert(sizeof(T) == sizeof(U), "as_type: the two types differ in size");
  return __builtin_bit_cast(T, x);
}

using ::kjit::numeric_limits;

// Packed vectors: the elements of vec<T, N> without its alignment (packed_float3 is 12 bytes,
// aligned as a float). They name, index and swizzle elements like vectors and convert to and from
// them; arithmetic goes through the aligned type, as in float3(p) * 2.0f.
template <class T, int N>
struct packed_vec;
template <class T>
struct packed_vec<T, 2> : ::kjit::vector_access<packed_vec<T, 2>, T, 2> {
  KJIT_VEC_COMPONENT(x, r);
  KJIT_VEC_COMPONENT(y, g);
  packed_vec() = default;
  KJIT_INLINE packed_vec(T a, T b) : x(a), y(b) {}
  KJIT_INLINE packed_vec(const vec<T, 2>& v) : x(v.x), y(v.y) {}
  KJIT_INLINE operator vec<T, 2>() const { return {x, y}; }
};
template <class T>
struct packed_vec<T, 3> : ::kjit::vector_access<packed_vec<T, 3>, T, 3> {
  KJIT_VEC_COMPONENT(x, r);
  KJIT_VEC_COMPONENT(y, g);
  KJIT_VEC_COMPONENT(z, b);
  packed_vec() = default;
  KJIT_INLINE packed_vec(T a, T b, T c) : x(a), y(b), z(c) {}
  KJIT_INLINE packed_vec(const vec<T, 3>& v) : x(v.x), y(v.y), z(v.z) {}
  KJIT_INLINE operator vec<T, 3>() const { return {x, y, z}; }
};
template <class T>
struct packed_vec<T, 4> : ::kjit::vector_access<packed_vec<T, 4>, T, 4> {
  KJIT_VEC_COMPONENT(x, r);
  KJIT_VEC_COMPONENT(y, g);
  KJIT_VEC_COMPONENT(z, b);
  KJIT_VEC_COMPONENT(w, a);
  packed_vec() = default;
  KJIT_INLINE packed_vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
  KJIT_INLINE packed_vec(const vec<T, 4>& v) : x(v.x), y(v.y), z(v.z), w(v.w) {}
  KJIT_INLINE operator vec<T, 4>() const { return {x, y, z, w}; }
};

}  // namespace metal

// Each constant is defined unless the target's own headers already define it.
#ifndef INFINITY
#define INFINITY (::metal::numeric_limits<float>::infinity())
#endif
#ifndef NAN
#define NAN (::metal::numeric_limits<float>::quiet_NaN())
#endif
#ifndef MAXFLOAT
#define MAXFLOAT 0x1.fffffep127f
#endif
#ifndef HUGE_VALF
#define HUGE_VALF INFINITY
#endif
#ifndef FLT_MAX
#define FLT_MAX 0x1.fffffep127f
#endif
#ifndef FLT_MIN
#define FLT_MIN 0x1p-126f
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 0x1p-23f
#endif
#ifndef HALF_MAX
#define HALF_MAX (::metal::numeric_limits<::metal::half>::max())
#endif
#ifndef HALF_MIN
#define HALF_MIN (::metal::numeric_limits<::metal::half>::min())
#endif
#ifndef HALF_EPSILON
#define HALF_EPSILON (::metal::numeric_limits<::metal::half>::epsilon())
#endif
#ifndef M_E_F
#define M_E_F 2.71828182845904523536f
#endif
#ifndef M_LOG2E_F
#define M_LOG2E_F 1.44269504088896340736f
#endif
#ifndef M_LOG10E_F
#define M_LOG10E_F 0.434294481903251827651f
#endif
#ifndef M_LN2_F
#define M_LN2_F 0.693147180559945309417f
#endif
#ifndef M_LN10_F
#define M_LN10_F 2.30258509299404568402f
#endif
#ifndef M_PI_F
#define M_PI_F 3.14159265358979323846f
#endif
#ifndef M_PI_2_F
#define M_PI_2_F 1.57079632679489661923f
#endif
#ifndef M_PI_4_F
#define M_PI_4_F 0.785398163397448309616f
#endif
#ifndef M_1_PI_F
#define M_1_PI_F 0.318309886183790671538f
#endif
#ifndef M_2_PI_F
#define M_2_PI_F 0.636619772367581343076f
#endif
#ifndef M_2_SQRTPI_F
#define M_2_SQRTPI_F 1.12837916709551257390f
#endif
#ifndef M_SQRT2_F
#define M_SQRT2_F 1.41421356237309504880f
#endif
#ifndef M_SQRT1_2_F
#define M_SQRT1_2_F 0.707106781186547524401f
#endif

namespace kjit_user {
using metal::as_type, metal::numeric_limits;
#define KJIT_MSL_PACKED(T, name)                    \
  typedef metal::packed_vec<T, 2> packed_##name##2; \
  typedef metal::packed_vec<T, 3> packed_##name##3; \
  typedef metal::packed_vec<T, 4> packed_##name##4;
KJIT_MSL_PACKED(float, float)
KJIT_MSL_PACKED(metal::half, half)
KJIT_MSL_PACKED(metal::bfloat, bfloat)
KJIT_MSL_PACKED(int, int)
KJIT_MSL_PACKED(unsigned, uint)
KJIT_MSL_PACKED(short, short)
KJIT_MSL_PACKED(unsigned short, ushort)
KJIT_MSL_PACKED(char, char)
KJIT_MSL_PACKED(unsigned char, uchar)
#undef KJIT_MSL_PACKED
}  // namespace kjit_user
