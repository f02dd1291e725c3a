// CUDA C++ on the CPU: execution-space qualifiers, printf and assert, atomics, and
// cooperative_groups basics over the running thread's context. The math library, the other
// intrinsics and the vector types follow (dialect/cuda/on_cpu/math.h,
// dialect/cuda/on_cpu/intrinsics.h, dialect/cuda/on_cpu/vector_types.h).
#pragma once

#include "common/atomics.h"
#include "dialect/cuda/on_cpu/vector_types.h"
#include "target/cpu/thread.h"

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) alignas(n)
// Constant memory is memory like any other here: the variables a header declares are globals.
#define __constant__
#if !__has_builtin(__builtin_assume)
#define __builtin_assume(condition) ((void)0)
#endif

// Device-side printf and assert: the process's standard output; a message on standard error,
// then a trap, which stops the kernel (the CPU backend catches it and raises LaunchError).
extern "C" int printf(const char* format, ...);
extern "C" int dprintf(int fd, const char* format, ...);
namespace kjit::cuda_dialect {
[[noreturn]] KJIT_INLINE void __trap() { __builtin_trap(); }
[[noreturn]] inline void assert_failed(const char* expression, const char* file, unsigned line) {
  // The file is "<source>" or "<header>" (#line): named without its brackets.
  dprintf(2, "kjit: %.*s line %u: assertion `%s' failed\n", int(__builtin_strlen(file)) - 2,
          file + 1, line, expression);
  __builtin_trap();
}
}  // namespace kjit::cuda_dialect
#define assert(e) ((e) ? void(0) : ::kjit::cuda_dialect::assert_failed(#e, __FILE__, __LINE__))

namespace kjit {
// CUDA's dynamic shared memory (extern __shared__) on the CPU, in loop and cooperative mode
// alike: one buffer per worker.
inline unsigned char* dynamic_shared(unsigned long bytes) {
  static thread_local unsigned char* buffer = nullptr;
  static thread_local unsigned long size = 0;
  if (size < bytes) {
    // A new block, and the old one freed once the new one is in place: a kernel stopped (by
    // Ctrl-C) between any two steps leaks a block at most, where realloc's result not stored yet
    // would leave |buffer| pointing at freed memory.
    unsigned char* const old = buffer;
    buffer = static_cast<unsigned char*>(__builtin_malloc(bytes));
    size = buffer ? bytes : 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);  // the stores above come first, for a handler too
    __builtin_free(old);
  }
  return buffer;
}
}  // namespace kjit

namespace kjit::cuda_dialect {

using KJIT_MATH_NAMES;

// Atomics, relaxed (CUDA's device-scope atomics order nothing else either).
#define KJIT_CUDA_ATOMIC(name, op)       \
  template <class T, class U>            \
  KJIT_INLINE T name(T* p, U v) {        \
    return ::kjit::atomics::op(p, T(v)); \
  }
KJIT_CUDA_ATOMIC(atomicAdd, add)
KJIT_CUDA_ATOMIC(atomicSub, sub)
KJIT_CUDA_ATOMIC(atomicMax, max)
KJIT_CUDA_ATOMIC(atomicMin, min)
KJIT_CUDA_ATOMIC(atomicExch, exchange)
KJIT_CUDA_ATOMIC(atomicAnd, bit_and)
KJIT_CUDA_ATOMIC(atomicOr, bit_or)
KJIT_CUDA_ATOMIC(atomicXor, bit_xor)
#undef KJIT_CUDA_ATOMIC
template <class T, class U, class V>
KJIT_INLINE T atomicCAS(T* p, U expected, V desired) {
  return ::kjit::atomics::cas(p, T(expected), T(desired));
}
// Wrapping increment and decrement: old >= limit becomes 0; old == 0 or old > limit becomes
// limit.
KJIT_INLINE unsigned atomicInc(unsigned* p, unsigned limit) {
  return ::kjit::atomics::update(p,
                                 [limit](unsigned seen) { return seen >= limit ? 0u : seen + 1; });
}
KJIT_INLINE unsigned atomicDec(unsigned* p, unsigned limit) {
  return ::kjit::atomics::update(
      p, [limit](unsigned seen) { return seen == 0 || seen > limit ? limit : seen - 1; });
}
// The same at block and system scope: every thread of a CPU launch shares one memory.
#define KJIT_CUDA_SCOPED_ATOMIC(name)         \
  template <class T, class... U>              \
  KJIT_INLINE T name##_block(T* p, U... v) {  \
    return name(p, v...);                     \
  }                                           \
  template <class T, class... U>              \
  KJIT_INLINE T name##_system(T* p, U... v) { \
    return name(p, v...);                     \
  }
KJIT_CUDA_SCOPED_ATOMIC(atomicAdd)
KJIT_CUDA_SCOPED_ATOMIC(atomicSub)
KJIT_CUDA_SCOPED_ATOMIC(atomicMax)
KJIT_CUDA_SCOPED_ATOMIC(atomicMin)
KJIT_CUDA_SCOPED_ATOMIC(atomicExch)
KJIT_CUDA_SCOPED_ATOMIC(atomicAnd)
KJIT_CUDA_SCOPED_ATOMIC(atomicOr)
KJIT_CUDA_SCOPED_ATOMIC(atomicXor)
KJIT_CUDA_SCOPED_ATOMIC(atomicCAS)
KJIT_CUDA_SCOPED_ATOMIC(atomicInc)
KJIT_CUDA_SCOPED_ATOMIC(atomicDec)
#undef KJIT_CUDA_SCOPED_ATOMIC
KJIT_INLINE void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
KJIT_INLINE void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
KJIT_INLINE void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

}  // namespace kjit::cuda_dialect

namespace cooperative_groups {

struct grid_group {
  KJIT_INLINE unsigned long long thread_rank() const {
    const ::kjit::thread_ctx& t = *::kjit::current_thread;
    return t.block_rank() * t.full_group_threads() + t.rank_in_block();
  }
  KJIT_INLINE unsigned long long size() const {
    const ::kjit::thread_ctx& t = *::kjit::current_thread;
    const ::kjit::uint3 n = t.groups;
    return static_cast<unsigned long long>(n.x) * n.y * n.z * t.full_group_threads();
  }
  KJIT_INLINE unsigned long long num_threads() const { return size(); }
};

struct thread_block {
  KJIT_INLINE unsigned thread_rank() const { return ::kjit::current_thread->rank_in_block(); }
  KJIT_INLINE unsigned size() const { return ::kjit::current_thread->full_group_threads(); }
  KJIT_INLINE unsigned num_threads() const { return size(); }
  KJIT_INLINE ::kjit::cuda_dialect::dim3 group_index() const {
    return ::kjit::current_thread->group_id;
  }
  KJIT_INLINE ::kjit::cuda_dialect::dim3 thread_index() const {
    return ::kjit::current_thread->local_id();
  }
  // A barrier: defined by the cooperative mode (mode/coop/cuda.h), which every body calling it
  // runs in. |site| is the call's site, whose line debug builds report.
  auto sync(unsigned site = KJIT_CALL_SITE) const;
};

// A tile of N consecutive threads of a block (N a power of two up to 32, so tiles never span
// warps). Its collective operations, like sync(), exist in cooperative mode.
template <unsigned N>
struct thread_block_tile {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
                "thread_block_tile: the size must be a power of two up to 32");
  KJIT_INLINE unsigned thread_rank() const { return ::kjit::current_thread->rank_in_block() % N; }
  KJIT_INLINE static constexpr unsigned size() { return N; }
  KJIT_INLINE static constexpr unsigned num_threads() { return N; }
  KJIT_INLINE unsigned meta_group_rank() const {
    return ::kjit::current_thread->rank_in_block() / N;
  }
  KJIT_INLINE unsigned meta_group_size() const {
    return (::kjit::current_thread->full_group_threads() + N - 1) / N;
  }
  // |site| is the call's site, which tells the lanes that meet at the same operation.
  auto sync(unsigned site = KJIT_CALL_SITE) const;
  template <class T>
  auto shfl(T v, int src, unsigned site = KJIT_CALL_SITE) const;
  template <class T>
  auto shfl_up(T v, unsigned delta, unsigned site = KJIT_CALL_SITE) const;
  template <class T>
  auto shfl_down(T v, unsigned delta, unsigned site = KJIT_CALL_SITE) const;
  template <class T>
  auto shfl_xor(T v, unsigned mask, unsigned site = KJIT_CALL_SITE) const;
  auto ballot(int predicate, unsigned site = KJIT_CALL_SITE) const;
  auto any(int predicate, unsigned site = KJIT_CALL_SITE) const;
  auto all(int predicate, unsigned site = KJIT_CALL_SITE) const;
};

}  // namespace cooperative_groups
