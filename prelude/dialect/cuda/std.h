// The part of libcu++ (cuda::std::) that CUDA kernels use, on every target: NVRTC compiles
// without the toolkit's headers and the CPU without the system's, so these are kjit's own. Type
// traits, numeric_limits, min and max, the math functions, array and tuple; complex numbers are
// in dialect/cuda/std_complex.h.
#pragma once

#include "common/math.h"
#include "common/mlx_utils.h"
#include "common/numeric_limits.h"

namespace cuda::std {

// --- type traits -------------------------------------------------------------------------------

template <class T, T v>
struct integral_constant {
  static constexpr T value = v;
  using value_type = T;
  using type = integral_constant;
  KJIT_INLINE constexpr operator T() const { return v; }
};
template <bool B>
using bool_constant = integral_constant<bool, B>;
using true_type = bool_constant<true>;
using false_type = bool_constant<false>;

template <class A, class B>
struct is_same : bool_constant<::kjit::is_same_v<A, B>> {};
template <class A, class B>
inline constexpr bool is_same_v = is_same<A, B>::value;

// kjit's own, under the standard's names (and enable_if's default, void).
template <bool B, class T = void>
using enable_if = ::kjit::enable_if<B, T>;
template <bool B, class T = void>
using enable_if_t = typename enable_if<B, T>::type;

template <bool B, class T, class F>
using conditional = ::kjit::ConditionalType<B, T, F>;
template <bool B, class T, class F>
using conditional_t = typename conditional<B, T, F>::type;

template <class...>
using void_t = void;

template <class T>
struct remove_cv {
  using type = T;
};
template <class T>
struct remove_cv<const T> {
  using type = T;
};
template <class T>
struct remove_cv<volatile T> {
  using type = T;
};
template <class T>
struct remove_cv<const volatile T> {
  using type = T;
};
template <class T>
using remove_cv_t = typename remove_cv<T>::type;

template <class T>
struct remove_reference {
  using type = T;
};
template <class T>
struct remove_reference<T&> {
  using type = T;
};
template <class T>
struct remove_reference<T&&> {
  using type = T;
};
template <class T>
using remove_reference_t = typename remove_reference<T>::type;

}  // namespace cuda::std

namespace kjit::cuda_std_detail {
template <class T>
inline constexpr bool is_integral = ::kjit::is_int_like_v<T>;
template <class T>
inline constexpr bool is_floating_point = ::kjit::is_builtin_float_v<T>;
template <class T>
inline constexpr bool is_arithmetic = is_integral<T> || is_floating_point<T>;
template <class T>
struct is_pointer {
  static constexpr bool value = false;
};
template <class T>
struct is_pointer<T*> {
  static constexpr bool value = true;
};
// From converts to To when a function taking a To accepts a From (the standard's definition).
template <class To>
void accept(To);
template <class From, class To, class = void>
struct is_convertible {
  static constexpr bool value = is_same_v<To, void> && is_same_v<From, void>;
};
template <class From, class To>
struct is_convertible<From, To, decltype(accept<To>(static_cast<From (*)()>(nullptr)()))> {
  static constexpr bool value = true;
};
}  // namespace kjit::cuda_std_detail

namespace cuda::std {

namespace detail = ::kjit::cuda_std_detail;
template <class T>
struct is_integral : bool_constant<detail::is_integral<remove_cv_t<T>>> {};
template <class T>
struct is_floating_point : bool_constant<detail::is_floating_point<remove_cv_t<T>>> {};
template <class T>
struct is_arithmetic : bool_constant<detail::is_arithmetic<remove_cv_t<T>>> {};
template <class T>
struct is_signed : bool_constant<detail::is_arithmetic<remove_cv_t<T>> &&
                                 (remove_cv_t<T>(-1) < remove_cv_t<T>(0))> {};
template <class T>
struct is_unsigned : bool_constant<detail::is_arithmetic<remove_cv_t<T>> &&
                                   !(remove_cv_t<T>(-1) < remove_cv_t<T>(0))> {};
template <class T>
struct is_pointer : bool_constant<detail::is_pointer<remove_cv_t<T>>::value> {};
template <class From, class To>
struct is_convertible : bool_constant<detail::is_convertible<From, To>::value> {};
template <class T>
inline constexpr bool is_integral_v = is_integral<T>::value;
template <class T>
inline constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T>
inline constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T>
inline constexpr bool is_signed_v = is_signed<T>::value;
template <class T>
inline constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <class T>
inline constexpr bool is_pointer_v = is_pointer<T>::value;
template <class From, class To>
inline constexpr bool is_convertible_v = is_convertible<From, To>::value;

// --- limits, min and max, math -------------------------------------------------------------------

using ::kjit::numeric_limits;

template <class T>
KJIT_INLINE constexpr const T& min(const T& a, const T& b) {
  return b < a ? b : a;
}
template <class T>
KJIT_INLINE constexpr const T& max(const T& a, const T& b) {
  return a < b ? b : a;
}

using ::kjit::abs, ::kjit::acos, ::kjit::acosh, ::kjit::asin, ::kjit::asinh, ::kjit::atan,
    ::kjit::atan2, ::kjit::atanh, ::kjit::cbrt, ::kjit::ceil, ::kjit::copysign, ::kjit::cos,
    ::kjit::cosh, ::kjit::erf, ::kjit::erfc, ::kjit::exp, ::kjit::exp2, ::kjit::expm1, ::kjit::fabs,
    ::kjit::floor, ::kjit::fma, ::kjit::fmax, ::kjit::fmin, ::kjit::fmod, ::kjit::hypot,
    ::kjit::isfinite, ::kjit::isinf, ::kjit::isnan, ::kjit::lgamma, ::kjit::log, ::kjit::log10,
    ::kjit::log1p, ::kjit::log2, ::kjit::pow, ::kjit::remainder, ::kjit::rint, ::kjit::round,
    ::kjit::signbit, ::kjit::sin, ::kjit::sinh, ::kjit::sqrt, ::kjit::tan, ::kjit::tanh,
    ::kjit::tgamma, ::kjit::trunc;

// --- array ---------------------------------------------------------------------------------------

// An aggregate of N elements, as std::array is: brace-initialized, copied by value.
template <class T, size_t N>
struct array {
  T elems[N];

  using value_type = T;
  using size_type = size_t;
  KJIT_INLINE constexpr T& operator[](size_t i) { return elems[i]; }
  KJIT_INLINE constexpr const T& operator[](size_t i) const { return elems[i]; }
  KJIT_INLINE constexpr T* data() { return elems; }
  KJIT_INLINE constexpr const T* data() const { return elems; }
  KJIT_INLINE static constexpr size_t size() { return N; }
  KJIT_INLINE static constexpr bool empty() { return N == 0; }
  KJIT_INLINE constexpr T* begin() { return elems; }
  KJIT_INLINE constexpr const T* begin() const { return elems; }
  KJIT_INLINE constexpr T* end() { return elems + N; }
  KJIT_INLINE constexpr const T* end() const { return elems + N; }
  KJIT_INLINE constexpr T& front() { return elems[0]; }
  KJIT_INLINE constexpr const T& front() const { return elems[0]; }
  KJIT_INLINE constexpr T& back() { return elems[N - 1]; }
  KJIT_INLINE constexpr const T& back() const { return elems[N - 1]; }
  KJIT_INLINE constexpr void fill(const T& v) {
    for (size_t i = 0; i < N; ++i) elems[i] = v;
  }
};

// --- tuple ---------------------------------------------------------------------------------------

// Up to four elements, held as public members so that structured bindings
// (auto [a, b] = elem_to_loc(...)) take them apart without std::tuple_size, which lives in a
// namespace kernels cannot declare into.
template <class... T>
struct tuple;
template <>
struct tuple<> {};
template <class A>
struct tuple<A> {
  A v0;
};
template <class A, class B>
struct tuple<A, B> {
  A v0;
  B v1;
};
template <class A, class B, class C>
struct tuple<A, B, C> {
  A v0;
  B v1;
  C v2;
};
template <class A, class B, class C, class D>
struct tuple<A, B, C, D> {
  A v0;
  B v1;
  C v2;
  D v3;
};

template <class... T>
KJIT_INLINE constexpr tuple<T...> make_tuple(T... v) {
  return {v...};
}

template <class Tuple>
struct tuple_size;
template <class... T>
struct tuple_size<tuple<T...>> : integral_constant<size_t, sizeof...(T)> {};
template <class Tuple>
inline constexpr size_t tuple_size_v = tuple_size<remove_cv_t<Tuple>>::value;

template <size_t I, class Tuple>
KJIT_INLINE constexpr auto& get(Tuple&& t) {
  static_assert(I < tuple_size_v<remove_reference_t<Tuple>>,
                "get: the tuple has no element of this index");
  if constexpr (I == 0) {
    return t.v0;
  } else if constexpr (I == 1) {
    return t.v1;
  } else if constexpr (I == 2) {
    return t.v2;
  } else {
    return t.v3;
  }
}

}  // namespace cuda::std
