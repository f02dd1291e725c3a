// The CUDA backend's platform layer: NVRTC compiles with -default-device, so every function here
// is a device function; CUDA's math library is built into NVRTC.
#pragma once

#define KJIT_CUDA 1
#define KJIT_INLINE __forceinline__
#define KJIT_MATHF(name) ::name##f
#define KJIT_MATH(name) ::name

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef unsigned long uintptr_t;
