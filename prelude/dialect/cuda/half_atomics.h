// atomicAdd on __half, __nv_bfloat16 and their pairs, as CUDA's: each value is rounded once, as
// __hadd rounds it. A compare-and-swap on the 4-byte word that holds the value (a pair fills its
// word), on every target; the GPU's own half-precision atomics would need sm_70 (sm_90 for
// bfloat16), where this works on every architecture.
#pragma once

// On the CPU the word is updated through common/atomics.h, which the entry header includes
// before this (through dialect/cuda/on_cpu/runtime.h); the GPU uses atomicCAS.
#include "dialect/cuda/half2.h"

namespace kjit::cuda_dialect {
namespace half_atomics {

// CUDA's scopes: the block's threads, the device's, and the system's (host and peers).
enum class scope { block, device, system };

// Replaces the word at |word| by next(its value), atomically; returns the value it replaced.
template <scope S, class Next>
KJIT_INLINE unsigned update(unsigned* word, Next next) {
#ifdef KJIT_CUDA
  unsigned seen = *word;
  for (;;) {
    const unsigned wanted = next(seen);
#if __CUDA_ARCH__ >= 600  // the scoped forms exist from sm_60; before, the device's serves
    const unsigned was = S == scope::block    ? atomicCAS_block(word, seen, wanted)
                         : S == scope::system ? atomicCAS_system(word, seen, wanted)
                                              : atomicCAS(word, seen, wanted);
#else
    const unsigned was = atomicCAS(word, seen, wanted);
#endif
    if (was == seen) return was;
    seen = was;
  }
#else
  // Every thread of a CPU launch shares one memory: one kind of atomic serves every scope.
  return ::kjit::atomics::update(word, next);
#endif
}

template <scope S, class H>
KJIT_INLINE H add(H* p, H v) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  const unsigned shift = static_cast<unsigned>(address & 2) * 8;  // the half's place in its word
  const unsigned old =
      update<S>(reinterpret_cast<unsigned*>(address & ~uintptr_t(3)), [&](unsigned w) {
        const H sum = __hadd(H::from_bits(static_cast<uint16_t>(w >> shift)), v);
        return (w & ~(0xffffu << shift)) | (unsigned(sum.bits) << shift);
      });
  return H::from_bits(static_cast<uint16_t>(old >> shift));
}

// A pair: its first value in the word's low half, as both targets are little-endian.
template <scope S, class H2>
KJIT_INLINE H2 add_pair(H2* p, H2 v) {
  using H = decltype(v.x);
  auto pair = [](unsigned w) {
    return H2(H::from_bits(static_cast<uint16_t>(w)), H::from_bits(static_cast<uint16_t>(w >> 16)));
  };
  const unsigned old = update<S>(reinterpret_cast<unsigned*>(p), [&](unsigned w) {
    const H2 sum = __hadd2(pair(w), v);
    return unsigned(sum.x.bits) | (unsigned(sum.y.bits) << 16);
  });
  return pair(old);
}

}  // namespace half_atomics

// atomicAdd, atomicAdd_block and atomicAdd_system for each type.
#define KJIT_HALF_ATOMIC_ADD(T, fn)                             \
  KJIT_INLINE T atomicAdd(T* p, T v) {                          \
    return half_atomics::fn<half_atomics::scope::device>(p, v); \
  }                                                             \
  KJIT_INLINE T atomicAdd_block(T* p, T v) {                    \
    return half_atomics::fn<half_atomics::scope::block>(p, v);  \
  }                                                             \
  KJIT_INLINE T atomicAdd_system(T* p, T v) {                   \
    return half_atomics::fn<half_atomics::scope::system>(p, v); \
  }
KJIT_HALF_ATOMIC_ADD(__half, add)
KJIT_HALF_ATOMIC_ADD(__nv_bfloat16, add)
KJIT_HALF_ATOMIC_ADD(__half2, add_pair)
KJIT_HALF_ATOMIC_ADD(__nv_bfloat162, add_pair)
#undef KJIT_HALF_ATOMIC_ADD

}  // namespace kjit::cuda_dialect
