// Short vectors (Metal's vec<T, N>, float4, uint3, ...): Metal's sizes and alignment (a 3-vector
// is padded to 4 elements), broadcast and element-wise constructors, component-wise operators.
#pragma once

#include "common/math.h"

namespace kjit {

template <class T, int N>
struct vec;

// Metal's swizzles: the rewriter turns v.zyx into v.template swizzle<2, 1, 0>() and an assigned
// swizzle (v.xy = ..., v.xz += ...) into v.template swizzle_ref<0, 1>(), a view that writes
// through to the vector's elements.
template <class V, int... I>
struct swizzle_view {
  V& v;
  template <class R>
  KJIT_INLINE swizzle_view& operator=(const R& r) {
    constexpr int idx[] = {I...};
    auto value = vec<typename V::element_type, sizeof...(I)>(r);
    for (int k = 0; k < int(sizeof...(I)); ++k) v[idx[k]] = value[k];
    return *this;
  }
#define KJIT_SWIZZLE_COMPOUND(op)                        \
  template <class R>                                     \
  KJIT_INLINE swizzle_view& operator op##=(const R& r) { \
    return *this = v.template swizzle<I...>() op r;      \
  }
  KJIT_SWIZZLE_COMPOUND(+)
  KJIT_SWIZZLE_COMPOUND(-)
  KJIT_SWIZZLE_COMPOUND(*)
  KJIT_SWIZZLE_COMPOUND(/)
#undef KJIT_SWIZZLE_COMPOUND
};

// A component under both of Metal's names (x and r, y and g, z and b, w and a). Reading one name
// after writing the other is the union punning every compiler kjit uses defines.
#define KJIT_VEC_COMPONENT(xyzw, rgba) \
  union {                              \
    T xyzw;                            \
    T rgba;                            \
  }

// What every short vector type (vec, and Metal's packed vectors) has over its components x, y,
// z, w: element access by index and the swizzles. Access by index selects a member (never pointer
// arithmetic across members), so that vectors stay in registers once loops over their elements
// are unrolled.
template <class V, class T, int N>
struct vector_access {
  using element_type = T;
  KJIT_INLINE T& operator[](int i) { return element(static_cast<V&>(*this), i); }
  KJIT_INLINE const T& operator[](int i) const { return element(static_cast<const V&>(*this), i); }
  template <int... I>
  KJIT_INLINE vec<T, sizeof...(I)> swizzle() const {
    static_assert(((I < N) && ...), "a swizzle names a component the vector does not have");
    const V& v = static_cast<const V&>(*this);
    return vec<T, sizeof...(I)>(v[I]...);
  }
  template <int... I>
  KJIT_INLINE swizzle_view<V, I...> swizzle_ref() {
    static_assert(((I < N) && ...), "a swizzle names a component the vector does not have");
    static_assert(distinct<I...>(), "an assigned swizzle names a component twice");
    return {static_cast<V&>(*this)};
  }

 private:
  template <int... I>
  static constexpr bool distinct() {
    constexpr int idx[] = {I...};
    for (int a = 0; a < int(sizeof...(I)); ++a) {
      for (int b = a + 1; b < int(sizeof...(I)); ++b) {
        if (idx[a] == idx[b]) return false;
      }
    }
    return true;
  }
  template <class W>
  KJIT_INLINE static auto& element(W& v, int i) {
    if constexpr (N == 2) {
      return i == 0 ? v.x : v.y;
    } else if constexpr (N == 3) {
      return i == 0 ? v.x : i == 1 ? v.y : v.z;
    } else {
      return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
    }
  }
};

template <class T>
struct alignas(2 * sizeof(T)) vec<T, 2> : vector_access<vec<T, 2>, T, 2> {
  KJIT_VEC_COMPONENT(x, r);
  KJIT_VEC_COMPONENT(y, g);
  vec() = default;
  KJIT_INLINE constexpr vec(T s) : x(s), y(s) {}
  KJIT_INLINE constexpr vec(T a, T b) : x(a), y(b) {}
  template <class U>
  KJIT_INLINE constexpr explicit vec(const vec<U, 2>& v) : x(T(v.x)), y(T(v.y)) {}
};

template <class T>
struct alignas(4 * sizeof(T)) vec<T, 3> : vector_access<vec<T, 3>, T, 3> {
  KJIT_VEC_COMPONENT(x, r);
  KJIT_VEC_COMPONENT(y, g);
  KJIT_VEC_COMPONENT(z, b);
  vec() = default;
  KJIT_INLINE constexpr vec(T s) : x(s), y(s), z(s) {}
  KJIT_INLINE constexpr vec(T a, T b, T c) : x(a), y(b), z(c) {}
  KJIT_INLINE constexpr vec(const vec<T, 2>& ab, T c) : x(ab.x), y(ab.y), z(c) {}
  KJIT_INLINE constexpr vec(T a, const vec<T, 2>& bc) : x(a), y(bc.x), z(bc.y) {}
  template <class U>
  KJIT_INLINE constexpr explicit vec(const vec<U, 3>& v) : x(T(v.x)), y(T(v.y)), z(T(v.z)) {}
#ifdef KJIT_CUDA
  // CUDA's own uint3 (threadIdx, and what cuda_kernel bodies declare) converts both ways.
  KJIT_INLINE vec(const ::uint3& v) : x(T(v.x)), y(T(v.y)), z(T(v.z)) {}
  KJIT_INLINE operator ::uint3() const {
    return ::make_uint3(unsigned(x), unsigned(y), unsigned(z));
  }
#endif
};

template <class T>
struct alignas(4 * sizeof(T)) vec<T, 4> : vector_access<vec<T, 4>, T, 4> {
  KJIT_VEC_COMPONENT(x, r);
  KJIT_VEC_COMPONENT(y, g);
  KJIT_VEC_COMPONENT(z, b);
  KJIT_VEC_COMPONENT(w, a);
  vec() = default;
  KJIT_INLINE constexpr vec(T s) : x(s), y(s), z(s), w(s) {}
  KJIT_INLINE constexpr vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
  KJIT_INLINE constexpr vec(const vec<T, 2>& ab, const vec<T, 2>& cd)
      : x(ab.x), y(ab.y), z(cd.x), w(cd.y) {}
  KJIT_INLINE constexpr vec(const vec<T, 2>& ab, T c, T d) : x(ab.x), y(ab.y), z(c), w(d) {}
  KJIT_INLINE constexpr vec(T a, const vec<T, 2>& bc, T d) : x(a), y(bc.x), z(bc.y), w(d) {}
  KJIT_INLINE constexpr vec(T a, T b, const vec<T, 2>& cd) : x(a), y(b), z(cd.x), w(cd.y) {}
  KJIT_INLINE constexpr vec(const vec<T, 3>& abc, T d) : x(abc.x), y(abc.y), z(abc.z), w(d) {}
  KJIT_INLINE constexpr vec(T a, const vec<T, 3>& bcd) : x(a), y(bcd.x), z(bcd.y), w(bcd.z) {}
  template <class U>
  KJIT_INLINE constexpr explicit vec(const vec<U, 4>& v)
      : x(T(v.x)), y(T(v.y)), z(T(v.z)), w(T(v.w)) {}
};

template <class T>
inline constexpr bool is_vec_v = false;
template <class T, int N>
inline constexpr bool is_vec_v<vec<T, N>> = true;

// A binary operator element by element, giving a vector of R (T, or bool for a comparison):
// between two vectors, and between a vector and a scalar either side.
#define KJIT_VEC_BINARY_OP(op, R)                                             \
  template <class T, int N>                                                   \
  KJIT_INLINE vec<R, N> operator op(const vec<T, N>& a, const vec<T, N>& b) { \
    vec<R, N> r;                                                              \
    for (int i = 0; i < N; ++i) r[i] = R(a[i] op b[i]);                       \
    return r;                                                                 \
  }                                                                           \
  template <class T, int N, class S, KJIT_IF((!is_vec_v<S>))>                 \
  KJIT_INLINE vec<R, N> operator op(const vec<T, N>& a, S b) {                \
    return a op vec<T, N>(T(b));                                              \
  }                                                                           \
  template <class T, int N, class S, KJIT_IF((!is_vec_v<S>))>                 \
  KJIT_INLINE vec<R, N> operator op(S a, const vec<T, N>& b) {                \
    return vec<T, N>(T(a)) op b;                                              \
  }
#define KJIT_VEC_OP(op)                                             \
  KJIT_VEC_BINARY_OP(op, T)                                         \
  template <class T, int N, class U>                                \
  KJIT_INLINE vec<T, N>& operator op##=(vec<T, N>& a, const U& b) { \
    return a = a op b;                                              \
  }
KJIT_VEC_OP(+)
KJIT_VEC_OP(-)
KJIT_VEC_OP(*)
KJIT_VEC_OP(/)
KJIT_VEC_OP(%)
KJIT_VEC_OP(&)
KJIT_VEC_OP(|)
KJIT_VEC_OP(^)
KJIT_VEC_OP(<<)
KJIT_VEC_OP(>>)
#undef KJIT_VEC_OP
KJIT_VEC_BINARY_OP(==, bool)
KJIT_VEC_BINARY_OP(!=, bool)
KJIT_VEC_BINARY_OP(<, bool)
KJIT_VEC_BINARY_OP(<=, bool)
KJIT_VEC_BINARY_OP(>, bool)
KJIT_VEC_BINARY_OP(>=, bool)
#undef KJIT_VEC_BINARY_OP

#define KJIT_VEC_PREFIX(op, R)                            \
  template <class T, int N>                               \
  KJIT_INLINE vec<R, N> operator op(const vec<T, N>& a) { \
    vec<R, N> r;                                          \
    for (int i = 0; i < N; ++i) r[i] = op a[i];           \
    return r;                                             \
  }
KJIT_VEC_PREFIX(-, T)
KJIT_VEC_PREFIX(+, T)
KJIT_VEC_PREFIX(~, T)
KJIT_VEC_PREFIX(!, bool)
#undef KJIT_VEC_PREFIX

template <class T, int N>
KJIT_INLINE vec<T, N>& operator++(vec<T, N>& a) {
  return a += T(1);
}
template <class T, int N>
KJIT_INLINE vec<T, N>& operator--(vec<T, N>& a) {
  return a -= T(1);
}
template <class T, int N>
KJIT_INLINE vec<T, N> operator++(vec<T, N>& a, int) {
  const vec<T, N> before = a;
  a += T(1);
  return before;
}
template <class T, int N>
KJIT_INLINE vec<T, N> operator--(vec<T, N>& a, int) {
  const vec<T, N> before = a;
  a -= T(1);
  return before;
}

// The math functions element by element: one argument, two (vectors, or a vector and a
// scalar), three (fma), and the classifications, which give a vector of bools.
// KJIT_VEC_ELEMENTWISE(name, R): name(v) giving a vector of R (T, or bool for a
// classification); the dialects' own functions use it too.
#define KJIT_VEC_ELEMENTWISE(name, R)                              \
  template <class T, int N>                                        \
  KJIT_INLINE ::kjit::vec<R, N> name(const ::kjit::vec<T, N>& a) { \
    ::kjit::vec<R, N> r;                                           \
    for (int i = 0; i < N; ++i) r[i] = name(a[i]);                 \
    return r;                                                      \
  }
KJIT_VEC_ELEMENTWISE(exp, T)
KJIT_VEC_ELEMENTWISE(exp2, T)
KJIT_VEC_ELEMENTWISE(expm1, T)
KJIT_VEC_ELEMENTWISE(log, T)
KJIT_VEC_ELEMENTWISE(log2, T)
KJIT_VEC_ELEMENTWISE(log10, T)
KJIT_VEC_ELEMENTWISE(log1p, T)
KJIT_VEC_ELEMENTWISE(sqrt, T)
KJIT_VEC_ELEMENTWISE(rsqrt, T)
KJIT_VEC_ELEMENTWISE(cbrt, T)
KJIT_VEC_ELEMENTWISE(sin, T)
KJIT_VEC_ELEMENTWISE(cos, T)
KJIT_VEC_ELEMENTWISE(tan, T)
KJIT_VEC_ELEMENTWISE(asin, T)
KJIT_VEC_ELEMENTWISE(acos, T)
KJIT_VEC_ELEMENTWISE(atan, T)
KJIT_VEC_ELEMENTWISE(sinh, T)
KJIT_VEC_ELEMENTWISE(cosh, T)
KJIT_VEC_ELEMENTWISE(tanh, T)
KJIT_VEC_ELEMENTWISE(asinh, T)
KJIT_VEC_ELEMENTWISE(acosh, T)
KJIT_VEC_ELEMENTWISE(atanh, T)
KJIT_VEC_ELEMENTWISE(erf, T)
KJIT_VEC_ELEMENTWISE(erfc, T)
KJIT_VEC_ELEMENTWISE(floor, T)
KJIT_VEC_ELEMENTWISE(ceil, T)
KJIT_VEC_ELEMENTWISE(trunc, T)
KJIT_VEC_ELEMENTWISE(round, T)
KJIT_VEC_ELEMENTWISE(rint, T)
KJIT_VEC_ELEMENTWISE(fabs, T)
KJIT_VEC_ELEMENTWISE(abs, T)

// KJIT_VEC_BINARY(name) and KJIT_VEC_TERNARY(name): the same for two and three arguments
// (vectors, or for two, a vector and a scalar); the dialects' own functions use them too.
#define KJIT_VEC_BINARY(name)                                                                  \
  template <class T, int N>                                                                    \
  KJIT_INLINE ::kjit::vec<T, N> name(const ::kjit::vec<T, N>& a, const ::kjit::vec<T, N>& b) { \
    ::kjit::vec<T, N> r;                                                                       \
    for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i]);                                       \
    return r;                                                                                  \
  }                                                                                            \
  template <class T, int N, class S, KJIT_IF((!::kjit::is_vec_v<S>))>                          \
  KJIT_INLINE ::kjit::vec<T, N> name(const ::kjit::vec<T, N>& a, S b) {                        \
    return name(a, ::kjit::vec<T, N>(T(b)));                                                   \
  }                                                                                            \
  template <class T, int N, class S, KJIT_IF((!::kjit::is_vec_v<S>))>                          \
  KJIT_INLINE ::kjit::vec<T, N> name(S a, const ::kjit::vec<T, N>& b) {                        \
    return name(::kjit::vec<T, N>(T(a)), b);                                                   \
  }
#define KJIT_VEC_TERNARY(name)                                                               \
  template <class T, int N>                                                                  \
  KJIT_INLINE ::kjit::vec<T, N> name(const ::kjit::vec<T, N>& a, const ::kjit::vec<T, N>& b, \
                                     const ::kjit::vec<T, N>& c) {                           \
    ::kjit::vec<T, N> r;                                                                     \
    for (int i = 0; i < N; ++i) r[i] = name(a[i], b[i], c[i]);                               \
    return r;                                                                                \
  }
// A vector of R whose element i is f(a[i], b[i]), where b is a vector of any element type,
// written through when f takes an out-parameter (frexp(x, exponent)).
template <class R, class A, class B, int N, class F>
KJIT_INLINE vec<R, N> elementwise(const vec<A, N>& a, B& b, F f) {
  vec<R, N> r;
  for (int i = 0; i < N; ++i) r[i] = f(a[i], b[i]);
  return r;
}
KJIT_VEC_BINARY(pow)
KJIT_VEC_BINARY(atan2)
KJIT_VEC_BINARY(fmod)
KJIT_VEC_BINARY(fmax)
KJIT_VEC_BINARY(fmin)
KJIT_VEC_BINARY(copysign)
KJIT_VEC_BINARY(hypot)
KJIT_VEC_TERNARY(fma)

KJIT_VEC_ELEMENTWISE(isnan, bool)
KJIT_VEC_ELEMENTWISE(isinf, bool)
KJIT_VEC_ELEMENTWISE(isfinite, bool)
KJIT_VEC_ELEMENTWISE(signbit, bool)

template <class T, int N>
KJIT_INLINE vec<T, N> max_same(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = max_same<T>(a[i], b[i]);
  return r;
}
template <class T, int N>
KJIT_INLINE vec<T, N> min_same(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = min_same<T>(a[i], b[i]);
  return r;
}

template <class T, int N>
KJIT_INLINE T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T s = a[0] * b[0];
  for (int i = 1; i < N; ++i) s += a[i] * b[i];
  return s;
}
template <class T, int N>
KJIT_INLINE T length(const vec<T, N>& a) {
  return sqrt(dot(a, a));
}
template <int N>
KJIT_INLINE bool all(const vec<bool, N>& a) {
  for (int i = 0; i < N; ++i)
    if (!a[i]) return false;
  return true;
}
template <int N>
KJIT_INLINE bool any(const vec<bool, N>& a) {
  for (int i = 0; i < N; ++i)
    if (a[i]) return true;
  return false;
}

using uint3 = vec<unsigned, 3>;

// Every math name above, for a dialect to bring into scope with one using-declaration.
#define KJIT_MATH_NAMES                                                                          \
  ::kjit::exp, ::kjit::exp2, ::kjit::expm1, ::kjit::log, ::kjit::log2, ::kjit::log10,            \
      ::kjit::log1p, ::kjit::sqrt, ::kjit::rsqrt, ::kjit::cbrt, ::kjit::sin, ::kjit::cos,        \
      ::kjit::tan, ::kjit::asin, ::kjit::acos, ::kjit::atan, ::kjit::sinh, ::kjit::cosh,         \
      ::kjit::tanh, ::kjit::asinh, ::kjit::acosh, ::kjit::atanh, ::kjit::erf, ::kjit::erfc,      \
      ::kjit::tgamma, ::kjit::lgamma, ::kjit::floor, ::kjit::ceil, ::kjit::trunc, ::kjit::round, \
      ::kjit::rint, ::kjit::fabs, ::kjit::abs, ::kjit::pow, ::kjit::atan2, ::kjit::fmod,         \
      ::kjit::fmax, ::kjit::fmin, ::kjit::copysign, ::kjit::hypot, ::kjit::fma, ::kjit::isnan,   \
      ::kjit::isinf, ::kjit::isfinite, ::kjit::signbit, ::kjit::max, ::kjit::min, ::kjit::clamp, \
      ::kjit::dot, ::kjit::length, ::kjit::all, ::kjit::any

}  // namespace kjit
