// Conversions remembered from one call of a kernel to the next. Code that calls a kernel in a loop
// passes the same output_shapes, output_dtypes, grid, threadgroup and template objects each time;
// their C++ form is kept with the objects it came from, and reused while those objects are the
// very same and hold the very same items.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <vector>

#include "convert.h"

namespace kjit::python {

/// One argument's converted value and the object it was converted from. The memo holds
/// references to the object and its items, so an identical pointer is the same live object, and
/// a list whose items were replaced since is converted again. Used with the GIL held; the value
/// is shared, so that a call keeps it while it runs without the GIL and another thread's call
/// converts something else.
template <class T>
class Memo {
 public:
  template <class Convert>
  std::shared_ptr<const T> get(nb::handle obj, Convert&& convert) {
    if (!value_ || !unchanged(obj)) {
      value_ = std::make_shared<const T>(convert(obj));
      remember(obj);
    }
    return value_;
  }

 private:
  bool unchanged(nb::handle obj) const {
    if (!source_.is_valid() || obj.ptr() != source_.ptr()) return false;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj.ptr());
    if (n != static_cast<Py_ssize_t>(items_.size())) return false;
    PyObject** items = PySequence_Fast_ITEMS(obj.ptr());
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (items[i] != items_[static_cast<size_t>(i)].ptr()) return false;
    }
    return true;
  }

  void remember(nb::handle obj) {
    source_.reset();
    items_.clear();
    if (!is_list(obj)) return;  // only lists and tuples are remembered
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj.ptr());
    PyObject** items = PySequence_Fast_ITEMS(obj.ptr());
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!is_immutable(items[i])) {
        items_.clear();
        return;
      }
      items_.push_back(nb::borrow(items[i]));
    }
    source_ = nb::borrow(obj);
  }

  nb::object source_;
  std::vector<nb::object> items_;
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
