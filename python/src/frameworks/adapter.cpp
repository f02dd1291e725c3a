#include "adapter.h"

#include <nanobind/stl/string.h>

#include <string>
#include <unordered_map>

#include "adapters.h"

namespace kjit::python {

namespace {

// Asked in this order; the DLPack adapter, last, claims every object (another library's, or
// none's).
const FrameworkAdapter* const kAdapters[] = {&kKjitAdapter,  &kNumpyAdapter, &kTorchAdapter,
                                             &kCupyAdapter,  &kJaxAdapter,   &kMlxAdapter,
                                             &kDlpackAdapter};

}  // namespace

const FrameworkAdapter& framework_of(nb::handle obj) {
  // Called with the GIL held, which guards the map; a call's arrays are mostly of the type the
  // last one had.
  static PyTypeObject* last_type = nullptr;
  static const FrameworkAdapter* last = nullptr;
  static auto& known = *new std::unordered_map<PyTypeObject*, const FrameworkAdapter*>;
  PyTypeObject* type = Py_TYPE(obj.ptr());
  if (type == last_type) return *last;
  if (auto it = known.find(type); it != known.end()) {
    last_type = type;
    return *(last = it->second);
  }
  std::string module;
  if (nb::hasattr(obj.type(), "__module__")) {
    nb::object m = obj.type().attr("__module__");
    if (nb::isinstance<nb::str>(m)) module = nb::cast<std::string>(m);
  }
  const FrameworkAdapter* found = &kDlpackAdapter;
  for (const FrameworkAdapter* adapter : kAdapters) {
    if (adapter->claims(obj.type(), module)) {
      found = adapter;
      break;
    }
  }
  // Remembered by address, so kept alive.
  if (!found->remember_types) return *found;
  if (known.emplace(type, found).second) Py_INCREF(type);
  last_type = type;
  return *(last = found);
}

const FrameworkAdapter& no_framework() { return kKjitAdapter; }

Array to_array(nb::handle obj, const ReadRequest& request) {
  const Param& param = request.param;
  if (is_python_scalar(obj) && request.writable) {
    throw TypeError(param.str() + ": a Python scalar cannot be an output; pass an array");
  }
  if (PyBool_Check(obj.ptr())) return Array::scalar(obj.ptr() == Py_True, Dtype::Bool);
  if (PyLong_CheckExact(obj.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow)
      throw ValueError(param.str() + ": the integer does not fit in a signed 64-bit int");
    bool fits32 = v >= INT32_MIN && v <= INT32_MAX;
    Array a = Array::empty({}, fits32 ? Dtype::Int32 : Dtype::Int64);
    if (fits32) {
      *static_cast<int32_t*>(a.data()) = static_cast<int32_t>(v);
    } else {
      *static_cast<int64_t*>(a.data()) = v;
    }
    return a;
  }
  if (PyFloat_CheckExact(obj.ptr())) {
    return Array::scalar(PyFloat_AS_DOUBLE(obj.ptr()), Dtype::Float32);
  }
  return framework_of(obj).to_array(obj, request);
}

std::optional<Device> device_of_stream(nb::handle stream, const Param& param) {
  if (PyLong_Check(stream.ptr())) return std::nullopt;  // a handle
  const FrameworkAdapter& library = framework_of(stream);
  if (!library.device_of_stream) return std::nullopt;
  return library.device_of_stream(stream, param);
}

const FrameworkAdapter& outputs_framework(const HeldItems& inputs) {
  const FrameworkAdapter* of_scalar = nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    nb::handle item = inputs[i];
    if (is_python_scalar(item)) continue;
    const FrameworkAdapter& library = framework_of(item);
    if (library.is_scalar && library.is_scalar(item)) {
      if (!of_scalar) of_scalar = &library;
      continue;
    }
    return library;
  }
  return of_scalar ? *of_scalar : no_framework();
}

nb::list list_of(const std::vector<Array>& arrays, const FrameworkAdapter& library) {
  nb::list out = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(arrays.size())));
  if (!out.is_valid()) throw nb::python_error();
  for (size_t i = 0; i < arrays.size(); ++i) {
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i),
                    library.from_array(arrays[i]).release().ptr());
  }
  return out;
}

}  // namespace kjit::python
