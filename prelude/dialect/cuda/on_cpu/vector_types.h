// CUDA's vector types on the CPU (NVRTC has them built in): plain structs of 1 to 4 members x, y,
// z, w with CUDA's sizes and alignments, so that reinterpreting a float* as a float4* reads the
// same elements, and make_float4(...) and the like. CUDA defines no arithmetic on them, nor
// does this.
#pragma once

#include "common/vec.h"

namespace kjit::cuda_dialect {

// T1..T4 for the scalar T: 1 and 3 members aligned as T, 2 and 4 members as a whole (up to 16).
#define KJIT_CUDA_VECTOR(name, T)                                         \
  struct name##1 {                                                        \
    T x;                                                                  \
  };                                                                      \
  struct alignas(2 * sizeof(T) < 16 ? 2 * sizeof(T) : 16) name##2 {       \
    T x, y;                                                               \
  };                                                                      \
  struct name##3 {                                                        \
    T x, y, z;                                                            \
  };                                                                      \
  struct alignas(4 * sizeof(T) < 16 ? 4 * sizeof(T) : 16) name##4 {       \
    T x, y, z, w;                                                         \
  };                                                                      \
  KJIT_INLINE name##1 make_##name##1(T x) { return {x}; }                 \
  KJIT_INLINE name##2 make_##name##2(T x, T y) { return {x, y}; }         \
  KJIT_INLINE name##3 make_##name##3(T x, T y, T z) { return {x, y, z}; } \
  KJIT_INLINE name##4 make_##name##4(T x, T y, T z, T w) { return {x, y, z, w}; }
KJIT_CUDA_VECTOR(char, signed char)
KJIT_CUDA_VECTOR(uchar, unsigned char)
KJIT_CUDA_VECTOR(short, short)
KJIT_CUDA_VECTOR(ushort, unsigned short)
KJIT_CUDA_VECTOR(int, int)
KJIT_CUDA_VECTOR(long, long)
KJIT_CUDA_VECTOR(ulong, unsigned long)
KJIT_CUDA_VECTOR(longlong, long long)
KJIT_CUDA_VECTOR(ulonglong, unsigned long long)
KJIT_CUDA_VECTOR(float, float)
KJIT_CUDA_VECTOR(double, double)
#undef KJIT_CUDA_VECTOR

// The unsigned ones. uint3 also converts from and to kjit's own three-element vectors (the
// thread context's fields, Metal's attributes); dim3 is a uint3 whose missing sizes are 1.
struct uint1 {
  unsigned x;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct uint3 {
  unsigned x, y, z;
  uint3() = default;
  KJIT_INLINE constexpr uint3(unsigned vx, unsigned vy = 0, unsigned vz = 0)
      : x(vx), y(vy), z(vz) {}
  KJIT_INLINE uint3(const ::kjit::uint3& v) : x(v.x), y(v.y), z(v.z) {}
  KJIT_INLINE operator ::kjit::uint3() const { return ::kjit::uint3(x, y, z); }
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct dim3 {
  unsigned x, y, z;
  KJIT_INLINE constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1)
      : x(vx), y(vy), z(vz) {}
  KJIT_INLINE constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  KJIT_INLINE dim3(const ::kjit::uint3& v) : x(v.x), y(v.y), z(v.z) {}
  KJIT_INLINE constexpr operator uint3() const { return uint3(x, y, z); }
};
KJIT_INLINE uint1 make_uint1(unsigned x) { return {x}; }
KJIT_INLINE uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
KJIT_INLINE uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3(x, y, z); }
KJIT_INLINE uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return {x, y, z, w};
}

}  // namespace kjit::cuda_dialect
