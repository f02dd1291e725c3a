// Conversions between Python objects (NumPy, DLPack producers, scalars, dtype objects) and kjit's
// C++ types. Errors name the parameter they are about.
#pragma once

#include <kjit/kjit.h>
#include <nanobind/nanobind.h>

#include <string>

namespace kjit::python {

namespace nb = nanobind;

/// The array library an object belongs to; outputs are returned in the inputs' library.
enum class Framework { None, Kjit, Numpy, Torch, Cupy, Jax, Other };

Framework framework_of(nb::handle obj);

/// A dtype from a kjit.Dtype, a string, a NumPy dtype or type, or a torch dtype.
Dtype to_dtype(nb::handle obj, const std::string& param);

/// True for Python bool, int and float objects (kernel scalars).
bool is_python_scalar(nb::handle obj);

/// A kernel input (or, when |writable|, an output) from a Python scalar, a kjit.Array or any
/// DLPack/buffer-protocol array. The result borrows the object's memory; |keep_alive| makes the
/// Array own a reference to it.
Array to_array(nb::handle obj, const std::string& param, bool keep_alive, bool writable = false);

/// An Array as an object of |framework| (zero-copy); kjit.Array for None/Kjit/Other.
nb::object from_array(const Array& array, Framework framework);

/// An object exporting |array| through __dlpack__ / __dlpack_device__ (zero-copy).
nb::object dlpack_view(const Array& array);

/// A Python int or an object with __index__ (not a bool).
int64_t to_int(nb::handle obj, const std::string& param);

/// True for list and tuple objects: the only containers taken for inputs= and outputs=.
bool is_list(nb::handle obj);

/// A sequence of exactly three non-negative ints.
Dim3 to_dim3(nb::handle obj, const std::string& param);

/// A shape: a sequence of non-negative ints.
Shape to_shape(nb::handle obj, const std::string& param);

}  // namespace kjit::python
