// cuda::std::complex: a complex number with real() and imag() accessors, as libcu++ has it, and
// its arithmetic (the plain formulas MLX asks libcu++ for) and functions.
#pragma once

#include "dialect/cuda/std.h"

namespace cuda::std {

template <class T>
class complex {
 public:
  using value_type = T;
  KJIT_INLINE constexpr complex(T re = T(), T im = T()) : re_(re), im_(im) {}
  template <class U>
  KJIT_INLINE constexpr explicit complex(const complex<U>& z)
      : re_(T(z.real())), im_(T(z.imag())) {}

  KJIT_INLINE constexpr T real() const { return re_; }
  KJIT_INLINE constexpr T imag() const { return im_; }
  KJIT_INLINE constexpr void real(T v) { re_ = v; }
  KJIT_INLINE constexpr void imag(T v) { im_ = v; }

  KJIT_INLINE constexpr complex& operator+=(const complex& z) { return *this = *this + z; }
  KJIT_INLINE constexpr complex& operator-=(const complex& z) { return *this = *this - z; }
  KJIT_INLINE constexpr complex& operator*=(const complex& z) { return *this = *this * z; }
  KJIT_INLINE constexpr complex& operator/=(const complex& z) { return *this = *this / z; }

 private:
  T re_, im_;
};

template <class T>
KJIT_INLINE constexpr complex<T> operator+(const complex<T>& a, const complex<T>& b) {
  return {a.real() + b.real(), a.imag() + b.imag()};
}
template <class T>
KJIT_INLINE constexpr complex<T> operator-(const complex<T>& a, const complex<T>& b) {
  return {a.real() - b.real(), a.imag() - b.imag()};
}
template <class T>
KJIT_INLINE constexpr complex<T> operator*(const complex<T>& a, const complex<T>& b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
template <class T>
KJIT_INLINE constexpr complex<T> operator/(const complex<T>& a, const complex<T>& b) {
  const T d = b.real() * b.real() + b.imag() * b.imag();
  return {(a.real() * b.real() + a.imag() * b.imag()) / d,
          (a.imag() * b.real() - a.real() * b.imag()) / d};
}
// A real operand on either side is the complex number (x, 0).
#define KJIT_COMPLEX_MIXED(op)                                                    \
  template <class T>                                                              \
  KJIT_INLINE constexpr complex<T> operator op(const complex<T>& a, const T& b) { \
    return a op complex<T>(b);                                                    \
  }                                                                               \
  template <class T>                                                              \
  KJIT_INLINE constexpr complex<T> operator op(const T& a, const complex<T>& b) { \
    return complex<T>(a) op b;                                                    \
  }
KJIT_COMPLEX_MIXED(+)
KJIT_COMPLEX_MIXED(-)
KJIT_COMPLEX_MIXED(*)
KJIT_COMPLEX_MIXED(/)
#undef KJIT_COMPLEX_MIXED
template <class T>
KJIT_INLINE constexpr complex<T> operator+(const complex<T>& a) {
  return a;
}
template <class T>
KJIT_INLINE constexpr complex<T> operator-(const complex<T>& a) {
  return {-a.real(), -a.imag()};
}
template <class T>
KJIT_INLINE constexpr bool operator==(const complex<T>& a, const complex<T>& b) {
  return a.real() == b.real() && a.imag() == b.imag();
}
template <class T>
KJIT_INLINE constexpr bool operator!=(const complex<T>& a, const complex<T>& b) {
  return !(a == b);
}

template <class T>
KJIT_INLINE constexpr T real(const complex<T>& z) {
  return z.real();
}
template <class T>
KJIT_INLINE constexpr T imag(const complex<T>& z) {
  return z.imag();
}
template <class T>
KJIT_INLINE constexpr complex<T> conj(const complex<T>& z) {
  return {z.real(), -z.imag()};
}
template <class T>
KJIT_INLINE constexpr T norm(const complex<T>& z) {
  return z.real() * z.real() + z.imag() * z.imag();
}
template <class T>
KJIT_INLINE T abs(const complex<T>& z) {
  return hypot(z.real(), z.imag());
}
template <class T>
KJIT_INLINE T arg(const complex<T>& z) {
  return atan2(z.imag(), z.real());
}
template <class T>
KJIT_INLINE complex<T> polar(const T& r, const T& theta = T()) {
  return {r * cos(theta), r * sin(theta)};
}
template <class T>
KJIT_INLINE complex<T> exp(const complex<T>& z) {
  return polar(exp(z.real()), z.imag());
}
template <class T>
KJIT_INLINE complex<T> log(const complex<T>& z) {
  return {log(abs(z)), arg(z)};
}
template <class T>
KJIT_INLINE complex<T> log10(const complex<T>& z) {
  return log(z) / log(T(10));
}
template <class T>
KJIT_INLINE complex<T> pow(const complex<T>& z, const complex<T>& w) {
  return exp(w * log(z));
}
// The principal root, computed from |z| and the larger part so that neither cancels.
template <class T>
KJIT_INLINE complex<T> sqrt(const complex<T>& z) {
  const T r = abs(z);
  if (r == T(0)) return {T(0), z.imag()};
  const T t = sqrt((r + fabs(z.real())) / T(2));
  if (z.real() >= T(0)) return {t, z.imag() / (T(2) * t)};
  return {fabs(z.imag()) / (T(2) * t), copysign(t, z.imag())};
}
template <class T>
KJIT_INLINE complex<T> sin(const complex<T>& z) {
  return {sin(z.real()) * cosh(z.imag()), cos(z.real()) * sinh(z.imag())};
}
template <class T>
KJIT_INLINE complex<T> cos(const complex<T>& z) {
  return {cos(z.real()) * cosh(z.imag()), -sin(z.real()) * sinh(z.imag())};
}
template <class T>
KJIT_INLINE complex<T> tan(const complex<T>& z) {
  return sin(z) / cos(z);
}
template <class T>
KJIT_INLINE complex<T> sinh(const complex<T>& z) {
  return {sinh(z.real()) * cos(z.imag()), cosh(z.real()) * sin(z.imag())};
}
template <class T>
KJIT_INLINE complex<T> cosh(const complex<T>& z) {
  return {cosh(z.real()) * cos(z.imag()), sinh(z.real()) * sin(z.imag())};
}
template <class T>
KJIT_INLINE complex<T> tanh(const complex<T>& z) {
  return sinh(z) / cosh(z);
}

}  // namespace cuda::std
