// Conversions remembered from one call of a kernel to the next. Code that calls a kernel in a loop
// passes equal output_shapes, output_dtypes, grid, threadgroup and template arguments each time,
// often as new lists and tuples of the same constants (`output_shapes=[(n,)]`); their C++ form
// is kept with a description of what it came from, and reused while the new argument matches it.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <vector>

#include "convert.h"

namespace kjit::python {

/// One argument's converted value and the structure it was converted from: its lists and tuples
/// with their lengths, and the immutable objects in them (ints, strs, dtypes...), which the memo
/// keeps alive. An argument matches when it has the same structure and each leaf is the same
/// object or an equal int or str. Anything holding a mutable leaf is converted every time. Used
/// with the GIL held; the value is shared, so that a call keeps it while it runs without the GIL
/// and another thread's call converts something else.
template <class T>
class Memo {
 public:
  template <class Convert>
  std::shared_ptr<const T> get(nb::handle obj, Convert&& convert) {
    size_t pos = 0;
    if (entries_.empty() || !matches(obj.ptr(), pos, 0) || pos != entries_.size()) {
      // Described before it is converted: when it is remembered, its leaves are immutable
      // objects, whose conversion runs no Python code that could change the containers. The
      // conversion may run Python code (a leaf's __index__) that calls this kernel again, so
      // the memo takes the description and the value together, after it.
      std::vector<Entry> entries;
      if (!describe(obj.ptr(), 0, entries)) entries.clear();  // not to be remembered
      auto value = std::make_shared<const T>(convert(obj));
      entries_ = std::move(entries);
      value_ = std::move(value);
    }
    return value_;
  }

 private:
  // A container (leaf invalid, its length) or a leaf.
  struct Entry {
    nb::object leaf;
    Py_ssize_t length = 0;
  };
  // Arguments nest two deep (a list of shape tuples, of (name, value) pairs); three is ample.
  static constexpr int kMaxDepth = 3;

  static bool same_leaf(PyObject* a, PyObject* b) {
    if (a == b) return true;
    if (Py_TYPE(a) != Py_TYPE(b)) return false;
    if (PyLong_CheckExact(a)) return PyObject_RichCompareBool(a, b, Py_EQ) == 1;
    if (PyUnicode_CheckExact(a)) return PyUnicode_Compare(a, b) == 0;
    return false;
  }

  bool matches(PyObject* o, size_t& pos, int depth) const {
    if (pos >= entries_.size()) return false;
    const Entry& e = entries_[pos++];
    if (e.leaf.is_valid()) return same_leaf(e.leaf.ptr(), o);
    if (!is_plain_list(o) || PySequence_Fast_GET_SIZE(o) != e.length) return false;
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0; i < e.length; ++i) {
      if (!matches(items[i], pos, depth + 1)) return false;
    }
    return true;
  }

  // Lists and tuples themselves: a subclass may convert through methods of its own.
  static bool is_plain_list(PyObject* o) { return PyList_CheckExact(o) || PyTuple_CheckExact(o); }

  static bool describe(PyObject* o, int depth, std::vector<Entry>& entries) {
    if (!is_plain_list(o)) {
      if (!is_immutable(o)) return false;
      entries.push_back({nb::borrow(o), 0});
      return true;
    }
    if (depth == kMaxDepth) return false;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    entries.push_back({nb::object(), n});
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!describe(items[i], depth + 1, entries)) return false;
    }
    return true;
  }

  std::vector<Entry> entries_;  // empty: nothing remembered
  std::shared_ptr<const T> value_;
};

/// The remembered arguments of one kernel's calls.
struct CallMemo {
  Memo<std::vector<Shape>> output_shapes;
  Memo<std::vector<Dtype>> output_dtypes;
  Memo<Dim3> grid, threadgroup;
  Memo<TemplateArgs> template_args;
};

}  // namespace kjit::python
