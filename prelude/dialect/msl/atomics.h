// Metal's atomics on both backends: atomic<T> (atomic_int, atomic_uint, atomic_float) and the
// atomic_*_explicit functions, relaxed as on Metal, over each platform's primitives.
#pragma once

#include "common/atomics.h"
#include "dialect/msl/names.h"

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
  return ::kjit::atomics::exchange(&p->value, v);
}
template <class T>
KJIT_INLINE T atomic_fetch_add_explicit(atomic<T>* p, typename same_type<T>::type v, memory_order) {
  return ::kjit::atomics::add(&p->value, v);
}
template <class T>
KJIT_INLINE T atomic_fetch_sub_explicit(atomic<T>* p, typename same_type<T>::type v, memory_order) {
  if constexpr (::kjit::is_same_v<T, float>) {
    return ::kjit::atomics::add(&p->value, -v);
  } else {
    return ::kjit::atomics::sub(&p->value, v);
  }
}
template <class T>
KJIT_INLINE bool atomic_compare_exchange_weak_explicit(atomic<T>* p, T* expected,
                                                       typename same_type<T>::type desired,
                                                       memory_order, memory_order) {
  if constexpr (::kjit::is_same_v<T, float>) {
    const int want = __builtin_bit_cast(int, *expected);
    const int seen = ::kjit::atomics::cas(reinterpret_cast<int*>(&p->value), want,
                                          __builtin_bit_cast(int, desired));
    *expected = __builtin_bit_cast(float, seen);
    return seen == want;
  } else {
    const T seen = ::kjit::atomics::cas(&p->value, *expected, desired);
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
// min/max of floats by compare-and-swap (combining as simd_max/simd_min do); integers natively.
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
    return atomic_float_update(p, v, simd_ops::max_op{});
  } else {
    return ::kjit::atomics::max(&p->value, v);
  }
}
template <class T>
KJIT_INLINE T atomic_fetch_min_explicit(atomic<T>* p, typename same_type<T>::type v, memory_order) {
  if constexpr (::kjit::is_same_v<T, float>) {
    return atomic_float_update(p, v, simd_ops::min_op{});
  } else {
    return ::kjit::atomics::min(&p->value, v);
  }
}
#define KJIT_ATOMIC_BITWISE(name, intrinsic)                                      \
  template <class T>                                                              \
  KJIT_INLINE T name(atomic<T>* p, typename same_type<T>::type v, memory_order) { \
    return intrinsic(&p->value, v);                                               \
  }
KJIT_ATOMIC_BITWISE(atomic_fetch_and_explicit, ::kjit::atomics::bit_and)
KJIT_ATOMIC_BITWISE(atomic_fetch_or_explicit, ::kjit::atomics::bit_or)
KJIT_ATOMIC_BITWISE(atomic_fetch_xor_explicit, ::kjit::atomics::bit_xor)
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
