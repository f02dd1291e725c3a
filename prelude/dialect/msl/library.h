// Metal's standard library beyond C's math, on every target: the integer functions (bit counts,
// rotations, saturating, halving and 24-bit arithmetic, bit fields), three-way minimum, maximum
// and median, smoothstep, the functions with an out-parameter (sincos, frexp, modf) and Metal's
// other float functions, and the geometric functions. Vectors work element by element.
#pragma once

#include "common/int_bits.h"
#include "dialect/msl/names.h"

namespace metal {
using ::kjit::bits::popcount, ::kjit::bits::clz, ::kjit::bits::ctz, ::kjit::bits::reverse_bits,
    ::kjit::bits::absdiff, ::kjit::bits::hadd, ::kjit::bits::rhadd, ::kjit::bits::mulhi,
    ::kjit::bits::mul24;

#define KJIT_MSL_INTEGER template <class T, KJIT_IF(::kjit::bits::is_integer_v<T>)>

// x rotated left by i bits (modulo the width).
KJIT_MSL_INTEGER KJIT_INLINE T rotate(T x, T i) {
  constexpr int bits = ::kjit::bits::width<T>;
  const int n = int(::kjit::bits::widened(i) % bits);
  const unsigned long long v = ::kjit::bits::widened(x);
  return T(n == 0 ? v : v << n | v >> (bits - n));
}
KJIT_MSL_INTEGER KJIT_INLINE T madhi(T x, T y, T z) { return T(mulhi(x, y) + z); }
// Saturating arithmetic: the result clamped to T's range.
KJIT_MSL_INTEGER KJIT_INLINE T addsat(T x, T y) {
  typedef ::kjit::bits::unsigned_t<T> U;
  const T r = T(U(x) + U(y));
  if constexpr (::kjit::bits::is_signed_v<T>) {
    if (((x ^ r) & (y ^ r)) < 0) return x < 0 ? ::kjit::bits::lowest<T> : ::kjit::bits::highest<T>;
    return r;
  } else {
    return r < x ? ::kjit::bits::highest<T> : r;
  }
}
KJIT_MSL_INTEGER KJIT_INLINE T subsat(T x, T y) {
  typedef ::kjit::bits::unsigned_t<T> U;
  const T r = T(U(x) - U(y));
  if constexpr (::kjit::bits::is_signed_v<T>) {
    if (((x ^ y) & (x ^ r)) < 0) return x < 0 ? ::kjit::bits::lowest<T> : ::kjit::bits::highest<T>;
    return r;
  } else {
    return x < y ? T(0) : r;
  }
}
// x * y + z clamped to T's range: exact in 64 bits for narrower types; for 64-bit ones, from the
// product's high and low words.
KJIT_MSL_INTEGER KJIT_INLINE T mad_sat(T x, T y, T z) {
  constexpr T lo = ::kjit::bits::lowest<T>, hi = ::kjit::bits::highest<T>;
  if constexpr (::kjit::bits::width<T> < 64 && ::kjit::bits::is_signed_v<T>) {
    const long long r = static_cast<long long>(x) * y + z;
    return T(r < lo ? lo : r > hi ? hi : r);
  } else if constexpr (::kjit::bits::width<T> < 64) {
    const unsigned long long r = static_cast<unsigned long long>(x) * y + z;
    return T(r > hi ? hi : r);
  } else if constexpr (!::kjit::bits::is_signed_v<T>) {
    const T low = T(x * y), sum = T(low + z);
    return mulhi(x, y) != 0 || sum < low ? hi : sum;
  } else {
    typedef ::kjit::bits::unsigned_t<T> U;
    // The 128-bit product high:low, plus z sign-extended; it fits in T when high is all copies
    // of the sum's sign bit.
    const U low = U(x) * U(y), sum = low + U(z);
    const T high = T(mulhi(x, y) + (sum < low ? 1 : 0) + (z < 0 ? -1 : 0));
    if (high == T(T(sum) < 0 ? -1 : 0)) return T(sum);
    return high < 0 ? lo : hi;
  }
}
KJIT_MSL_INTEGER KJIT_INLINE T mad24(T x, T y, T z) { return T(mul24(x, y) + z); }
// Bits [offset, offset + bits) of x in the low bits, the rest zero (unsigned) or copies of the
// field's top bit (signed).
KJIT_MSL_INTEGER KJIT_INLINE T extract_bits(T x, unsigned offset, unsigned bits) {
  if (bits == 0) return T(0);
  const unsigned long long field = ::kjit::bits::widened(x) >> offset;
  const int spare = 64 - int(bits);
  if constexpr (::kjit::bits::is_signed_v<T>) {
    return T(static_cast<long long>(field << spare) >> spare);
  } else {
    return T((field << spare) >> spare);
  }
}
KJIT_MSL_INTEGER KJIT_INLINE T insert_bits(T base, T insert, unsigned offset, unsigned bits) {
  const unsigned long long mask = (bits >= 64 ? ~0ull : (1ull << bits) - 1) << offset;
  return T((::kjit::bits::widened(base) & ~mask) |
           (::kjit::bits::widened(insert) << offset & mask));
}
#undef KJIT_MSL_INTEGER

// Three-way minimum, maximum and median. Metal's min and max of floats are fmin and fmax (as
// ::kjit's are), so fmin3, fmax3 and fmedian3 are the same functions.
template <class T>
KJIT_INLINE T min3(T a, T b, T c) {
  return ::kjit::min(::kjit::min(a, b), c);
}
template <class T>
KJIT_INLINE T max3(T a, T b, T c) {
  return ::kjit::max(::kjit::max(a, b), c);
}
template <class T>
KJIT_INLINE T median3(T a, T b, T c) {
  return ::kjit::max(::kjit::min(a, b), ::kjit::min(::kjit::max(a, b), c));
}

// a * b + c (fused, which Metal allows).
template <class T>
KJIT_INLINE T mad(T a, T b, T c) {
  return ::kjit::fma(a, b, c);
}
template <class T>
KJIT_INLINE T smoothstep(T edge0, T edge1, T x) {
  const T t = ::kjit::clamp((x - edge0) / (edge1 - edge0), T(0), T(1));
  return t * t * (T(3) - T(2) * t);
}

// Float functions, computed in float for half and bfloat.
#define KJIT_MSL_FLOAT1(name, expression)                \
  KJIT_INLINE float name(float x) { return expression; } \
  template <class H, KJIT_IF(::kjit::is_low_float_v<H>)> \
  KJIT_INLINE H name(H h) {                              \
    return H(name(float(h)));                            \
  }
KJIT_MSL_FLOAT1(exp10, ::kjit::exp10(x))
KJIT_MSL_FLOAT1(logb, KJIT_MATHF(logb)(x))
KJIT_MSL_FLOAT1(sinpi, ::kjit::sinpi(x))
KJIT_MSL_FLOAT1(cospi, ::kjit::cospi(x))
KJIT_MSL_FLOAT1(tanpi, ::kjit::sinpi(x) / ::kjit::cospi(x))
#undef KJIT_MSL_FLOAT1
template <class T>
KJIT_INLINE int ilogb(T x) {
  return KJIT_MATHF(ilogb)(float(x));
}
template <class T>
KJIT_INLINE T fdim(T x, T y) {
  return T(KJIT_MATHF(fdim)(float(x), float(y)));
}
KJIT_INLINE float nextafter(float x, float y) { return KJIT_MATHF(nextafter)(x, y); }
// The next half or bfloat after x towards y: a step of the last bit of H's own.
template <class H, KJIT_IF(::kjit::is_low_float_v<H>)>
KJIT_INLINE H nextafter(H x, H y) {
  const float fx = float(x), fy = float(y);
  if (fx != fx || fy != fy) return H(fx + fy);  // NaN
  if (fx == fy) return y;
  if (fx == 0.0f) return H::from_bits(uint16_t(fy < 0.0f ? 0x8001u : 0x0001u));
  // Away from zero when y lies beyond x, else towards it.
  const bool away = (fy > fx) == (fx > 0.0f);
  return H::from_bits(uint16_t(away ? x.bits + 1 : x.bits - 1));
}
template <class T>
KJIT_INLINE T ldexp(T x, int k) {
  return T(KJIT_MATHF(ldexp)(float(x), k));
}
// The functions with an out-parameter (Metal's thread references).
template <class T>
KJIT_INLINE T sincos(T x, T& cosine) {
  cosine = ::kjit::cos(x);
  return ::kjit::sin(x);
}
template <class T>
KJIT_INLINE T frexp(T x, int& exponent) {
  return T(KJIT_MATHF(frexp)(float(x), &exponent));
}
template <class T>
KJIT_INLINE T modf(T x, T& whole) {
  float w;
  const T fraction = T(KJIT_MATHF(modf)(float(x), &w));
  whole = T(w);
  return fraction;
}

// Element by element over vectors, with scalars where Metal takes them.
KJIT_VEC_ELEMENTWISE(popcount, T)
KJIT_VEC_ELEMENTWISE(clz, T)
KJIT_VEC_ELEMENTWISE(ctz, T)
KJIT_VEC_ELEMENTWISE(reverse_bits, T)
KJIT_VEC_ELEMENTWISE(exp10, T)
KJIT_VEC_ELEMENTWISE(logb, T)
KJIT_VEC_ELEMENTWISE(sinpi, T)
KJIT_VEC_ELEMENTWISE(cospi, T)
KJIT_VEC_ELEMENTWISE(tanpi, T)
KJIT_VEC_ELEMENTWISE(ilogb, int)
KJIT_VEC_BINARY(nextafter)
KJIT_VEC_BINARY(rotate)
template <class T, int N>
KJIT_INLINE ::kjit::vec<::kjit::bits::unsigned_t<T>, N> absdiff(const ::kjit::vec<T, N>& a,
                                                                const ::kjit::vec<T, N>& b) {
  return ::kjit::elementwise<::kjit::bits::unsigned_t<T>>(a, b,
                                                          [](T x, T y) { return absdiff(x, y); });
}
KJIT_VEC_BINARY(hadd)
KJIT_VEC_BINARY(rhadd)
KJIT_VEC_BINARY(mulhi)
KJIT_VEC_BINARY(addsat)
KJIT_VEC_BINARY(subsat)
KJIT_VEC_BINARY(mul24)
KJIT_VEC_BINARY(fdim)
KJIT_VEC_TERNARY(madhi)
KJIT_VEC_TERNARY(mad_sat)
KJIT_VEC_TERNARY(mad24)
KJIT_VEC_TERNARY(min3)
KJIT_VEC_TERNARY(max3)
KJIT_VEC_TERNARY(median3)
KJIT_VEC_TERNARY(smoothstep)
template <class T, int N>
KJIT_INLINE vec<T, N> smoothstep(T edge0, T edge1, const vec<T, N>& x) {
  return smoothstep(vec<T, N>(edge0), vec<T, N>(edge1), x);
}
// fmin3, fmax3 and fmedian3 are min3, max3 and median3, for scalars and vectors alike.
#define KJIT_MSL_SAME_AS(name, same)                       \
  template <class T>                                       \
  KJIT_INLINE T name(const T& a, const T& b, const T& c) { \
    return same(a, b, c);                                  \
  }
KJIT_MSL_SAME_AS(fmin3, min3)
KJIT_MSL_SAME_AS(fmax3, max3)
KJIT_MSL_SAME_AS(fmedian3, median3)
#undef KJIT_MSL_SAME_AS
// The functions with an out-parameter or a parameter of another type, element by element.
template <class T, int N>
KJIT_INLINE vec<T, N> sincos(const vec<T, N>& x, vec<T, N>& cosine) {
  return ::kjit::elementwise<T>(x, cosine, [](T v, T& c) { return sincos(v, c); });
}
template <class T, int N>
KJIT_INLINE vec<T, N> frexp(const vec<T, N>& x, vec<int, N>& exponent) {
  return ::kjit::elementwise<T>(x, exponent, [](T v, int& e) { return frexp(v, e); });
}
template <class T, int N>
KJIT_INLINE vec<T, N> modf(const vec<T, N>& x, vec<T, N>& whole) {
  return ::kjit::elementwise<T>(x, whole, [](T v, T& w) { return modf(v, w); });
}
template <class T, int N>
KJIT_INLINE vec<T, N> ldexp(const vec<T, N>& x, const vec<int, N>& k) {
  return ::kjit::elementwise<T>(x, k, [](T v, int e) { return ldexp(v, e); });
}
template <class T, int N>
KJIT_INLINE vec<T, N> extract_bits(const vec<T, N>& x, unsigned offset, unsigned bits) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = extract_bits(x[i], offset, bits);
  return r;
}
template <class T, int N>
KJIT_INLINE vec<T, N> insert_bits(const vec<T, N>& base, const vec<T, N>& insert, unsigned offset,
                                  unsigned bits) {
  return ::kjit::elementwise<T>(base, insert,
                                [=](T b, T v) { return insert_bits(b, v, offset, bits); });
}

// Geometry.
template <class T, int N>
KJIT_INLINE T length_squared(const vec<T, N>& a) {
  return ::kjit::dot(a, a);
}
template <class T, int N>
KJIT_INLINE T distance(const vec<T, N>& a, const vec<T, N>& b) {
  return ::kjit::length(a - b);
}
template <class T, int N>
KJIT_INLINE T distance_squared(const vec<T, N>& a, const vec<T, N>& b) {
  return ::kjit::dot(a - b, a - b);
}
template <class T, int N>
KJIT_INLINE vec<T, N> normalize(const vec<T, N>& a) {
  return a * ::kjit::rsqrt(::kjit::dot(a, a));
}
template <class T>
KJIT_INLINE vec<T, 3> cross(const vec<T, 3>& a, const vec<T, 3>& b) {
  return vec<T, 3>(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]);
}
// i reflected about the plane of normal n (n of unit length).
template <class T, int N>
KJIT_INLINE vec<T, N> reflect(const vec<T, N>& i, const vec<T, N>& n) {
  return i - T(2) * ::kjit::dot(n, i) * n;
}
// i refracted through the surface of normal n with the ratio of indices eta (zero when the
// light is reflected whole).
template <class T, int N, class E>
KJIT_INLINE vec<T, N> refract(const vec<T, N>& i, const vec<T, N>& n, E eta) {
  const T d = ::kjit::dot(n, i), e = T(eta);
  const T k = T(1) - e * e * (T(1) - d * d);
  if (k < T(0)) return vec<T, N>(T(0));
  return e * i - (e * d + ::kjit::sqrt(k)) * n;
}
template <class T, int N>
KJIT_INLINE vec<T, N> faceforward(const vec<T, N>& n, const vec<T, N>& i, const vec<T, N>& nref) {
  return ::kjit::dot(nref, i) < T(0) ? n : -n;
}

}  // namespace metal

#define KJIT_MSL_LIBRARY                                                                           \
  using ::metal::popcount, ::metal::clz, ::metal::ctz, ::metal::reverse_bits, ::metal::rotate,     \
      ::metal::absdiff, ::metal::hadd, ::metal::rhadd, ::metal::mulhi, ::metal::madhi,             \
      ::metal::addsat, ::metal::subsat, ::metal::mad_sat, ::metal::mul24, ::metal::mad24,          \
      ::metal::extract_bits, ::metal::insert_bits, ::metal::min3, ::metal::max3, ::metal::median3, \
      ::metal::fmin3, ::metal::fmax3, ::metal::fmedian3, ::metal::mad, ::metal::smoothstep,        \
      ::metal::exp10, ::metal::logb, ::metal::sinpi, ::metal::cospi, ::metal::tanpi,               \
      ::metal::ilogb, ::metal::fdim, ::metal::nextafter, ::metal::ldexp, ::metal::sincos,          \
      ::metal::frexp, ::metal::modf, ::metal::length_squared, ::metal::distance,                   \
      ::metal::distance_squared, ::metal::normalize, ::metal::cross, ::metal::reflect,             \
      ::metal::refract, ::metal::faceforward;
namespace metal::fast {
KJIT_MSL_LIBRARY
}
namespace metal::precise {
KJIT_MSL_LIBRARY
}
namespace kjit_user {
KJIT_MSL_LIBRARY
}
#undef KJIT_MSL_LIBRARY
