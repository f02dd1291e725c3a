// Memory operations on any device, for arrays and kernel launches: allocation, fills, copies
// between devices, and row-contiguous copies of strided views.
#pragma once

#include <kjit/array.h>

#include <cstdint>
#include <memory>
#include <string>

namespace kjit {

/// Memory for |bytes| on |device| (on CUDA, ordered on |stream|); OutOfMemory when there is
/// none.
std::shared_ptr<void> allocate(const Device& device, size_t bytes, uintptr_t stream = 0);

/// A fresh row-contiguous array on |device|.
Array make_array(const Shape& shape, Dtype dtype, const Device& device, uintptr_t stream = 0);

/// Whether |value| is in |dtype|'s range: for the integer types, not NaN, not infinite, and
/// with a whole part they can hold. Values convert as NumPy's astype converts them: rounded for
/// the floating types, truncated toward zero for the integer types, nonzero as true.
bool in_range(Dtype dtype, double value);
/// The message for a |value| out of |dtype|'s range ("300 is out of the range of int8").
std::string out_of_range(Dtype dtype, double value);

/// Sets every element of the row-contiguous |array| to |value|, which must be in its range.
void fill(const Array& array, double value, uintptr_t stream = 0);

/// A row-contiguous copy of |array| on |device| (the array itself when it already is one).
Array to_contiguous(const Array& array, const Device& device, uintptr_t stream = 0);

/// Copies the row-contiguous |src| into the row-contiguous |dst| of the same size, on any
/// devices; returns when |dst| holds the data if it is host memory.
void copy_into(const Array& dst, const Array& src, uintptr_t stream = 0);

}  // namespace kjit
