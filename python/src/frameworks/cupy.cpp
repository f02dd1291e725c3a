// CuPy arrays, read from and made with CuPy's own attributes and classes: its DLPack entry points
// cost several times more a call.
#include <nanobind/stl/string.h>

#include <string>
#include <vector>

#include "../convert.h"
#include "adapters.h"
#include "dlpack.h"

namespace kjit::python {
namespace {

bool claims(nb::handle, std::string_view module) { return module.starts_with("cupy"); }

// A tuple of ints into |out|; false for anything else.
bool read_ints(nb::handle tuple, std::vector<int64_t>& out) {
  if (!tuple.is_valid() || !PyTuple_Check(tuple.ptr()) ||
      PyTuple_GET_SIZE(tuple.ptr()) > kMaxNdim) {
    return false;
  }
  out.resize(static_cast<size_t>(PyTuple_GET_SIZE(tuple.ptr())));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple.ptr(), static_cast<Py_ssize_t>(i)));
    if (out[i] == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

// A CuPy array read from its attributes (data.ptr, data.device_id, shape, strides in bytes,
// dtype): its __dlpack__ costs ~5 us a call, these ~0.5 us. Nothing when they are not as
// expected, for the DLPack path to deal with.
std::optional<Array> from_cupy(nb::handle obj, const Param& param, std::shared_ptr<void> owner) {
  static PyObject* const kData = PyUnicode_InternFromString("data");
  static PyObject* const kPtr = PyUnicode_InternFromString("ptr");
  static PyObject* const kDeviceId = PyUnicode_InternFromString("device_id");
  static PyObject* const kShape = PyUnicode_InternFromString("shape");
  static PyObject* const kStrides = PyUnicode_InternFromString("strides");
  static PyObject* const kDtype = PyUnicode_InternFromString("dtype");
  const nb::object data = nb::getattr(obj, nb::handle(kData), nb::handle());
  if (!data.is_valid()) return std::nullopt;
  const nb::object ptr = nb::getattr(data, nb::handle(kPtr), nb::handle());
  const nb::object device = nb::getattr(data, nb::handle(kDeviceId), nb::handle());
  const nb::object dtype = nb::getattr(obj, nb::handle(kDtype), nb::handle());
  std::vector<int64_t> shape, strides;
  if (!ptr.is_valid() || !device.is_valid() || !dtype.is_valid() ||
      !read_ints(nb::getattr(obj, nb::handle(kShape), nb::handle()), shape) ||
      !read_ints(nb::getattr(obj, nb::handle(kStrides), nb::handle()), strides) ||
      shape.size() != strides.size()) {
    return std::nullopt;
  }
  const Dtype d = to_dtype(dtype, param);
  const int64_t size = static_cast<int64_t>(itemsize(d));
  for (int64_t& stride : strides) {
    if (stride % size != 0) return std::nullopt;
    stride /= size;
  }
  void* address = PyLong_AsVoidPtr(ptr.ptr());
  const long index = PyLong_AsLong(device.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  return Array::borrow(address, std::move(shape), std::move(strides), d,
                       Device::cuda(static_cast<int>(index)), std::move(owner));
}

Array read_array(nb::handle obj, const ReadRequest& request) {
  if (std::optional<Array> a = from_cupy(
          obj, request.param, request.keep_alive ? python_owner(nb::borrow(obj)) : nullptr)) {
    return *std::move(a);
  }
  if (std::optional<Array> a = import_array(obj, request)) return *std::move(a);
  throw_unreadable(obj, request.param);
}

// NumPy's dtype object for |d| (not bfloat16), made once per dtype.
nb::handle numpy_dtype(Dtype d) {
  static nb::object* made[kNumDtypes] = {};
  nb::object*& slot = made[static_cast<int>(d)];
  if (!slot) {
    const std::string_view name = dtype_name(d);
    slot = new nb::object(
        nb::module_::import_("numpy").attr("dtype")(nb::str(name.data(), name.size())));
  }
  return *slot;
}

// A CuPy array over |a|'s memory, made as CuPy makes one over memory it does not own (an
// UnownedMemory keeping a kjit.Array alive): ~3 us, where cupy.from_dlpack costs ~6 us.
// Nothing for a dtype CuPy lacks (bfloat16), for the DLPack path to report.
std::optional<nb::object> to_cupy(const Array& a) {
  if (a.dtype() == Dtype::BFloat16 || a.device().type != DeviceType::CUDA || a.size() == 0) {
    return std::nullopt;
  }
  static const nb::object& unowned =
      *new nb::object(attr_or_invalid("cupy.cuda.memory", "UnownedMemory"));
  static const nb::object& pointer =
      *new nb::object(attr_or_invalid("cupy.cuda.memory", "MemoryPointer"));
  static const nb::object& ndarray = *new nb::object(attr_or_invalid("cupy", "ndarray"));
  if (!unowned.is_valid() || !pointer.is_valid() || !ndarray.is_valid()) return std::nullopt;
  const size_t size = itemsize(a.dtype());
  nb::tuple shape = nb::steal<nb::tuple>(PyTuple_New(a.ndim()));
  nb::tuple strides = nb::steal<nb::tuple>(PyTuple_New(a.ndim()));
  size_t span = size;  // the bytes from the first element to the end of the last (not empty)
  for (int i = 0; i < a.ndim(); ++i) {
    PyTuple_SET_ITEM(shape.ptr(), i, PyLong_FromLongLong(a.shape(i)));
    PyTuple_SET_ITEM(strides.ptr(), i,
                     PyLong_FromLongLong(a.stride(i) * static_cast<int64_t>(size)));
    if (a.stride(i) > 0) span += static_cast<size_t>((a.shape(i) - 1) * a.stride(i)) * size;
  }
  nb::object memory =
      unowned(reinterpret_cast<uintptr_t>(a.data()), span, nb::cast(Array(a)), a.device().index);
  return ndarray(shape, numpy_dtype(a.dtype()), pointer(memory, 0), strides);
}

nb::object from_array(const Array& array) {
  if (std::optional<nb::object> made = to_cupy(array)) return *std::move(made);
  return export_as<nb::cupy>(array, to_dlpack_dtype(array.dtype()));
}

uintptr_t current_stream(int) {
  const Param param("the current stream");
  static const nb::object& current =
      *new nb::object(attr_or_invalid("cupy.cuda", "get_current_stream"));
  // A CuPy stream's handle is its .ptr: read at once rather than after to_stream's look for
  // the other protocols.
  const nb::object stream = current();
  const nb::object ptr = nb::getattr(stream, "ptr", nb::none());
  return PyLong_Check(ptr.ptr()) ? to_handle(ptr, param) : to_stream(stream, param);
}

}  // namespace

const FrameworkAdapter kCupyAdapter = {
    .claims = claims,
    .to_array = read_array,
    .from_array = from_array,
    .current_stream = current_stream,
};

}  // namespace kjit::python
