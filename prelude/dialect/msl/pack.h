// Metal's pack and unpack functions on every target: four 8-bit or two 16-bit normalized integers
// in a 32-bit word, the first component in the least significant bits. Converted as Metal's rules
// for normalized integers say: an n-bit unorm c is c / (2^n - 1), an snorm max(c / (2^(n-1) - 1),
// -1); a float is clamped to [0, 1] or [-1, 1], scaled by the same number and rounded to the
// nearest integer, ties to even (NaN gives 0). half values are converted through float.
#pragma once

#include "dialect/msl/names.h"

namespace metal {
namespace pack_detail {

// The N components of |word|, Bits wide each, as unorm (Signed false) or snorm values.
template <int Bits, int N, bool Signed>
KJIT_INLINE vec<float, N> unpack(uint word) {
  vec<float, N> out;
  for (int k = 0; k < N; ++k) {
    const uint field = (word >> (Bits * k)) & ((1u << Bits) - 1);
    if constexpr (Signed) {
      const int value = int(field << (32 - Bits)) >> (32 - Bits);  // sign-extended
      const float v = float(value) / float((1 << (Bits - 1)) - 1);
      out[k] = v < -1.0f ? -1.0f : v;
    } else {
      out[k] = float(field) / float((1u << Bits) - 1);
    }
  }
  return out;
}

// |x|'s N components in one word, Bits wide each.
template <int Bits, bool Signed, int N>
KJIT_INLINE uint pack(const vec<float, N>& x) {
  constexpr float lowest = Signed ? -1.0f : 0.0f;
  constexpr float scale = Signed ? float((1 << (Bits - 1)) - 1) : float((1u << Bits) - 1);
  uint word = 0;
  for (int k = 0; k < N; ++k) {
    const float v = x[k];
    const float clamped = v > lowest ? (v < 1.0f ? v : 1.0f) : v == v ? lowest : 0.0f;
    const int value = int(::kjit::rint(clamped * scale));
    word |= (uint(value) & ((1u << Bits) - 1)) << (Bits * k);
  }
  return word;
}

template <class T, int N>
KJIT_INLINE vec<float, N> to_float(const vec<T, N>& x) {
  vec<float, N> out;
  for (int k = 0; k < N; ++k) out[k] = float(x[k]);
  return out;
}
template <int N>
KJIT_INLINE vec<half, N> to_half(const vec<float, N>& x) {
  vec<half, N> out;
  for (int k = 0; k < N; ++k) out[k] = half(x[k]);
  return out;
}

}  // namespace pack_detail

// name, bits per component, components, signed.
#define KJIT_MSL_PACKED_FORMATS(X) \
  X(unorm4x8, 8, 4, false)         \
  X(snorm4x8, 8, 4, true)          \
  X(unorm2x16, 16, 2, false)       \
  X(snorm2x16, 16, 2, true)
#define KJIT_MSL_PACK_FUNCTIONS(format, bits, n, is_signed)                  \
  KJIT_INLINE vec<float, n> unpack_##format##_to_float(uint x) {             \
    return pack_detail::unpack<bits, n, is_signed>(x);                       \
  }                                                                          \
  KJIT_INLINE vec<half, n> unpack_##format##_to_half(uint x) {               \
    return pack_detail::to_half(pack_detail::unpack<bits, n, is_signed>(x)); \
  }                                                                          \
  KJIT_INLINE uint pack_float_to_##format(vec<float, n> x) {                 \
    return pack_detail::pack<bits, is_signed>(x);                            \
  }                                                                          \
  KJIT_INLINE uint pack_half_to_##format(vec<half, n> x) {                   \
    return pack_detail::pack<bits, is_signed>(pack_detail::to_float(x));     \
  }
KJIT_MSL_PACKED_FORMATS(KJIT_MSL_PACK_FUNCTIONS)
#undef KJIT_MSL_PACK_FUNCTIONS

}  // namespace metal

#define KJIT_MSL_USE_PACK_FUNCTIONS(format, bits, n, is_signed)                  \
  using ::metal::unpack_##format##_to_float, ::metal::unpack_##format##_to_half, \
      ::metal::pack_float_to_##format, ::metal::pack_half_to_##format;
namespace metal::fast {
KJIT_MSL_PACKED_FORMATS(KJIT_MSL_USE_PACK_FUNCTIONS)
}
namespace metal::precise {
KJIT_MSL_PACKED_FORMATS(KJIT_MSL_USE_PACK_FUNCTIONS)
}
namespace kjit_user {
KJIT_MSL_PACKED_FORMATS(KJIT_MSL_USE_PACK_FUNCTIONS)
}
#undef KJIT_MSL_USE_PACK_FUNCTIONS
#undef KJIT_MSL_PACKED_FORMATS
