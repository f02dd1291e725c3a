#include "core/dtype_cast.h"

#include <kjit/errors.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <concepts>
#include <string>
#include <type_traits>

#include "core/device_ops.h"

// The prelude's conversions, shared so that host and kernels round identically.
#include "../../prelude/common/float_bits.h"

namespace kjit {
namespace {

// Elements of float16 and bfloat16, told apart from uint16_t by their type.
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};
using Complex = std::complex<float>;

// The value an element stands for; float16 and bfloat16 widen to float exactly.
float value_of(Half h) { return half_bits_to_float(h.bits); }
float value_of(BFloat b) { return bfloat_bits_to_float(b.bits); }
template <class T>
T value_of(T v) {
  return v;
}

// |v| as a float rounded to odd: between two floats, the one whose last bit is 1. Rounding that
// once more to float16 or bfloat16 (11 or 8 bits, well under float's 24) gives |v|'s own
// nearest-even rounding, as NumPy and ml_dtypes round a float64 or an int64 directly.
float to_odd_float(float v) { return v; }

float to_odd_float(double v) {
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) == v || !std::isfinite(f)) return f;  // exact, NaN or overflow
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if (bits & 1u) return f;
  // The neighbour on v's side of f: one step in the bits, across binades too.
  return std::bit_cast<float>(std::fabs(static_cast<double>(f)) < std::fabs(v) ? bits + 1
                                                                               : bits - 1);
}

template <std::integral T>
float to_odd_float(T v) {
  bool negative = false;
  if constexpr (std::is_signed_v<T>) negative = v < 0;
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  // The top 24 bits, with the last one set when any bit below them is.
  const int shift = std::max(0, static_cast<int>(std::bit_width(magnitude)) - 24);
  uint64_t top = magnitude >> shift;
  if (magnitude & ((uint64_t{1} << shift) - 1)) top |= 1u;
  const float f = std::ldexp(static_cast<float>(top), shift);
  return negative ? -f : f;
}

// Whether From converts to To: complex64 to a real type would drop the imaginary part.
template <class From, class To>
constexpr bool converts =
    !std::is_same_v<From, Complex> || std::is_same_v<To, Complex> || std::is_same_v<To, bool>;

// |v|, a value_of an element, as an element of To.
template <class To, class V>
To convert(V v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != V{};
  } else if constexpr (std::is_same_v<To, Half>) {
    return {float_to_half_bits(to_odd_float(v))};
  } else if constexpr (std::is_same_v<To, BFloat>) {
    return {float_to_bfloat_bits(to_odd_float(v))};
  } else if constexpr (std::is_same_v<V, Complex>) {
    return v;  // complex64 to complex64
  } else if constexpr (std::is_same_v<To, Complex>) {
    return Complex(static_cast<float>(v), 0.0f);
  } else {
    return static_cast<To>(v);  // C++20: integers wrap, floats truncate toward zero
  }
}

template <class From, class To>
void convert_elements(const From* src, To* dst, int64_t n, Dtype to, std::string_view where) {
  for (int64_t i = 0; i < n; ++i) {
    const auto v = value_of(src[i]);
    if constexpr (std::is_floating_point_v<decltype(v)> && std::is_integral_v<To> &&
                  !std::is_same_v<To, bool>) {
      // Outside the range the C++ conversion is undefined, and NumPy's result unspecified.
      if (!in_range(to, v)) {
        throw ValueError(std::string(where) + ": " + out_of_range(to, v) +
                         " (a floating value converts to an integer type only when its whole "
                         "part fits)");
      }
    }
    dst[i] = convert<To>(v);
  }
}

// Calls |f| with a value of the element type of |dtype|.
template <class F>
void with_element_type(Dtype dtype, F&& f) {
  switch (dtype) {
    case Dtype::Bool:
      return f(bool{});
    case Dtype::Int8:
      return f(int8_t{});
    case Dtype::Int16:
      return f(int16_t{});
    case Dtype::Int32:
      return f(int32_t{});
    case Dtype::Int64:
      return f(int64_t{});
    case Dtype::UInt8:
      return f(uint8_t{});
    case Dtype::UInt16:
      return f(uint16_t{});
    case Dtype::UInt32:
      return f(uint32_t{});
    case Dtype::UInt64:
      return f(uint64_t{});
    case Dtype::Float16:
      return f(Half{});
    case Dtype::BFloat16:
      return f(BFloat{});
    case Dtype::Float32:
      return f(float{});
    case Dtype::Float64:
      return f(double{});
    case Dtype::Complex64:
      return f(Complex{});
  }
}

// |src| (row-contiguous, host memory) converted into |dst| of the same size.
void cast_on_host(const Array& src, const Array& dst, std::string_view where) {
  with_element_type(src.dtype(), [&](auto from) {
    with_element_type(dst.dtype(), [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      if constexpr (converts<From, To>) {
        convert_elements(static_cast<const From*>(src.data()), static_cast<To*>(dst.data()),
                         src.size(), dst.dtype(), where);
      } else {
        throw InternalError("cast: complex64 to a real type reached the element loop");
      }
    });
  });
}

}  // namespace

Array cast(const Array& array, Dtype dtype, std::string_view where) {
  if (!array.valid()) {
    throw ValueError(std::string(where) + ": the array is empty (a default or moved-from Array)");
  }
  if (array.dtype() == dtype) return array;
  if (array.dtype() == Dtype::Complex64 && dtype != Dtype::Bool) {
    throw ValueError(std::string(where) + ": complex64 converts only to complex64 or bool; " +
                     std::string(dtype_name(dtype)) + " would discard the imaginary part");
  }
  const Device host = Device::cpu();
  const Array src = to_contiguous(array, host);
  Shape shape(array.shape().begin(), array.shape().end());
  Array out = make_array(shape, dtype, host);
  cast_on_host(src, out, where);
  return array.device() == host ? out : to_contiguous(out, array.device());
}

}  // namespace kjit
