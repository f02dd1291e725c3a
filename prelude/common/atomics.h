// Relaxed atomic read-modify-write on plain T, over the platform's primitives: CUDA's atomicAdd,
// atomicCAS... on the GPU, GCC's __atomic builtins on the CPU (float addition by compare-and-swap).
// Both dialects' atomics are written over these.
#pragma once

#include "common/scalar.h"

namespace kjit::atomics {
#ifdef KJIT_CUDA
template <class T>
KJIT_INLINE T exchange(T* p, T v) {
  return atomicExch(p, v);
}
template <class T>
KJIT_INLINE T cas(T* p, T expected, T desired) {
  return atomicCAS(p, expected, desired);
}
template <class T>
KJIT_INLINE T add(T* p, T v) {
  return atomicAdd(p, v);
}
#define KJIT_ATOMIC_INT_OP(name, intrinsic) \
  template <class T>                        \
  KJIT_INLINE T name(T* p, T v) {           \
    return intrinsic(p, v);                 \
  }
KJIT_ATOMIC_INT_OP(sub, atomicSub)
KJIT_ATOMIC_INT_OP(max, atomicMax)
KJIT_ATOMIC_INT_OP(min, atomicMin)
KJIT_ATOMIC_INT_OP(bit_and, atomicAnd)
KJIT_ATOMIC_INT_OP(bit_or, atomicOr)
KJIT_ATOMIC_INT_OP(bit_xor, atomicXor)
#undef KJIT_ATOMIC_INT_OP
#else
// GCC's builtins take integers and pointers: a float or double travels as its bits.
template <int Size>
struct bits_sized;
template <>
struct bits_sized<4> {
  using type = uint32_t;
};
template <>
struct bits_sized<8> {
  using type = uint64_t;
};
template <class T>
using bits_of = typename bits_sized<sizeof(T)>::type;
template <class T>
KJIT_INLINE T exchange(T* p, T v) {
  if constexpr (is_builtin_float_v<T>) {
    using B = bits_of<T>;
    return __builtin_bit_cast(T, __atomic_exchange_n(reinterpret_cast<B*>(p),
                                                     __builtin_bit_cast(B, v), __ATOMIC_RELAXED));
  } else {
    return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
  }
}
template <class T>
KJIT_INLINE T cas(T* p, T expected, T desired) {
  if constexpr (is_builtin_float_v<T>) {
    using B = bits_of<T>;
    B seen = __builtin_bit_cast(B, expected);
    __atomic_compare_exchange_n(reinterpret_cast<B*>(p), &seen, __builtin_bit_cast(B, desired),
                                false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return __builtin_bit_cast(T, seen);  // the value seen
  } else {
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return expected;  // the value seen
  }
}
// Replaces *p by next(*p) atomically, retrying the compare-and-swap until no other thread
// came between; returns the value replaced.
template <class T, class Next>
KJIT_INLINE T update(T* p, Next next) {
  T seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &seen, next(seen), true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  return seen;
}
// Floating-point addition by compare-and-swap on the bits; integers by the builtin.
template <class T>
KJIT_INLINE T add(T* p, T v) {
  if constexpr (is_builtin_float_v<T>) {
    using B = bits_of<T>;
    return __builtin_bit_cast(T, update(reinterpret_cast<B*>(p), [v](B seen) {
                                return __builtin_bit_cast(B, T(__builtin_bit_cast(T, seen) + v));
                              }));
  } else {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  }
}
#define KJIT_ATOMIC_INT_OP(name, builtin)   \
  template <class T>                        \
  KJIT_INLINE T name(T* p, T v) {           \
    return builtin(p, v, __ATOMIC_RELAXED); \
  }
KJIT_ATOMIC_INT_OP(sub, __atomic_fetch_sub)
KJIT_ATOMIC_INT_OP(bit_and, __atomic_fetch_and)
KJIT_ATOMIC_INT_OP(bit_or, __atomic_fetch_or)
KJIT_ATOMIC_INT_OP(bit_xor, __atomic_fetch_xor)
#undef KJIT_ATOMIC_INT_OP
// Integer min and max by compare-and-swap: the old value is returned.
template <bool Max, class T>
KJIT_INLINE T extreme(T* p, T v) {
  T seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while ((Max ? seen < v : v < seen) &&
         !__atomic_compare_exchange_n(p, &seen, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return seen;
}
template <class T>
KJIT_INLINE T max(T* p, T v) {
  return extreme<true>(p, v);
}
template <class T>
KJIT_INLINE T min(T* p, T v) {
  return extreme<false>(p, v);
}
#endif
}  // namespace kjit::atomics
