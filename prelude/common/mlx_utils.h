// The helpers MLX puts in front of every custom kernel (kernels/utils.h, cuda device/utils.cuh):
// elem_to_loc and friends, ceildiv, Limits, WARP_SIZE, MAX_NDIM.
#pragma once

#include "common/vec.h"

#define MAX_NDIM 10
#define WARP_SIZE 32

namespace kjit {

// Element offsets from a linear index and (signed) strides. The offset is computed and returned
// as int64_t whatever the index type, so that reversed views (negative strides) work even when
// the body's index is a uint.
template <class IdxT = int64_t>
KJIT_INLINE int64_t elem_to_loc(IdxT elem, const int* shape, const int64_t* strides, int ndim) {
  int64_t loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += static_cast<int64_t>(elem % static_cast<IdxT>(shape[i])) * strides[i];
    elem /= static_cast<IdxT>(shape[i]);
  }
  return loc;
}

KJIT_INLINE int64_t elem_to_loc(vec<unsigned, 3> elem, const int* shape, const int64_t* strides,
                                int ndim) {
  int64_t loc = static_cast<int64_t>(elem.x) * strides[ndim - 1];
  if (ndim > 1) loc += static_cast<int64_t>(elem.y) * strides[ndim - 2];
  for (int d = ndim - 3; d >= 0; --d) {
    loc += static_cast<int64_t>(elem.z % static_cast<unsigned>(shape[d])) * strides[d];
    elem.z /= static_cast<unsigned>(shape[d]);
  }
  return loc;
}

KJIT_INLINE int64_t elem_to_loc_1(unsigned elem, int64_t stride) {
  return static_cast<int64_t>(elem) * stride;
}
KJIT_INLINE int64_t elem_to_loc_2(vec<unsigned, 2> elem, const int64_t* strides) {
  return static_cast<int64_t>(elem.x) * strides[1] + static_cast<int64_t>(elem.y) * strides[0];
}
KJIT_INLINE int64_t elem_to_loc_3(vec<unsigned, 3> elem, const int64_t* strides) {
  return static_cast<int64_t>(elem.x) * strides[2] + static_cast<int64_t>(elem.y) * strides[1] +
         static_cast<int64_t>(elem.z) * strides[0];
}

template <class T>
KJIT_INLINE constexpr T ceildiv(T n, T d) {
  return (n + d - 1) / d;
}

template <class T>
struct Limits;
#define KJIT_INT_LIMITS(T, lo, hi)      \
  template <>                           \
  struct Limits<T> {                    \
    static constexpr T max = hi;        \
    static constexpr T min = lo;        \
    static constexpr T finite_max = hi; \
    static constexpr T finite_min = lo; \
  };
KJIT_INT_LIMITS(bool, false, true)
KJIT_INT_LIMITS(int8_t, -128, 127)
KJIT_INT_LIMITS(int16_t, -32768, 32767)
KJIT_INT_LIMITS(int32_t, -2147483647 - 1, 2147483647)
KJIT_INT_LIMITS(int64_t, -9223372036854775807L - 1, 9223372036854775807L)
KJIT_INT_LIMITS(uint8_t, 0, 255)
KJIT_INT_LIMITS(uint16_t, 0, 65535)
KJIT_INT_LIMITS(uint32_t, 0, 4294967295u)
KJIT_INT_LIMITS(uint64_t, 0, 18446744073709551615ul)
#undef KJIT_INT_LIMITS
#define KJIT_FLOAT_LIMITS(T, bits_type, fmax_bits, make)                                    \
  template <>                                                                               \
  struct Limits<T> {                                                                        \
    static constexpr bits_type sign = bits_type(1) << (sizeof(bits_type) * 8 - 1);          \
    static constexpr bits_type inf = bits_type(fmax_bits) + 1; /* the largest finite + 1 */ \
    static constexpr T max = make(inf);                                                     \
    static constexpr T min = make(inf | sign);                                              \
    static constexpr T finite_max = make(bits_type(fmax_bits));                             \
    static constexpr T finite_min = make(bits_type(fmax_bits | sign));                      \
  };
#define KJIT_BITCAST_F32(b) __builtin_bit_cast(float, b)
#define KJIT_BITCAST_F64(b) __builtin_bit_cast(double, b)
KJIT_FLOAT_LIMITS(float, uint32_t, 0x7f7fffffu, KJIT_BITCAST_F32)
KJIT_FLOAT_LIMITS(double, uint64_t, 0x7fefffffffffffffull, KJIT_BITCAST_F64)
KJIT_FLOAT_LIMITS(half_t, uint16_t, 0x7bffu, half_t::from_bits)
KJIT_FLOAT_LIMITS(bfloat_t, uint16_t, 0x7f7fu, bfloat_t::from_bits)
#undef KJIT_BITCAST_F32
#undef KJIT_BITCAST_F64
#undef KJIT_FLOAT_LIMITS

}  // namespace kjit
