// numeric_limits for every scalar type kernels use, shared by the dialects: Metal's
// metal::numeric_limits and CUDA's cuda::std::numeric_limits are this template.
#pragma once

#include "common/int_bits.h"
#include "common/mlx_utils.h"

namespace kjit {

template <class T, bool = is_int_like_v<T>>
struct numeric_limits {
  static constexpr bool is_specialized = false;
};

template <class T>
struct numeric_limits<T, true> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = true;
  static constexpr bool is_signed = bits::is_signed_v<T>;
  static constexpr bool has_infinity = false;
  static constexpr int digits = bits::width<T> - (is_signed ? 1 : 0);
  static constexpr T max() { return bits::highest<T>; }
  static constexpr T min() { return bits::lowest<T>; }
  static constexpr T lowest() { return min(); }
  static constexpr T epsilon() { return T(0); }
};
template <>
struct numeric_limits<bool, true> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = true;
  static constexpr bool is_signed = false;
  static constexpr bool has_infinity = false;
  static constexpr int digits = 1;
  static constexpr bool max() { return true; }
  static constexpr bool min() { return false; }
  static constexpr bool lowest() { return false; }
  static constexpr bool epsilon() { return false; }
};

// Floating types: the largest finite value, the lowest and infinity as MLX's Limits<T> has them;
// from their bit patterns the smallest normal, the machine epsilon, a quiet NaN and the smallest
// subnormal.
template <class T, class Bits, Bits kMinNormal, Bits kEps, Bits kNaN, int kDigits>
struct float_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_signed = true;
  static constexpr bool has_infinity = true;
  static constexpr int digits = kDigits;
  static constexpr T max() { return Limits<T>::finite_max; }
  static constexpr T min() { return __builtin_bit_cast(T, kMinNormal); }
  static constexpr T lowest() { return Limits<T>::finite_min; }
  static constexpr T epsilon() { return __builtin_bit_cast(T, kEps); }
  static constexpr T infinity() { return Limits<T>::max; }
  static constexpr T quiet_NaN() { return __builtin_bit_cast(T, kNaN); }
  static constexpr T denorm_min() { return __builtin_bit_cast(T, Bits(1)); }
};
template <>
struct numeric_limits<float, false>
    : float_limits<float, uint32_t, 0x00800000u, 0x34000000u, 0x7fc00000u, 24> {};
template <>
struct numeric_limits<double, false>
    : float_limits<double, uint64_t, 0x0010000000000000ull, 0x3cb0000000000000ull,
                   0x7ff8000000000000ull, 53> {};
template <>
struct numeric_limits<half_t, false> : float_limits<half_t, uint16_t, 0x0400, 0x1400, 0x7e00, 11> {
};
template <>
struct numeric_limits<bfloat_t, false>
    : float_limits<bfloat_t, uint16_t, 0x0080, 0x3c00, 0x7fc0, 8> {};

}  // namespace kjit
