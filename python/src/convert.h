// Conversions between Python objects (scalars, dtype objects, shapes, streams, lists) and kjit's
// C++ types; arrays are read and made by their library's adapter (frameworks/). Errors name the
// parameter they are about.
#pragma once

#include <kjit/kjit.h>
#include <nanobind/nanobind.h>

#include <memory>
#include <string>
#include <vector>

#include "param.h"

namespace kjit::python {

namespace nb = nanobind;

/// |module|.|name| (e.g. torch._C's _from_dlpack), or an invalid object when the module lacks
/// it. Hot paths keep the result in a never-destroyed static: Python is gone by the time static
/// objects are destroyed.
nb::object attr_or_invalid(const char* module, const char* name);

/// |obj| as the owner of memory an Array borrows: released with the GIL taken, and left to the
/// interpreter when it is shutting down.
std::shared_ptr<void> python_owner(nb::object obj);

/// A dtype from a kjit.Dtype, a string, a NumPy dtype or type, a torch dtype or an MLX dtype.
Dtype to_dtype(nb::handle obj, const Param& param);

/// True when |obj| cannot change its value: an exact int, bool, float or str, a dtype object
/// to_dtype has seen (those are singletons), or a tuple of such.
bool is_immutable(nb::handle obj);

/// True for Python bool, int and float objects (kernel scalars).
bool is_python_scalar(nb::handle obj);

/// A Python int or an object with __index__ (not a bool).
int64_t to_int(nb::handle obj, const Param& param);

/// A stream handle given as an int: an address, so in [0, 2^64).
uintptr_t to_handle(nb::handle value, const Param& param);
/// A CUDA stream: None (the default), a raw handle (int), or an object exposing one through
/// __cuda_stream__ (returns (version, handle)), .cuda_stream (PyTorch) or .ptr (CuPy).
uintptr_t to_stream(nb::handle obj, const Param& param);

/// The Python error being raised while |what| was read for |param| (user code: an __index__, a
/// __len__, a __getitem__), as a TypeError naming both; an error that is not an Exception (a
/// KeyboardInterrupt) goes on as it is.
[[noreturn]] void throw_reading_error(const Param& param, const char* what);

/// str(obj), as Python spells it.
std::string str_of(nb::handle obj);
/// The quoted name of |obj|'s type, as errors say what they got: "'numpy.ndarray'".
std::string describe(nb::handle obj);
/// A Python error as Python prints its last line ("ValueError: what went wrong").
std::string error_text(nb::python_error& e);

/// The UTF-8 text of the str |obj|; a ValueError naming |param| for one that has none (a lone
/// surrogate).
std::string utf8_of(nb::handle obj, const Param& param);

/// True for list and tuple objects: the only containers taken for inputs= and outputs=.
bool is_list(nb::handle obj);

/// The items of a list or tuple, each held while this lives: converting an item may run Python
/// code that changes the list, and a call uses its arrays while other threads run. A few are
/// held in place, as a call's arguments are.
class HeldItems {
 public:
  explicit HeldItems(nb::handle list);
  HeldItems(PyObject* const* items, size_t n);
  /// The items of any sequence but a str (a list, a tuple, a range, a NumPy array...) of at
  /// most |limit| items, for |param|; none for a longer one. A list subclass or another
  /// sequence is read through its own __len__ and __getitem__, whose errors name |param|.
  HeldItems(nb::handle sequence, const Param& param, size_t limit);
  ~HeldItems();
  HeldItems(const HeldItems&) = delete;
  HeldItems& operator=(const HeldItems&) = delete;

  size_t size() const { return size_; }
  nb::handle operator[](size_t i) const { return items_[i]; }
  /// How many items the sequence has, held or not.
  size_t length() const { return length_; }
  /// A new list of the items.
  nb::list list() const;

 private:
  void reserve(size_t n);
  void hold_all(PyObject* const* items, size_t n);
  void hold(PyObject* item) { items_[size_++] = item; }  // takes the reference
  void release();

  static constexpr size_t kInPlace = 8;
  PyObject* in_place_[kInPlace];
  std::vector<PyObject*> on_heap_;
  PyObject** items_ = in_place_;
  size_t size_ = 0;
  size_t length_ = 0;
};

/// A new list of |n| items.
nb::list list_of(PyObject* const* items, size_t n);

/// A sequence of exactly three non-negative ints.
Dim3 to_dim3(nb::handle obj, const Param& param);

/// A shape: a sequence of non-negative ints.
Shape to_shape(nb::handle obj, const Param& param);

}  // namespace kjit::python
