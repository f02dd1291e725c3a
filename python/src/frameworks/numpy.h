// NumPy arrays, including ml_dtypes' bfloat16, which NumPy has no type of its own for.
#pragma once

#include <kjit/kjit.h>
#include <nanobind/nanobind.h>

namespace kjit::python {

/// |array| as a NumPy array: a view of host memory, a copy of device memory.
nanobind::object to_numpy(const Array& array);

}  // namespace kjit::python
