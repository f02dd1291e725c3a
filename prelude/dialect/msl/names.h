// Metal Shading Language names on every target: namespace metal (scalar and vector types, math
// with fast:: and precise::) and the names MLX's utils.h brings.
#pragma once

#include "common/mlx_utils.h"

namespace metal {

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
typedef ::kjit::half_t half;
typedef ::kjit::bfloat_t bfloat;
typedef ::kjit::half_t float16_t;
typedef ::kjit::bfloat_t bfloat16_t;

template <class T, int N>
using vec = ::kjit::vec<T, N>;

// Which memory a barrier orders (kjit's barriers order all of it).
enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
};
KJIT_INLINE constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) | unsigned(b));
}

// Every vector type name, as X(element type, name prefix).
#define KJIT_MSL_VECTOR_TYPES(X) \
  X(float, float)                \
  X(half, half)                  \
  X(bfloat, bfloat)              \
  X(int, int)                    \
  X(uint, uint)                  \
  X(short, short)                \
  X(ushort, ushort)              \
  X(char, char)                  \
  X(uchar, uchar)                \
  X(long, long)                  \
  X(ulong, ulong)                \
  X(bool, bool)
#define KJIT_MSL_VECTOR_TYPEDEFS(T, name) \
  typedef vec<T, 2> name##2;              \
  typedef vec<T, 3> name##3;              \
  typedef vec<T, 4> name##4;
KJIT_MSL_VECTOR_TYPES(KJIT_MSL_VECTOR_TYPEDEFS)
#undef KJIT_MSL_VECTOR_TYPEDEFS

template <class T>
KJIT_INLINE T select(T a, T b, bool c) {
  return c ? b : a;
}
template <class T, class U>
KJIT_INLINE T mix(T x, T y, U a) {
  return x + (y - x) * a;
}
template <class T>
KJIT_INLINE T saturate(T x) {
  return ::kjit::clamp(x, T(0), T(1));
}
template <class T>
KJIT_INLINE T sign(T x) {
  return ::kjit::isnan(x) ? T(0) : x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
}
template <class T>
KJIT_INLINE T step(T edge, T x) {
  return x < edge ? T(0) : T(1);
}
template <class T>
KJIT_INLINE T fract(T x) {
  return ::kjit::fmin(x - ::kjit::floor(x), T(0x1.fffffep-1f));
}
// The same, element by element, for vectors (select takes a vector of bools too).
template <class T, int N>
KJIT_INLINE vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = c[i] ? b[i] : a[i];
  return r;
}
KJIT_VEC_ELEMENTWISE(sign, T)
KJIT_VEC_BINARY(step)
KJIT_VEC_ELEMENTWISE(saturate, T)
KJIT_VEC_ELEMENTWISE(fract, T)

template <class T>
KJIT_INLINE T divide(T x, T y) {
  return x / y;
}
template <class T, class U>
KJIT_INLINE auto powr(T x, U y) {
  return ::kjit::pow(x, y);
}

#define KJIT_MSL_MATH                                                                     \
  using KJIT_MATH_NAMES, ::metal::select, ::metal::mix, ::metal::saturate, ::metal::sign, \
      ::metal::step, ::metal::fract, ::metal::divide, ::metal::powr;
using KJIT_MATH_NAMES;
// On the CPU the fast and precise variants are the default functions.
namespace fast {
KJIT_MSL_MATH
}
namespace precise {
KJIT_MSL_MATH
}

// How the SIMD-group reductions and scans combine values (each target's simd_sum, simd_max...
// apply them over a simdgroup); sums and products know their identity, for scans.
namespace simd_ops {
struct add_op {
  template <class T>
  KJIT_INLINE T operator()(T a, T b) const {
    return T(a + b);
  }
  template <class T>
  static T identity() {
    return T(0);
  }
};
struct mul_op {
  template <class T>
  KJIT_INLINE T operator()(T a, T b) const {
    return T(a * b);
  }
  template <class T>
  static T identity() {
    return T(1);
  }
};
struct max_op {
  template <class T>
  KJIT_INLINE T operator()(T a, T b) const {
    return ::kjit::max(a, b);
  }
};
struct min_op {
  template <class T>
  KJIT_INLINE T operator()(T a, T b) const {
    return ::kjit::min(a, b);
  }
};
struct and_op {
  template <class T>
  KJIT_INLINE T operator()(T a, T b) const {
    return T(a & b);
  }
};
struct or_op {
  template <class T>
  KJIT_INLINE T operator()(T a, T b) const {
    return T(a | b);
  }
};
struct xor_op {
  template <class T>
  KJIT_INLINE T operator()(T a, T b) const {
    return T(a ^ b);
  }
};
}  // namespace simd_ops

// The lanes of the simdgroup (or quad, as its four low bits) that voted true, and those that
// voted.
template <class Bits>
struct group_vote {
  typedef Bits vote_t;
  vote_t bits, active;
  KJIT_INLINE explicit operator vote_t() const { return bits; }
  KJIT_INLINE bool all() const { return bits == active; }
  KJIT_INLINE bool any() const { return bits != 0; }
};
using simd_vote = group_vote<unsigned long>;
using quad_vote = group_vote<unsigned short>;

}  // namespace metal

// The SIMD-group (W = 32) and quad-group (W = 4) operations each target defines under both
// prefixes, as rows its own REDUCTION(name, op, W), SCAN(name, op, inclusive, W),
// SHUFFLE(name, lane source in common/lanes.h, W) and SHUFFLE_AND_FILL(name, up, W) macros expand.
#define KJIT_MSL_GROUP_OP_TABLE(prefix, W)                       \
  KJIT_REDUCTION(prefix##_sum, add_op, W)                        \
  KJIT_REDUCTION(prefix##_product, mul_op, W)                    \
  KJIT_REDUCTION(prefix##_max, max_op, W)                        \
  KJIT_REDUCTION(prefix##_min, min_op, W)                        \
  KJIT_REDUCTION(prefix##_and, and_op, W)                        \
  KJIT_REDUCTION(prefix##_or, or_op, W)                          \
  KJIT_REDUCTION(prefix##_xor, xor_op, W)                        \
  KJIT_SCAN(prefix##_prefix_inclusive_sum, add_op, true, W)      \
  KJIT_SCAN(prefix##_prefix_exclusive_sum, add_op, false, W)     \
  KJIT_SCAN(prefix##_prefix_inclusive_product, mul_op, true, W)  \
  KJIT_SCAN(prefix##_prefix_exclusive_product, mul_op, false, W) \
  KJIT_SHUFFLE(prefix##_shuffle, from_lane, W)                   \
  KJIT_SHUFFLE(prefix##_broadcast, from_lane, W)                 \
  KJIT_SHUFFLE(prefix##_shuffle_up, from_below, W)               \
  KJIT_SHUFFLE(prefix##_shuffle_down, from_above, W)             \
  KJIT_SHUFFLE(prefix##_shuffle_xor, from_xor_in_segment, W)     \
  KJIT_SHUFFLE(prefix##_shuffle_rotate_up, rotated_up, W)        \
  KJIT_SHUFFLE(prefix##_shuffle_rotate_down, rotated_down, W)    \
  KJIT_SHUFFLE_AND_FILL(prefix##_shuffle_and_fill_up, true, W)   \
  KJIT_SHUFFLE_AND_FILL(prefix##_shuffle_and_fill_down, false, W)

// The barriers and SIMD-group operations, which each target defines
// (dialect/msl/on_cuda/simdgroup.h on the GPU, mode/coop/msl.h in the CPU's cooperative mode,
// mode/regions/msl.h in its region mode, which splits the body at barriers and so needs no
// threadgroup_barrier), for its using-declaration.
#define KJIT_MSL_SIMD_NAMES metal::threadgroup_barrier, KJIT_MSL_LANE_OP_NAMES
#define KJIT_MSL_LANE_OP_NAMES                                                                    \
  metal::simdgroup_barrier, metal::simd_sum, metal::simd_product, metal::simd_max,                \
      metal::simd_min, metal::simd_and, metal::simd_or, metal::simd_xor,                          \
      metal::simd_prefix_inclusive_sum, metal::simd_prefix_exclusive_sum,                         \
      metal::simd_prefix_inclusive_product, metal::simd_prefix_exclusive_product,                 \
      metal::simd_shuffle, metal::simd_broadcast, metal::simd_broadcast_first,                    \
      metal::simd_shuffle_down, metal::simd_shuffle_up, metal::simd_shuffle_xor, metal::simd_all, \
      metal::simd_any, metal::simd_is_first, metal::simd_vote, metal::simd_ballot,                \
      metal::simd_shuffle_rotate_up, metal::simd_shuffle_rotate_down,                             \
      metal::simd_shuffle_and_fill_up, metal::simd_shuffle_and_fill_down, metal::quad_sum,        \
      metal::quad_product, metal::quad_max, metal::quad_min, metal::quad_and, metal::quad_or,     \
      metal::quad_xor, metal::quad_prefix_inclusive_sum, metal::quad_prefix_exclusive_sum,        \
      metal::quad_prefix_inclusive_product, metal::quad_prefix_exclusive_product,                 \
      metal::quad_shuffle, metal::quad_broadcast, metal::quad_broadcast_first,                    \
      metal::quad_shuffle_down, metal::quad_shuffle_up, metal::quad_shuffle_xor,                  \
      metal::quad_shuffle_rotate_up, metal::quad_shuffle_rotate_down,                             \
      metal::quad_shuffle_and_fill_up, metal::quad_shuffle_and_fill_down, metal::quad_all,        \
      metal::quad_any, metal::quad_is_first, metal::quad_vote, metal::quad_ballot

// A body sees the Metal names through using-declarations: on CUDA they must hide the global
// names of CUDA's own headers (uint3, max, exp...), which a using-directive would make ambiguous.
namespace kjit_user {
using metal::uint, metal::ushort, metal::uchar, metal::ulong, metal::half, metal::bfloat,
    metal::float16_t, metal::bfloat16_t, metal::vec, metal::mem_flags;
#define KJIT_MSL_USE_VECTORS(T, name) using metal::name##2, metal::name##3, metal::name##4;
KJIT_MSL_VECTOR_TYPES(KJIT_MSL_USE_VECTORS)
#undef KJIT_MSL_USE_VECTORS
KJIT_MSL_MATH
namespace fast = metal::fast;
namespace precise = metal::precise;
using ::kjit::ceildiv, ::kjit::elem_to_loc, ::kjit::elem_to_loc_1, ::kjit::elem_to_loc_2,
    ::kjit::elem_to_loc_3, ::kjit::elem_to_loc_2_nd, ::kjit::elem_to_loc_3_nd,
    ::kjit::LoopedElemToLoc, ::kjit::WorkPerThread, ::kjit::ConditionalType, ::kjit::cast_to,
    ::kjit::Limits;
}  // namespace kjit_user
#undef KJIT_MSL_MATH
#undef KJIT_MSL_VECTOR_TYPES
