// The prelude's float <-> half / bfloat conversions, checked bit for bit against independent
// references: the compiler's _Float16 conversions, and a bfloat16 rounding computed in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "../../prelude/common/float_bits.h"

namespace {

bool is_half_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0; }
bool is_bfloat_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x007fu) != 0; }

// The compiler's float -> _Float16 conversion. Without F16C it is a library call of ~100 ns;
// with it, one instruction, so the sweeps below take well under a second.
uint16_t reference_half_soft(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t reference_half_f16c(float f) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(f));
}
bool have_f16c() { return __builtin_cpu_supports("f16c"); }
#else
uint16_t reference_half_f16c(float f) { return reference_half_soft(f); }
bool have_f16c() { return false; }
#endif

uint16_t (*const reference_half)(float) = have_f16c() ? reference_half_f16c : reference_half_soft;

// The step of the dense sweeps: every 97th pattern when the reference is fast.
uint64_t sweep_step() { return have_f16c() ? 97 : 997; }

// Compares the conversion of the float with bits |x| to the reference; returns false (after
// reporting) on a mismatch.
bool check_half(uint32_t x) {
  const float f = std::bit_cast<float>(x);
  const uint16_t got = kjit::float_to_half_bits(f);
  const uint16_t want = reference_half(f);
  if (std::isnan(f)) {
    if (is_half_nan(got) && (got & 0x8000u) == (want & 0x8000u)) return true;
  } else if (got == want) {
    return true;
  }
  ADD_FAILURE() << "float_to_half_bits(bits 0x" << std::hex << x << ") = 0x" << got
                << ", expected 0x" << want;
  return false;
}

TEST(FloatBits, EveryHalfToFloat) {
  int failures = 0;
  for (uint32_t h = 0; h < 0x10000u && failures < 10; ++h) {
    const float got = kjit::half_bits_to_float(static_cast<uint16_t>(h));
    const float want = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
    if (std::isnan(want)) {
      if (!std::isnan(got) || std::signbit(got) != std::signbit(want)) {
        ADD_FAILURE() << "half 0x" << std::hex << h << " should be a NaN";
        ++failures;
      }
      continue;
    }
    if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(want)) {
      ADD_FAILURE() << "half 0x" << std::hex << h << " -> " << got << ", expected " << want;
      ++failures;
    }
  }
}

TEST(FloatBits, HalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    if (is_half_nan(static_cast<uint16_t>(h))) continue;
    ASSERT_EQ(kjit::float_to_half_bits(kjit::half_bits_to_float(static_cast<uint16_t>(h))), h)
        << std::hex << h;
  }
}

TEST(FloatBits, ReferencesAgree) {
  for (uint32_t x = 0x33000000u; x < 0x47900000u; x += 0x1001u) {
    const float f = std::bit_cast<float>(x);
    ASSERT_EQ(reference_half_soft(f), reference_half_f16c(f)) << std::hex << x;
  }
}

TEST(FloatBits, FloatToHalfDenseSweep) {
  int failures = 0;
  const uint64_t step = sweep_step();
  for (uint64_t x = 0; x <= 0xffffffffull && failures < 10; x += step) {
    failures += !check_half(static_cast<uint32_t>(x));
  }
}

TEST(FloatBits, FloatToHalfAtTheBoundaries) {
  // Every pattern near: the overflow threshold (65520 = 0x477ff000), the largest half and
  // infinity; the smallest normal half (2^-14 = 0x38800000); the smallest subnormal half
  // (2^-24 = 0x33800000) and half of it (0x33000000), below which everything is zero; NaN.
  const uint32_t centers[] = {0x477ff000u, 0x477fe000u, 0x47800000u, 0x7f800000u,
                              0x38800000u, 0x38000000u, 0x33800000u, 0x33000000u,
                              0x32800000u, 0x00000000u, 0x3f800000u};
  int failures = 0;
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t c : centers) {
      const uint32_t lo = c < 0x20000u ? 0 : c - 0x20000u;
      const uint32_t hi = c + 0x20000u > 0x7fffffffu ? 0x7fffffffu : c + 0x20000u;
      for (uint32_t x = lo; x <= hi && failures < 10; ++x) failures += !check_half(sign | x);
    }
  }
  // Every subnormal half and its neighbourhood, ties included: all floats from 2^-26 to 2^-13.
  const uint32_t step = have_f16c() ? 3 : 31;
  for (uint32_t x = 0x32800000u; x <= 0x39000000u && failures < 10; x += step) {
    failures += !check_half(x);
    failures += !check_half(x | 0x80000000u);
  }
}

TEST(FloatBits, FloatToHalfSpecialValues) {
  EXPECT_EQ(kjit::float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(kjit::float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(kjit::float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(kjit::float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(kjit::float_to_half_bits(65519.99f), 0x7bff);
  EXPECT_EQ(kjit::float_to_half_bits(65520.0f), 0x7c00);  // the tie rounds to even: infinity
  EXPECT_EQ(kjit::float_to_half_bits(INFINITY), 0x7c00);
  EXPECT_EQ(kjit::float_to_half_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(kjit::float_to_half_bits(0x1p-24f), 0x0001);
  EXPECT_EQ(kjit::float_to_half_bits(0x1p-25f), 0x0000);  // the tie rounds to even: zero
  EXPECT_EQ(kjit::float_to_half_bits(0x1.8p-24f), 0x0002);
  EXPECT_TRUE(is_half_nan(kjit::float_to_half_bits(NAN)));
  // A NaN whose payload lives only in the low bits is still a NaN.
  EXPECT_TRUE(is_half_nan(kjit::float_to_half_bits(std::bit_cast<float>(0x7f800001u))));
  EXPECT_TRUE(is_half_nan(kjit::float_to_half_bits(std::bit_cast<float>(0xff800001u))));
}

// The bfloat16 nearest to the float with bits |x|, ties to even, computed with double
// arithmetic on the two candidates rather than with integer carries.
uint16_t reference_bfloat(uint32_t x) {
  const uint32_t sign = x & 0x80000000u;
  const uint32_t ax = x & 0x7fffffffu;
  const uint32_t down = ax & 0xffff0000u;  // the candidate toward zero
  const int exponent = static_cast<int>(ax >> 23);
  // The gap between consecutive bfloat16 values at this exponent (8 significant bits).
  const double gap = std::ldexp(1.0, std::max(exponent, 1) - 127 - 7);
  const double value = static_cast<double>(std::bit_cast<float>(ax));
  const double below = static_cast<double>(std::bit_cast<float>(down));
  const double above = below + gap;  // 2^128 past the largest finite value: rounds to infinity
  uint32_t chosen;
  if (value - below < above - value) {
    chosen = down;
  } else if (value - below > above - value) {
    chosen = down + 0x10000u;
  } else {
    chosen = (down & 0x10000u) == 0 ? down : down + 0x10000u;
  }
  return static_cast<uint16_t>((sign | chosen) >> 16);
}

bool check_bfloat(uint32_t x) {
  const float f = std::bit_cast<float>(x);
  const uint16_t got = kjit::float_to_bfloat_bits(f);
  if (std::isnan(f)) {
    if (is_bfloat_nan(got) && (got & 0x8000u) == ((x >> 16) & 0x8000u)) return true;
    ADD_FAILURE() << "float_to_bfloat_bits(NaN bits 0x" << std::hex << x << ") = 0x" << got;
    return false;
  }
  const uint16_t want = reference_bfloat(x);
  if (got == want) return true;
  ADD_FAILURE() << "float_to_bfloat_bits(bits 0x" << std::hex << x << ") = 0x" << got
                << ", expected 0x" << want;
  return false;
}

TEST(FloatBits, BfloatReferenceIsSound) {
  EXPECT_EQ(reference_bfloat(0x3f800000u), 0x3f80);  // 1
  EXPECT_EQ(reference_bfloat(0x3f808000u), 0x3f80);  // tie, even below
  EXPECT_EQ(reference_bfloat(0x3f818000u), 0x3f82);  // tie, even above
  EXPECT_EQ(reference_bfloat(0x3f808001u), 0x3f81);
  EXPECT_EQ(reference_bfloat(0x7f7f8000u), 0x7f80);  // tie at the top: infinity
  EXPECT_EQ(reference_bfloat(0x7f7f7fffu), 0x7f7f);
  EXPECT_EQ(reference_bfloat(0x00008000u), 0x0000);  // subnormal tie, even below
  EXPECT_EQ(reference_bfloat(0x80018000u), 0x8002);
  EXPECT_EQ(reference_bfloat(0x7f800000u), 0x7f80);  // infinity stays
}

TEST(FloatBits, FloatToBfloatDenseSweep) {
  int failures = 0;
  for (uint64_t x = 0; x <= 0xffffffffull && failures < 10; x += 97) {
    failures += !check_bfloat(static_cast<uint32_t>(x));
  }
}

TEST(FloatBits, FloatToBfloatEveryHighHalfAtTheRoundingPoints) {
  // For every bfloat16 pattern, the low halves where rounding changes: exact, just below,
  // at and just above the tie, and the largest.
  int failures = 0;
  for (uint32_t high = 0; high < 0x10000u && failures < 10; ++high) {
    for (uint32_t low : {0x0000u, 0x0001u, 0x7ffeu, 0x7fffu, 0x8000u, 0x8001u, 0xfffeu, 0xffffu}) {
      failures += !check_bfloat((high << 16) | low);
    }
  }
}

TEST(FloatBits, BfloatToFloatIsExact) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = kjit::bfloat_bits_to_float(static_cast<uint16_t>(b));
    ASSERT_EQ(std::bit_cast<uint32_t>(f), b << 16) << std::hex << b;
    if (!is_bfloat_nan(static_cast<uint16_t>(b))) {
      ASSERT_EQ(kjit::float_to_bfloat_bits(f), b) << std::hex << b;
    }
  }
}

}  // namespace
