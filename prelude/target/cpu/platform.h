// The CPU backend's platform layer: GCC/Clang builtins and predefined macros, no system headers
// (compile time is user-visible).
#pragma once

#define KJIT_CPU 1
#define KJIT_INLINE inline __attribute__((always_inline))
#define KJIT_MATHF(name) __builtin_##name##f
#define KJIT_MATH(name) __builtin_##name
// Before a loop over a group's threads: its iterations are threads, which do not order their
// memory accesses between waits (two threads touching one element, one writing, is a race on a
// GPU), so the compiler may run them side by side without checking that their accesses overlap.
#ifdef __clang__
#define KJIT_THREADS_LOOP _Pragma("clang loop vectorize(assume_safety)")
#else
#define KJIT_THREADS_LOOP _Pragma("GCC ivdep")
#endif

typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __UINTPTR_TYPE__ uintptr_t;
