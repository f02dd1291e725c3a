// Scalar types every dialect sees: fixed-width integers, half and bfloat with Metal's promotion
// rules (half op half -> half, half op int -> half, half op float -> float), complex64_t.
// No standard headers: compile time is user-visible.
#pragma once

#include "common/float_bits.h"

namespace kjit {

// Small type traits (no <type_traits>: kernels include no system headers). Written for C++17 so
// that the same prelude compiles with NVRTC.
template <class A, class B>
struct is_same {
  static constexpr bool value = false;
};
template <class A>
struct is_same<A, A> {
  static constexpr bool value = true;
};
template <class A, class B>
inline constexpr bool is_same_v = is_same<A, B>::value;

template <bool B, class T = int>
struct enable_if {};
template <class T>
struct enable_if<true, T> {
  using type = T;
};
// A template parameter that removes the declaration from overload resolution unless |cond|.
#define KJIT_IF(...) typename ::kjit::enable_if<(__VA_ARGS__), int>::type = 0

template <class T>
inline constexpr bool is_int_like_v =
    is_same_v<T, bool> || is_same_v<T, char> || is_same_v<T, signed char> ||
    is_same_v<T, unsigned char> || is_same_v<T, short> || is_same_v<T, unsigned short> ||
    is_same_v<T, int> || is_same_v<T, unsigned> || is_same_v<T, long> ||
    is_same_v<T, unsigned long> || is_same_v<T, long long> || is_same_v<T, unsigned long long>;

template <class T>
inline constexpr bool is_builtin_float_v =
    is_same_v<T, float> || is_same_v<T, double> || is_same_v<T, long double>;

struct bfloat_t;

struct half_t {
  uint16_t bits;
  half_t() = default;
  KJIT_INLINE half_t(float f) : bits(float_to_half_bits(f)) {}
  // half <-> bfloat converts implicitly, as in Metal (through float).
  template <class B, KJIT_IF(is_same_v<B, bfloat_t>)>
  KJIT_INLINE half_t(B b) : half_t(float(b)) {}
  KJIT_INLINE operator float() const { return half_bits_to_float(bits); }
  struct bits_tag {};
  constexpr half_t(bits_tag, uint16_t b) : bits(b) {}
  static constexpr half_t from_bits(uint16_t b) { return half_t(bits_tag{}, b); }
};

struct bfloat_t {
  uint16_t bits;
  bfloat_t() = default;
  KJIT_INLINE bfloat_t(float f) : bits(float_to_bfloat_bits(f)) {}
  KJIT_INLINE bfloat_t(half_t h) : bfloat_t(float(h)) {}
  KJIT_INLINE operator float() const { return bfloat_bits_to_float(bits); }
  struct bits_tag {};
  constexpr bfloat_t(bits_tag, uint16_t b) : bits(b) {}
  static constexpr bfloat_t from_bits(uint16_t b) { return bfloat_t(bits_tag{}, b); }
};

template <class T>
inline constexpr bool is_low_float_v = is_same_v<T, half_t> || is_same_v<T, bfloat_t>;

// Arithmetic of half/bfloat, computed in float and rounded back when the result is low-precision.
#define KJIT_LOW_FLOAT_OP(op)                                                     \
  template <class H, KJIT_IF(is_low_float_v<H>)>                                  \
  KJIT_INLINE H operator op(H a, H b) {                                           \
    return H(float(a) op float(b));                                               \
  }                                                                               \
  template <class H, class I, KJIT_IF(is_low_float_v<H>&& is_int_like_v<I>)>      \
  KJIT_INLINE H operator op(H a, I b) {                                           \
    return H(float(a) op float(b));                                               \
  }                                                                               \
  template <class H, class I, KJIT_IF(is_low_float_v<H>&& is_int_like_v<I>)>      \
  KJIT_INLINE H operator op(I a, H b) {                                           \
    return H(float(a) op float(b));                                               \
  }                                                                               \
  template <class H, class F, KJIT_IF(is_low_float_v<H>&& is_builtin_float_v<F>)> \
  KJIT_INLINE float operator op(H a, F b) {                                       \
    return float(a) op float(b);                                                  \
  }                                                                               \
  template <class H, class F, KJIT_IF(is_low_float_v<H>&& is_builtin_float_v<F>)> \
  KJIT_INLINE float operator op(F a, H b) {                                       \
    return float(a) op float(b);                                                  \
  }                                                                               \
  template <class A, class B,                                                     \
            KJIT_IF(is_low_float_v<A>&& is_low_float_v<B> && (!is_same_v<A, B>))> \
  KJIT_INLINE float operator op(A a, B b) {                                       \
    return float(a) op float(b);                                                  \
  }                                                                               \
  template <class H, class U, KJIT_IF(is_low_float_v<H>)>                         \
  KJIT_INLINE H& operator op##=(H& a, U b) {                                      \
    return a = H(float(a) op float(b));                                           \
  }

KJIT_LOW_FLOAT_OP(+)
KJIT_LOW_FLOAT_OP(-)
KJIT_LOW_FLOAT_OP(*)
KJIT_LOW_FLOAT_OP(/)
#undef KJIT_LOW_FLOAT_OP

template <class H, KJIT_IF(is_low_float_v<H>)>
KJIT_INLINE H operator-(H a) {
  return H::from_bits(static_cast<uint16_t>(a.bits ^ 0x8000u));
}
template <class H, KJIT_IF(is_low_float_v<H>)>
KJIT_INLINE H operator+(H a) {
  return a;
}
template <class H, KJIT_IF(is_low_float_v<H>)>
KJIT_INLINE H& operator++(H& a) {
  return a = H(float(a) + 1.0f);
}
template <class H, KJIT_IF(is_low_float_v<H>)>
KJIT_INLINE H& operator--(H& a) {
  return a = H(float(a) - 1.0f);
}
template <class H, KJIT_IF(is_low_float_v<H>)>
KJIT_INLINE H operator++(H& a, int) {
  const H before = a;
  ++a;
  return before;
}
template <class H, KJIT_IF(is_low_float_v<H>)>
KJIT_INLINE H operator--(H& a, int) {
  const H before = a;
  --a;
  return before;
}

struct complex64_t {
  float real = 0, imag = 0;
  complex64_t() = default;
  constexpr complex64_t(float r, float i = 0) : real(r), imag(i) {}
};
KJIT_INLINE complex64_t operator+(complex64_t a, complex64_t b) {
  return {a.real + b.real, a.imag + b.imag};
}
KJIT_INLINE complex64_t operator-(complex64_t a, complex64_t b) {
  return {a.real - b.real, a.imag - b.imag};
}
KJIT_INLINE complex64_t operator*(complex64_t a, complex64_t b) {
  return {a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real};
}
KJIT_INLINE complex64_t operator/(complex64_t a, complex64_t b) {
  float d = b.real * b.real + b.imag * b.imag;
  return {(a.real * b.real + a.imag * b.imag) / d, (a.imag * b.real - a.real * b.imag) / d};
}
KJIT_INLINE complex64_t operator-(complex64_t a) { return {-a.real, -a.imag}; }
KJIT_INLINE bool operator==(complex64_t a, complex64_t b) {
  return a.real == b.real && a.imag == b.imag;
}
KJIT_INLINE complex64_t& operator+=(complex64_t& a, complex64_t b) { return a = a + b; }
KJIT_INLINE complex64_t& operator-=(complex64_t& a, complex64_t b) { return a = a - b; }
KJIT_INLINE complex64_t& operator*=(complex64_t& a, complex64_t b) { return a = a * b; }
KJIT_INLINE complex64_t& operator/=(complex64_t& a, complex64_t b) { return a = a / b; }

}  // namespace kjit

using complex64_t = ::kjit::complex64_t;
