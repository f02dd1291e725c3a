// Integer functions of every width, shared by the dialects: Metal's popcount, clz, mulhi...
// (dialect/msl/library.h, every target) are these, and so are CUDA's __popc, __clz, __mulhi... on
// the CPU (dialect/cuda/on_cpu/intrinsics.h), where the GPU has its own.
#pragma once

#include "common/scalar.h"

namespace kjit::bits {

template <class T>
struct unsigned_of {
  typedef T type;
};
#define KJIT_BITS_UNSIGNED(S, U) \
  template <>                    \
  struct unsigned_of<S> {        \
    typedef U type;              \
  };
KJIT_BITS_UNSIGNED(char, unsigned char)
KJIT_BITS_UNSIGNED(signed char, unsigned char)
KJIT_BITS_UNSIGNED(short, unsigned short)
KJIT_BITS_UNSIGNED(int, unsigned)
KJIT_BITS_UNSIGNED(long, unsigned long)
KJIT_BITS_UNSIGNED(long long, unsigned long long)
#undef KJIT_BITS_UNSIGNED

template <class T>
inline constexpr bool is_integer_v = ::kjit::is_int_like_v<T> && !::kjit::is_same_v<T, bool>;
template <class T>
inline constexpr int width = int(sizeof(T) * 8);
template <class T>
using unsigned_t = typename unsigned_of<T>::type;
template <class T>
inline constexpr bool is_signed_v = T(-1) < T(0);
template <class T>
KJIT_INLINE constexpr unsigned long long widened(T x) {
  return static_cast<unsigned long long>(static_cast<unsigned_t<T>>(x));
}
// Bit counts of a 64-bit word (the counts of leading and trailing zeros of a non-zero one).
#ifdef KJIT_CUDA
KJIT_INLINE int popcount64(unsigned long long v) { return __popcll(v); }
KJIT_INLINE int clz64(unsigned long long v) { return __clzll(static_cast<long long>(v)); }
KJIT_INLINE int ctz64(unsigned long long v) { return __ffsll(static_cast<long long>(v)) - 1; }
#else
KJIT_INLINE int popcount64(unsigned long long v) { return __builtin_popcountll(v); }
KJIT_INLINE int clz64(unsigned long long v) { return __builtin_clzll(v); }
KJIT_INLINE int ctz64(unsigned long long v) { return __builtin_ctzll(v); }
#endif
template <class T>
inline constexpr T highest = T(is_signed_v<T> ? (widened(T(-1)) >> 1) : widened(T(-1)));
template <class T>
inline constexpr T lowest = is_signed_v<T> ? T(-highest<T> - 1) : T(0);

#define KJIT_BITS_INTEGER template <class T, KJIT_IF(is_integer_v<T>)>

KJIT_BITS_INTEGER KJIT_INLINE T popcount(T x) { return T(popcount64(widened(x))); }
KJIT_BITS_INTEGER KJIT_INLINE T clz(T x) {
  constexpr int bits = width<T>;
  return x == T(0) ? T(bits) : T(clz64(widened(x)) - (64 - bits));
}
KJIT_BITS_INTEGER KJIT_INLINE T ctz(T x) { return x == T(0) ? T(width<T>) : T(ctz64(widened(x))); }
KJIT_BITS_INTEGER KJIT_INLINE T reverse_bits(T x) {
  unsigned long long v = widened(x);
  v = (v >> 1 & 0x5555555555555555ull) | (v & 0x5555555555555555ull) << 1;
  v = (v >> 2 & 0x3333333333333333ull) | (v & 0x3333333333333333ull) << 2;
  v = (v >> 4 & 0x0f0f0f0f0f0f0f0full) | (v & 0x0f0f0f0f0f0f0f0full) << 4;
  v = (v >> 8 & 0x00ff00ff00ff00ffull) | (v & 0x00ff00ff00ff00ffull) << 8;
  v = (v >> 16 & 0x0000ffff0000ffffull) | (v & 0x0000ffff0000ffffull) << 16;
  v = v >> 32 | v << 32;
  return T(v >> (64 - width<T>));
}
// |x - y| as T's unsigned type, which holds it for any two values of T.
KJIT_BITS_INTEGER KJIT_INLINE unsigned_t<T> absdiff(T x, T y) {
  typedef unsigned_t<T> U;
  return x > y ? U(U(x) - U(y)) : U(U(y) - U(x));
}
// (x + y) >> 1 and (x + y + 1) >> 1, without overflow.
KJIT_BITS_INTEGER KJIT_INLINE T hadd(T x, T y) { return T((x >> 1) + (y >> 1) + (x & y & 1)); }
KJIT_BITS_INTEGER KJIT_INLINE T rhadd(T x, T y) { return T((x >> 1) + (y >> 1) + ((x | y) & 1)); }
// The high half of x * y.
KJIT_BITS_INTEGER KJIT_INLINE T mulhi(T x, T y) {
  constexpr int bits = width<T>;
  if constexpr (bits == 64) {
#ifdef KJIT_CPU
    if constexpr (is_signed_v<T>) {
      return T((static_cast<__int128>(x) * y) >> 64);
    } else {
      return T((static_cast<unsigned __int128>(x) * y) >> 64);
    }
#else
    if constexpr (is_signed_v<T>) {
      return T(__mul64hi(static_cast<long long>(x), static_cast<long long>(y)));
    } else {
      return T(__umul64hi(x, y));
    }
#endif
  } else if constexpr (is_signed_v<T>) {
    return T((static_cast<long long>(x) * y) >> bits);
  } else {
    return T((static_cast<unsigned long long>(x) * y) >> bits);
  }
}
// 24-bit multiplies: the low 24 bits of each operand (sign-extended for signed types).
KJIT_BITS_INTEGER KJIT_INLINE T mul24(T x, T y) {
  static_assert(width<T> == 32, "mul24: the operands must be int or uint");
  if constexpr (is_signed_v<T>) {
    const int a = int(unsigned(x) << 8) >> 8, b = int(unsigned(y) << 8) >> 8;
    return T(unsigned(a) * unsigned(b));
  } else {
    return T((x & 0xffffffu) * (y & 0xffffffu));
  }
}
#undef KJIT_BITS_INTEGER

}  // namespace kjit::bits
