// Metal's atomics on both backends: atomic<T> (atomic_int, atomic_uint, atomic_float) and the
// atomic_*_explicit functions, relaxed as on Metal, over each platform's primitives.
#include "msl.h"

namespace metal {

// Atomics: Metal has relaxed ones only; an atomic<T> has T's size and alignment, so bodies cast
// plain pointers to atomic ones.
enum memory_order { memory_order_relaxed };

template <class T>
struct atomic {
  T value;
};
typedef atomic<int> atomic_int;
typedef atomic<unsigned> atomic_uint;
typedef atomic<float> atomic_float;
typedef atomic<bool> atomic_bool;

template <class T>
struct same_type {
  typedef T type;
};

// The platform's relaxed atomic primitives on plain T.
namespace atomic_detail {
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
template <class T>
KJIT_INLINE T max(T* p, T v) {
  T seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (seen < v &&
         !__atomic_compare_exchange_n(p, &seen, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return seen;
}
template <class T>
KJIT_INLINE T min(T* p, T v) {
  T seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < seen &&
         !__atomic_compare_exchange_n(p, &seen, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return seen;
}
#endif
}  // namespace atomic_detail

template <class T>
KJIT_INLINE T atomic_load_explicit(const volatile atomic<T>* p, memory_order) {
  return p->value;
}
template <class T>
KJIT_INLINE void atomic_store_explicit(volatile atomic<T>* p, typename same_type<T>::type v,
                                       memory_order) {
  p->value = v;
}
template <class T>
KJIT_INLINE T atomic_exchange_explicit(atomic<T>* p, typename same_type<T>::type v, memory_order) {
  return atomic_detail::exchange(&p->value, v);
}
template <class T>
KJIT_INLINE T atomic_fetch_add_explicit(atomic<T>* p, typename same_type<T>::type v, memory_order) {
  return atomic_detail::add(&p->value, v);
}
template <class T>
KJIT_INLINE T atomic_fetch_sub_explicit(atomic<T>* p, typename same_type<T>::type v, memory_order) {
  if constexpr (::kjit::is_same_v<T, float>) {
    return atomic_detail::add(&p->value, -v);
  } else {
    return atomic_detail::sub(&p->value, v);
  }
}
template <class T>
KJIT_INLINE bool atomic_compare_exchange_weak_explicit(atomic<T>* p, T* expected,
                                                       typename same_type<T>::type desired,
                                                       memory_order, memory_order) {
  if constexpr (::kjit::is_same_v<T, float>) {
    const int want = __builtin_bit_cast(int, *expected);
    const int seen = atomic_detail::cas(reinterpret_cast<int*>(&p->value), want,
                                        __builtin_bit_cast(int, desired));
    *expected = __builtin_bit_cast(float, seen);
    return seen == want;
  } else {
    const T seen = atomic_detail::cas(&p->value, *expected, desired);
    const bool ok = seen == *expected;
    *expected = seen;
    return ok;
  }
}
template <class T>
KJIT_INLINE bool atomic_compare_exchange_strong_explicit(atomic<T>* p, T* expected,
                                                         typename same_type<T>::type desired,
                                                         memory_order a, memory_order b) {
  return atomic_compare_exchange_weak_explicit(p, expected, desired, a, b);
}
// min/max of floats by compare-and-swap; integers natively.
struct float_max {
  KJIT_INLINE float operator()(float a, float b) const { return ::kjit::max(a, b); }
};
struct float_min {
  KJIT_INLINE float operator()(float a, float b) const { return ::kjit::min(a, b); }
};
template <class T, class Op>
KJIT_INLINE T atomic_float_update(atomic<T>* p, T v, Op op) {
  T seen = p->value;
  while (!atomic_compare_exchange_weak_explicit(p, &seen, op(seen, v), memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
  return seen;
}
template <class T>
KJIT_INLINE T atomic_fetch_max_explicit(atomic<T>* p, typename same_type<T>::type v, memory_order) {
  if constexpr (::kjit::is_same_v<T, float>) {
    return atomic_float_update(p, v, float_max{});
  } else {
    return atomic_detail::max(&p->value, v);
  }
}
template <class T>
KJIT_INLINE T atomic_fetch_min_explicit(atomic<T>* p, typename same_type<T>::type v, memory_order) {
  if constexpr (::kjit::is_same_v<T, float>) {
    return atomic_float_update(p, v, float_min{});
  } else {
    return atomic_detail::min(&p->value, v);
  }
}
#define KJIT_ATOMIC_BITWISE(name, intrinsic)                                      \
  template <class T>                                                              \
  KJIT_INLINE T name(atomic<T>* p, typename same_type<T>::type v, memory_order) { \
    return intrinsic(&p->value, v);                                               \
  }
KJIT_ATOMIC_BITWISE(atomic_fetch_and_explicit, atomic_detail::bit_and)
KJIT_ATOMIC_BITWISE(atomic_fetch_or_explicit, atomic_detail::bit_or)
KJIT_ATOMIC_BITWISE(atomic_fetch_xor_explicit, atomic_detail::bit_xor)
#undef KJIT_ATOMIC_BITWISE

}  // namespace metal

namespace kjit_user {
using metal::memory_order, metal::memory_order_relaxed, metal::atomic, metal::atomic_int,
    metal::atomic_uint, metal::atomic_float, metal::atomic_bool, metal::atomic_load_explicit,
    metal::atomic_store_explicit, metal::atomic_exchange_explicit, metal::atomic_fetch_add_explicit,
    metal::atomic_fetch_sub_explicit, metal::atomic_fetch_max_explicit,
    metal::atomic_fetch_min_explicit, metal::atomic_fetch_and_explicit,
    metal::atomic_fetch_or_explicit, metal::atomic_fetch_xor_explicit,
    metal::atomic_compare_exchange_weak_explicit, metal::atomic_compare_exchange_strong_explicit;
}  // namespace kjit_user
