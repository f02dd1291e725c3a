// Relaxed atomic read-modify-write on plain T, over the platform's primitives: CUDA's atomicAdd,
// atomicCAS... on the GPU, GCC's __atomic builtins on the CPU (float addition by compare-and-swap).
// Both dialects' atomics are written over these.
#include "scalar.h"

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
template <class T>
KJIT_INLINE T exchange(T* p, T v) {
  return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
}
template <class T>
KJIT_INLINE T cas(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;  // the value seen
}
// A float addition by compare-and-swap on its bits.
KJIT_INLINE float add(float* p, float v) {
  unsigned* bits = reinterpret_cast<unsigned*>(p);
  unsigned seen = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    const unsigned sum = __builtin_bit_cast(unsigned, __builtin_bit_cast(float, seen) + v);
    if (__atomic_compare_exchange_n(bits, &seen, sum, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      return __builtin_bit_cast(float, seen);
    }
  }
}
template <class T>
KJIT_INLINE T add(T* p, T v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
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
