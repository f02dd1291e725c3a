// Bit-exact float <-> half and float <-> bfloat conversions (round to nearest even). Shared by
// the generated kernels and the library; the includer provides uint16_t and uint32_t.
#pragma once

#ifndef KJIT_INLINE
#define KJIT_INLINE inline __attribute__((always_inline))
#endif

namespace kjit {

// Round-to-nearest-even conversions, branch-free so that loops over them vectorise.
KJIT_INLINE uint16_t float_to_half_bits(float f) {
  uint32_t x = __builtin_bit_cast(uint32_t, f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  // Normal range: rebias the exponent (127 -> 15) and round the 13 dropped bits to even.
  uint32_t normal = (ax + 0xc8000fffu + ((ax >> 13) & 1u)) >> 13;
  // Subnormal range: adding 0.5f aligns the value to multiples of 2^-24.
  uint32_t sub = __builtin_bit_cast(uint32_t, __builtin_bit_cast(float, ax) + 0.5f) - 0x3f000000u;
  uint32_t r = ax < 0x38800000u ? sub : normal;
  r = ax >= 0x477ff000u ? 0x7c00u : r;                           // overflow to infinity
  r = ax > 0x7f800000u ? (0x7e00u | ((ax >> 13) & 0x3ffu)) : r;  // NaN stays NaN
  return static_cast<uint16_t>(sign | r);
}

KJIT_INLINE float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t body = static_cast<uint32_t>(h & 0x7fffu) << 13;
  // Scaling by 2^112 rebiases normals and subnormals alike.
  uint32_t finite = __builtin_bit_cast(uint32_t, __builtin_bit_cast(float, body) * 0x1p112f);
  uint32_t special = body | 0x7f800000u;  // infinity or NaN
  return __builtin_bit_cast(float, sign | ((h & 0x7c00u) == 0x7c00u ? special : finite));
}

KJIT_INLINE uint16_t float_to_bfloat_bits(float f) {
  uint32_t x = __builtin_bit_cast(uint32_t, f);
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  uint32_t nan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

KJIT_INLINE float bfloat_bits_to_float(uint16_t b) {
  return __builtin_bit_cast(float, static_cast<uint32_t>(b) << 16);
}

}  // namespace kjit
