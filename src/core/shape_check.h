// The checks every shape a caller gives goes through: no negative dimension, and a number of
// elements that fits comfortably in 64-bit byte offsets.
#pragma once

#include <kjit/array.h>
#include <kjit/errors.h>

#include <cstdint>
#include <span>
#include <string>

namespace kjit {

/// Throws kjit::ValueError, prefixed by what(), for a negative dimension or nonzero dimensions
/// whose product is more than 2^56 (an empty array of such dimensions could not be made by
/// NumPy either). |what| makes the text only on failure: calls that go well build no strings.
template <class What>
void check_dimensions(std::span<const int64_t> shape, What&& what) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0) throw ValueError(what() + ": dimensions must be >= 0, got " + std::to_string(d));
    if (d == 0) continue;
    if (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 56)) {
      throw ValueError(what() + ": too many elements (more than 2^56)");
    }
  }
}

/// check_dimensions, after checking that the shape has at most kMaxNdim dimensions.
inline void check_shape(std::span<const int64_t> shape, const char* what) {
  if (shape.size() > static_cast<size_t>(kMaxNdim)) {
    throw ValueError(std::string(what) + ": " + std::to_string(shape.size()) +
                     " dimensions; at most " + std::to_string(kMaxNdim) + " are supported");
  }
  check_dimensions(shape, [what] { return std::string(what); });
}

}  // namespace kjit
