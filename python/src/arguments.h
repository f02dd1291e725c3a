// The arguments of the functions whose calls kjit decodes itself (the kernel factories, a
// kernel's __call__, build and bind): each function's arguments are stated once, as a table of
// names, types and defaults, from which both its calls are decoded and the signature that
// help() and the type stubs show is written.
#pragma once

#include <kjit/kjit.h>
#include <nanobind/nanobind.h>

#include <algorithm>
#include <array>
#include <span>
#include <string>

namespace kjit::python {

namespace nb = nanobind;

/// An argument of a function: its name, its type as the stubs write it, and its default (null:
/// required), which the signature writes as Python's repr() does, or as |shown_default| says
/// (a kjit object the stubs name without its module: "float32").
struct Argument {
  const char* name;
  const char* type;
  PyObject* default_value = nullptr;
  const char* shown_default = nullptr;
};

/// A default str, kept for the process.
PyObject* text(const char* value);

/// The signature of |qualname| ("metal_kernel"; "Kernel.bind", a method) with |arguments|, the
/// first |positional| of them also given by position, returning |returns|: as nanobind's
/// nb::sig takes it ("def bind(self, *, output_shapes: ...) -> BoundKernel").
std::string python_signature(const char* qualname, std::span<const Argument> arguments,
                             size_t positional, const char* returns);

/// The stubs' overloads of a function whose results are arrays of the library of its first
/// array input (kjit.Array when every input is a Python number), |arrays| being the argument
/// that holds the inputs: numbers alone (or none) give a list of kjit.Array; NumPy arrays a
/// list of NumPy arrays of any shape and dtype (theirs need not be the inputs'); arrays of
/// another library a list of that library's arrays; anything else (arrays with numbers, or of
/// several libraries, which a type checker cannot follow, or outputs given, which the call
/// returns) a list of any type. The last is the function's signature as python_signature writes
/// it. NumPy's float64 scalars are floats to a type checker: alone, they are typed as giving
/// kjit.Array, where the call returns NumPy arrays.
std::array<std::string, 4> result_typed_signatures(const char* qualname,
                                                   std::span<const Argument> arguments,
                                                   size_t positional, size_t arrays);

/// The array types of the stubs' overloads (kjit/_array_types.py), and results of them.
inline constexpr char kArrayType[] = "kjit._array_types.ArrayT";
inline constexpr char kArrayResults[] = "list[kjit._array_types.ArrayT]";
inline constexpr char kNumPyArray[] = "numpy.typing.NDArray[typing.Any]";
inline constexpr char kNumPyResults[] = "list[numpy.typing.NDArray[typing.Any]]";
inline constexpr char kNewArrayResults[] = "list[Array]";
inline constexpr char kAnyResults[] = "list[typing.Any]";

/// The arguments of a function, in its order (the required ones first), the first |positional|
/// of them also given by position (none: keywords only, when |keywords_only| says what to pass
/// instead). Arguments are placed into one slot each, a default where none is given, with errors
/// that name the function and the argument.
template <size_t N>
class ArgumentSignature {
 public:
  using Slots = std::array<PyObject*, N>;
  ArgumentSignature(const char* qualname, const std::array<Argument, N>& arguments,
                    size_t positional, const char* returns, const char* keywords_only = "")
      : function_(std::string("kjit.") + qualname + "()"),
        signature_(python_signature(qualname, arguments, positional, returns)),
        positional_(positional),
        keywords_only_(keywords_only) {
    for (size_t i = 0; i < N; ++i) {
      names_[i] = PyUnicode_InternFromString(arguments[i].name);
      defaults_[i] = arguments[i].default_value;
    }
  }

  /// The signature, for nb::sig.
  const char* python() const { return signature_.c_str(); }

  /// From a vectorcall: |values| then |kwnames|, whose first |positional| have no name.
  Slots place(PyObject* const* values, size_t positional, PyObject* kwnames) const {
    Slots slots = by_position(values, positional);
    const Py_ssize_t n = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < n; ++k) {
      by_name(slots, PyTuple_GET_ITEM(kwnames, k), values[positional + static_cast<size_t>(k)]);
    }
    fill_defaults(slots);
    return slots;
  }
  /// From nanobind's *args and **kwargs.
  Slots place(nb::args args, nb::kwargs kwargs) const {
    Slots slots = by_position(PySequence_Fast_ITEMS(args.ptr()), nb::len(args));
    for (auto [key, value] : kwargs) by_name(slots, key.ptr(), value.ptr());
    fill_defaults(slots);
    return slots;
  }

 private:
  Slots by_position(PyObject* const* values, size_t n) const {
    if (n > positional_) {
      throw TypeError(function_ +
                      (positional_ == 0
                           ? std::string(" ") + keywords_only_
                           : " takes at most " + std::to_string(positional_) +
                                 " positional arguments (" + std::to_string(n) + " given)"));
    }
    Slots slots{};
    std::copy_n(values, n, slots.begin());
    return slots;
  }
  void by_name(Slots& slots, PyObject* key, PyObject* value) const {
    size_t slot = 0;
    while (slot < N && key != names_[slot]) ++slot;  // keywords in code are interned
    if (slot == N) {
      slot = 0;
      while (slot < N && PyUnicode_Compare(key, names_[slot]) != 0) ++slot;
    }
    if (slot == N) {
      PyErr_Clear();  // a key with no UTF-8 form compares as unequal, with an error set
      // repr writes such a key with escapes.
      throw TypeError(function_ + " got an unexpected keyword argument " +
                      nb::cast<std::string>(nb::repr(key)));
    }
    if (slots[slot]) {
      throw TypeError(function_ + " got multiple values for argument '" +
                      PyUnicode_AsUTF8(names_[slot]) + "'");
    }
    slots[slot] = value;
  }
  void fill_defaults(Slots& slots) const {
    for (size_t i = 0; i < N; ++i) {
      if (slots[i]) continue;
      if (!defaults_[i]) {
        throw TypeError(function_ +
                        (positional_ == 0 ? " missing keyword argument '" : " missing argument '") +
                        PyUnicode_AsUTF8(names_[i]) + "'");
      }
      slots[i] = defaults_[i];
    }
  }

  std::string function_;               // "kjit.Kernel.bind()", as errors name it
  std::string signature_;              // as nb::sig takes it
  std::array<PyObject*, N> names_;     // interned, kept for the process
  std::array<PyObject*, N> defaults_;  // borrowed from objects kept for the process
  size_t positional_;
  const char* keywords_only_;
};

}  // namespace kjit::python
