// Copies between arrays of the same shape and dtype with any strides (on the CPU).
#pragma once

#include <kjit/array.h>

namespace kjit {

void strided_copy(const Array& src, const Array& dst);

}  // namespace kjit
