// The helpers MLX puts in front of every custom kernel (kernels/utils.h, cuda device/utils.cuh):
// elem_to_loc and friends, LoopedElemToLoc, ceildiv, WorkPerThread, ConditionalType, cast_to,
// Limits, WARP_SIZE, MAX_NDIM, MLX_MTL_PRAGMA_UNROLL.
#pragma once

#include "common/vec.h"

#define MAX_NDIM 10
#define WARP_SIZE 32
// Metal's full unroll of a loop; GCC takes a count instead.
#if defined(__GNUC__) && !defined(__clang__) && !defined(KJIT_CUDA)
#define MLX_MTL_PRAGMA_UNROLL _Pragma("GCC unroll 16")
#else
#define MLX_MTL_PRAGMA_UNROLL _Pragma("unroll")
#endif

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

// The offsets in N arrays of one element given by a grid position: x and y index the last two
// axes, z the ones before them. Each array has its strides; they share the shape.
template <class IdxT, int N>
KJIT_INLINE void grid_elem_to_locs(vec<unsigned, 3> elem, const int* shape,
                                   const int64_t* const (&strides)[N], int ndim, IdxT (&loc)[N]) {
  for (int k = 0; k < N; ++k) {
    loc[k] = IdxT(elem.x) * IdxT(strides[k][ndim - 1]);
    if (ndim > 1) loc[k] += IdxT(elem.y) * IdxT(strides[k][ndim - 2]);
  }
  for (int d = ndim - 3; d >= 0; --d) {
    const unsigned l = elem.z % static_cast<unsigned>(shape[d]);
    for (int k = 0; k < N; ++k) loc[k] += IdxT(l) * IdxT(strides[k][d]);
    elem.z /= static_cast<unsigned>(shape[d]);
  }
}

template <class IdxT = int64_t>
KJIT_INLINE IdxT elem_to_loc(vec<unsigned, 3> elem, const int* shape, const int64_t* strides,
                             int ndim) {
  IdxT loc[1];
  grid_elem_to_locs<IdxT, 1>(elem, shape, {strides}, ndim, loc);
  return loc[0];
}
template <class IdxT = int64_t>
KJIT_INLINE vec<IdxT, 2> elem_to_loc_2_nd(vec<unsigned, 3> elem, const int* shape,
                                          const int64_t* a_strides, const int64_t* b_strides,
                                          int ndim) {
  IdxT loc[2];
  grid_elem_to_locs<IdxT, 2>(elem, shape, {a_strides, b_strides}, ndim, loc);
  return {loc[0], loc[1]};
}
template <class IdxT = int64_t>
KJIT_INLINE vec<IdxT, 3> elem_to_loc_3_nd(vec<unsigned, 3> elem, const int* shape,
                                          const int64_t* a_strides, const int64_t* b_strides,
                                          const int64_t* c_strides, int ndim) {
  IdxT loc[3];
  grid_elem_to_locs<IdxT, 3>(elem, shape, {a_strides, b_strides, c_strides}, ndim, loc);
  return {loc[0], loc[1], loc[2]};
}

template <class IdxT = int64_t>
KJIT_INLINE IdxT elem_to_loc_1(unsigned elem, int64_t stride) {
  return IdxT(elem) * IdxT(stride);
}
template <class IdxT = int64_t>
KJIT_INLINE IdxT elem_to_loc_2(vec<unsigned, 2> elem, const int64_t* strides) {
  return IdxT(elem.x) * IdxT(strides[1]) + IdxT(elem.y) * IdxT(strides[0]);
}
template <class IdxT = int64_t>
KJIT_INLINE IdxT elem_to_loc_3(vec<unsigned, 3> elem, const int64_t* strides) {
  return IdxT(elem.x) * IdxT(strides[2]) + IdxT(elem.y) * IdxT(strides[1]) +
         IdxT(elem.z) * IdxT(strides[0]);
}

// The offset of each element in turn of an array of `dim` axes, in row-major order: next()
// moves on by one element, next(n, ...) by n. Each of the DIM - 1 outer levels steps the
// offset along one axis and carries into the level inside it when the axis wraps; the last
// level covers the remaining axes, through elem_to_loc (General) or as one axis.
template <int DIM, class OffsetT = size_t, bool General = true>
struct LoopedElemToLoc {
  int dim;
  LoopedElemToLoc<DIM - 1, OffsetT, General> inner_looper;
  OffsetT offset{0};
  int index{0};

  KJIT_INLINE explicit LoopedElemToLoc(int d) : dim(d), inner_looper(d - 1) {}
  KJIT_INLINE void next(const int* shape, const int64_t* strides) { next(1, shape, strides); }
  KJIT_INLINE void next(int n, const int* shape, const int64_t* strides) {
    if (dim == 0) return;
    const int size = shape[dim - 1];
    index += n;
    if (index < size) {
      offset += OffsetT(n) * OffsetT(strides[dim - 1]);
      return;
    }
    inner_looper.next(index / size, shape, strides);
    index %= size;
    offset = inner_looper.offset + OffsetT(index) * OffsetT(strides[dim - 1]);
  }
  KJIT_INLINE OffsetT location() const { return offset; }
};

template <class OffsetT>
struct LoopedElemToLoc<1, OffsetT, true> {
  int dim;
  OffsetT offset{0};
  unsigned index{0};

  KJIT_INLINE explicit LoopedElemToLoc(int d) : dim(d) {}
  KJIT_INLINE void next(const int* shape, const int64_t* strides) { next(1, shape, strides); }
  KJIT_INLINE void next(int n, const int* shape, const int64_t* strides) {
    index += n;
    offset = dim > 1 ? OffsetT(elem_to_loc(index, shape, strides, dim))
                     : OffsetT(index) * OffsetT(strides[0]);
  }
  KJIT_INLINE OffsetT location() const { return offset; }
};

template <class OffsetT>
struct LoopedElemToLoc<1, OffsetT, false> {
  OffsetT offset{0};

  KJIT_INLINE explicit LoopedElemToLoc(int) {}
  KJIT_INLINE void next(const int* shape, const int64_t* strides) { next(1, shape, strides); }
  KJIT_INLINE void next(int n, const int*, const int64_t* strides) {
    offset += OffsetT(n) * OffsetT(strides[0]);
  }
  KJIT_INLINE OffsetT location() const { return offset; }
};

// ceil(n / d) in n's type; d may be of another type (an int count by a uint size).
template <class T, class U>
KJIT_INLINE constexpr T ceildiv(T n, U d) {
  return T((n + d - 1) / d);
}

// The elements an element-wise kernel gives each thread: 8 bytes' worth.
template <class U>
struct WorkPerThread {
  static_assert(sizeof(U) <= 8, "Type too large");
  static constexpr int n = 8 / sizeof(U);
};

// std::conditional, which Metal lacks.
template <bool condition, class T, class U>
struct ConditionalType {
  using type = U;
};
template <class T, class U>
struct ConditionalType<true, T, U> {
  using type = T;
};

// A conversion; a complex number is true when either part is nonzero. (Floats convert to bool
// as C++ converts them already: -0 is false, NaN true.)
template <class U, class T>
KJIT_INLINE U cast_to(T value) {
  if constexpr (is_same_v<U, bool> && is_same_v<T, complex64_t>) {
    return value.real != 0 || value.imag != 0;
  } else {
    return static_cast<U>(value);
  }
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
template <>
struct Limits<complex64_t> {
  static constexpr complex64_t max = {Limits<float>::max, Limits<float>::max};
  static constexpr complex64_t min = {Limits<float>::min, Limits<float>::min};
};

}  // namespace kjit
