#include "convert.h"

#include <nanobind/stl/string.h>

#include <mutex>
#include <unordered_map>

namespace kjit::python {

std::string str_of(nb::handle obj) {
  nb::object s = nb::steal(PyObject_Str(obj.ptr()));
  if (!s.is_valid()) throw nb::python_error();
  return nb::cast<std::string>(s);
}

std::string error_text(nb::python_error& e) {
  return nb::cast<std::string>(nb::handle(e.type()).attr("__name__")) + ": " +
         str_of(e.value()).substr(0, 200);
}

void throw_reading_error(const Param& param, const char* what) {
  nb::python_error e;
  if (!e.matches(PyExc_Exception)) throw e;
  throw TypeError(param.str() + ": reading " + what + " raised " + error_text(e));
}

namespace {

std::string qualified_type_name(nb::handle obj) {
  return nb::borrow<nb::str>(nb::type_name(obj.type())).c_str();
}

}  // namespace

std::string describe(nb::handle obj) {
  return std::string("'").append(qualified_type_name(obj)).append("'");
}

// Python objects released from C++ (e.g. the last reference to an input's owner) need the GIL.
std::shared_ptr<void> python_owner(nb::object obj) {
  return std::shared_ptr<void>(obj.release().ptr(), [](void* p) {
#if PY_VERSION_HEX >= 0x030D0000
    const bool finalizing = Py_IsFinalizing();
#else
    const bool finalizing = _Py_IsFinalizing();
#endif
    if (!Py_IsInitialized() || finalizing) return;  // the interpreter frees it
    nb::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
}

nb::object attr_or_invalid(const char* module, const char* name) {
  nb::object m = nb::module_::import_(module);
  return nb::hasattr(m, name) ? m.attr(name) : nb::object();
}

bool is_python_scalar(nb::handle obj) {
  return PyBool_Check(obj.ptr()) || PyLong_CheckExact(obj.ptr()) || PyFloat_CheckExact(obj.ptr());
}

namespace {

// Dtype objects of other libraries are long-lived singletons: what each one means is remembered.
struct KnownDtypes {
  std::mutex mutex;
  std::unordered_map<PyObject*, Dtype> map;
};

KnownDtypes& known_dtypes() {
  static KnownDtypes known;
  return known;
}

}  // namespace

bool is_immutable(nb::handle obj) {
  PyObject* o = obj.ptr();
  if (PyLong_CheckExact(o) || PyBool_Check(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o)) {
    return true;
  }
  if (PyTuple_CheckExact(o)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); ++i) {
      if (!is_immutable(PyTuple_GET_ITEM(o, i))) return false;
    }
    return true;
  }
  if (nb::isinstance<Dtype>(obj)) return true;
  KnownDtypes& known = known_dtypes();
  std::lock_guard lock(known.mutex);
  return known.map.count(o) != 0;
}

Dtype to_dtype(nb::handle obj, const Param& param) {
  if (nb::isinstance<Dtype>(obj)) return nb::cast<Dtype>(obj);
  KnownDtypes& known = known_dtypes();
  {
    std::lock_guard lock(known.mutex);
    auto it = known.map.find(obj.ptr());
    if (it != known.map.end()) return it->second;
  }
  std::string name;
  if (nb::isinstance<nb::str>(obj)) {
    name = utf8_of(obj, param);
  } else if (nb::hasattr(obj, "itemsize") && nb::hasattr(obj, "name") &&
             nb::isinstance<nb::str>(obj.attr("name"))) {
    name = nb::cast<std::string>(obj.attr("name"));  // a NumPy dtype
  } else if (std::string text = str_of(obj); text.rfind("torch.", 0) == 0) {
    name = text;  // a torch.dtype prints as "torch.float32"
  } else if (text.rfind("mlx.core.", 0) == 0 && describe(obj) == "'mlx.core.Dtype'") {
    name = text.substr(9);  // an MLX dtype prints as "mlx.core.float32"
  } else if (PyType_Check(obj.ptr())) {
    try {
      nb::object np_dtype = nb::module_::import_("numpy").attr("dtype")(obj);
      name = nb::cast<std::string>(np_dtype.attr("name"));
    } catch (const nb::python_error&) {
      throw TypeError(param.str() + ": " + describe(obj) + " is not a dtype");
    }
  } else if (describe(obj) == "'mlx.core.DtypeCategory'") {
    // It prints as "DtypeCategory.floating".
    throw TypeError(param.str() + ": mx." + text.substr(text.find('.') + 1) +
                    " is a category of MLX dtypes, not a dtype; name one, such as mx.float32");
  } else {
    throw TypeError(param.str() +
                    ": expected a dtype (kjit.float32, a NumPy or torch dtype, or a "
                    "name such as 'float32'), got " +
                    describe(obj));
  }
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  Dtype d;
  try {
    d = dtype_from_name(name, "");
  } catch (const TypeError& e) {
    throw TypeError(param.str() + e.what());
  }
  // Remembered by address, so kept alive; a program that makes new dtype objects all the time
  // (unpickled arrays bring their own) would fill the map, which stops growing at a bound.
  constexpr size_t kMaxKnownDtypes = 256;
  if (!nb::isinstance<nb::str>(obj)) {
    std::lock_guard lock(known.mutex);
    if (known.map.size() < kMaxKnownDtypes && known.map.emplace(obj.ptr(), d).second) {
      Py_INCREF(obj.ptr());
    }
  }
  return d;
}

std::string utf8_of(nb::handle obj, const Param& param) {
  Py_ssize_t length = 0;
  const char* chars = PyUnicode_AsUTF8AndSize(obj.ptr(), &length);
  if (!chars) {
    PyErr_Clear();
    throw ValueError(param.str() + ": the text is not valid Unicode (it holds a lone surrogate)");
  }
  return std::string(chars, static_cast<size_t>(length));
}

int64_t to_int(nb::handle obj, const Param& param) {
  // Python ints and anything with __index__ (NumPy integers), but not bools.
  if (PyBool_Check(obj.ptr()) || PyFloat_Check(obj.ptr())) {
    throw TypeError(param.str() + ": expected an int, got " + describe(obj));
  }
  nb::object index = nb::steal(PyNumber_Index(obj.ptr()));
  if (!index.is_valid()) {
    // An object with no __index__, or one whose __index__ fails.
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw_reading_error(param, "its __index__");
    PyErr_Clear();
    throw TypeError(param.str() + ": expected an int, got " + describe(obj));
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow) throw ValueError(param.str() + ": " + str_of(obj) + " is out of range");
  return v;
}

bool is_list(nb::handle obj) { return PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()); }

HeldItems::HeldItems(nb::handle list)
    : HeldItems(PySequence_Fast_ITEMS(list.ptr()),
                static_cast<size_t>(PySequence_Fast_GET_SIZE(list.ptr()))) {}

HeldItems::HeldItems(PyObject* const* items, size_t n) { hold_all(items, n); }

HeldItems::HeldItems(nb::handle sequence, const Param& param, size_t limit) {
  PyObject* o = sequence.ptr();
  if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {  // copied as they are: no Python code runs
    hold_all(PySequence_Fast_ITEMS(o), static_cast<size_t>(PySequence_Fast_GET_SIZE(o)));
    return;
  }
  // Anything else may raise, or say it has more items than it has.
  const Py_ssize_t n = PySequence_Size(o);
  if (n < 0) throw_reading_error(param, "its length");
  length_ = static_cast<size_t>(n);
  if (length_ > limit) return;
  reserve(length_);
  for (size_t i = 0; i < length_; ++i) {
    PyObject* item = PySequence_GetItem(o, static_cast<Py_ssize_t>(i));
    if (!item) {
      nb::python_error error;  // taken before the items go: releasing them may run Python code
      release();               // a constructor that throws has no destructor run
      error.restore();
      throw_reading_error(param, "the sequence");
    }
    hold(item);
  }
}

HeldItems::~HeldItems() { release(); }

void HeldItems::release() {
  for (size_t i = 0; i < size_; ++i) Py_DECREF(items_[i]);
  size_ = 0;
}

void HeldItems::reserve(size_t n) {
  if (n > kInPlace) {
    on_heap_.resize(n);
    items_ = on_heap_.data();
  }
}

void HeldItems::hold_all(PyObject* const* items, size_t n) {
  reserve(n);
  for (size_t i = 0; i < n; ++i) hold(Py_NewRef(items[i]));
  length_ = n;
}

nb::list HeldItems::list() const { return list_of(items_, size_); }

nb::list list_of(PyObject* const* items, size_t n) {
  nb::list out = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(n)));
  if (!out.is_valid()) throw nb::python_error();
  for (size_t i = 0; i < n; ++i) {
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), Py_NewRef(items[i]));
  }
  return out;
}

uintptr_t to_handle(nb::handle value, const Param& param) {
  const unsigned long long handle = PyLong_AsUnsignedLongLong(value.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw ValueError(param.str() + ": " + nb::cast<std::string>(nb::repr(value)).substr(0, 40) +
                     " is not a stream handle (an int in [0, 2^64))");
  }
  return static_cast<uintptr_t>(handle);
}

uintptr_t to_stream(nb::handle obj, const Param& param) {
  if (obj.is_none()) return 0;
  if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) return to_handle(obj, param);
  nb::object handle = nb::borrow(obj);
  try {
    if (nb::hasattr(obj, "__cuda_stream__")) {
      nb::object pair = obj.attr("__cuda_stream__")();
      if (!is_list(pair) || nb::len(pair) != 2) {
        throw TypeError(param.str() + ": __cuda_stream__() must return (version, handle)");
      }
      handle = pair[1];
    } else if (nb::hasattr(obj, "cuda_stream")) {
      handle = obj.attr("cuda_stream");
    } else if (nb::hasattr(obj, "ptr")) {
      handle = obj.attr("ptr");
    }
  } catch (nb::python_error& e) {
    // The stream object's own error, said of the parameter.
    throw TypeError(param.str() + ": reading the stream's handle raised " + error_text(e));
  }
  if (PyBool_Check(handle.ptr()) || !PyLong_Check(handle.ptr())) {
    throw TypeError(param.str() +
                    ": expected a CUDA stream (an int handle, or an object with "
                    "__cuda_stream__, .cuda_stream or .ptr), got " +
                    nb::cast<std::string>(obj.type().attr("__name__")));
  }
  return to_handle(handle, param);
}

namespace {

// A TypeError unless |obj| is a sequence other than a str, as size arguments are.
void check_sequence(nb::handle obj, const Param& param, const char* expected) {
  if (!nb::isinstance<nb::sequence>(obj) || nb::isinstance<nb::str>(obj)) {
    throw TypeError(param.str() + ": expected " + expected + ", got " + describe(obj));
  }
}

}  // namespace

Dim3 to_dim3(nb::handle obj, const Param& param) {
  check_sequence(obj, param, "a tuple of 3 ints");
  const HeldItems items(obj, param, 3);
  if (items.length() != 3) {
    throw ValueError(param.str() + ": expected 3 sizes (x, y, z), got " +
                     std::to_string(items.length()));
  }
  int64_t v[3];
  for (size_t i = 0; i < 3; ++i) v[i] = to_int(items[i], param);
  return Dim3{v[0], v[1], v[2]};
}

Shape to_shape(nb::handle obj, const Param& param) {
  check_sequence(obj, param, "a sequence of ints");
  const HeldItems items(obj, param, kMaxNdim);
  if (items.length() > static_cast<size_t>(kMaxNdim)) {
    throw ValueError(param.str() + " has " + std::to_string(items.length()) +
                     " dimensions; at most 10 are supported");
  }
  Shape shape;
  shape.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    int64_t d = to_int(items[i], param);
    if (d < 0)
      throw ValueError(param.str() + ": dimensions must be >= 0, got " + std::to_string(d));
    shape.push_back(d);
  }
  return shape;
}

}  // namespace kjit::python