#include "dlpack.h"

#include <nanobind/stl/string.h>

#include <cstring>
#include <string>

#include "../convert.h"
#include "adapters.h"

namespace kjit::python {

std::optional<Dtype> from_dlpack_dtype(dl::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<dl::dtype_code>(t.code)) {
    case dl::dtype_code::Bool:
      return Dtype::Bool;
    case dl::dtype_code::Int:
      switch (t.bits) {
        case 8:
          return Dtype::Int8;
        case 16:
          return Dtype::Int16;
        case 32:
          return Dtype::Int32;
        case 64:
          return Dtype::Int64;
      }
      break;
    case dl::dtype_code::UInt:
      switch (t.bits) {
        case 8:
          return Dtype::UInt8;
        case 16:
          return Dtype::UInt16;
        case 32:
          return Dtype::UInt32;
        case 64:
          return Dtype::UInt64;
      }
      break;
    case dl::dtype_code::Float:
      switch (t.bits) {
        case 16:
          return Dtype::Float16;
        case 32:
          return Dtype::Float32;
        case 64:
          return Dtype::Float64;
      }
      break;
    case dl::dtype_code::Bfloat:
      if (t.bits == 16) return Dtype::BFloat16;
      break;
    case dl::dtype_code::Complex:
      if (t.bits == 64) return Dtype::Complex64;
      break;
    default:
      break;
  }
  return std::nullopt;
}

dl::dtype to_dlpack_dtype(Dtype d) {
  uint8_t bits = static_cast<uint8_t>(itemsize(d) * 8);
  dl::dtype_code code = dl::dtype_code::Float;
  if (d == Dtype::Bool)
    code = dl::dtype_code::Bool;
  else if (d >= Dtype::Int8 && d <= Dtype::Int64)
    code = dl::dtype_code::Int;
  else if (d >= Dtype::UInt8 && d <= Dtype::UInt64)
    code = dl::dtype_code::UInt;
  else if (d == Dtype::BFloat16)
    code = dl::dtype_code::Bfloat;
  else if (d == Dtype::Complex64)
    code = dl::dtype_code::Complex;
  return dl::dtype{static_cast<uint8_t>(code), bits, 1};
}

bool buffer_is_importable(nb::handle obj) {
  PyTypeObject* type = Py_TYPE(obj.ptr());
  if (!type->tp_as_buffer || !type->tp_as_buffer->bf_getbuffer) return true;
  // NumPy's arrays, the common case, always give their strides.
  if (std::strcmp(type->tp_name, "numpy.ndarray") == 0) return true;
  // Others are asked as nanobind asks. NumPy's datetime64 and timedelta64 scalars give a
  // 1-d buffer of 8 bytes with no strides, which nanobind would read from address 0.
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return true;  // nanobind is refused the same way
  }
  const bool has_strides = view.ndim == 0 || view.strides != nullptr;
  PyBuffer_Release(&view);
  return has_strides;
}

template <class Nd>
Array from_ndarray(const Nd& nd, std::optional<Dtype> dtype_override, const Param& param) {
  std::optional<Dtype> dtype = dtype_override ? dtype_override : from_dlpack_dtype(nd.dtype());
  if (!dtype) {
    throw TypeError(param.str() + ": unsupported element type (DLPack code " +
                    std::to_string(nd.dtype().code) + ", " + std::to_string(nd.dtype().bits) +
                    " bits)");
  }
  if (nd.ndim() > static_cast<size_t>(kMaxNdim)) {
    throw ValueError(param.str() + ": " + std::to_string(nd.ndim()) +
                     " dimensions; at most 10 are supported");
  }
  Device device = Device::cpu();
  const int type = nd.device_type();
  if (type == nb::device::cuda::value) {
    device = Device::cuda(nd.device_id());
  } else if (type != nb::device::cpu::value && type != nb::device::cuda_host::value &&
             type != nb::device::cuda_managed::value) {
    throw ValueError(param.str() + ": arrays on this kind of device are not supported");
  }
  Shape shape(nd.ndim()), strides(nd.ndim());
  for (size_t i = 0; i < nd.ndim(); ++i) {
    shape[i] = nd.shape(i);
    strides[i] = nd.stride(i);
  }
  // The imported ndarray holds what the producer exported, whose capsule may be all that owns
  // the memory: the array keeps it (releasing it takes the GIL itself).
  return Array::borrow(const_cast<void*>(nd.data()), shape, strides, *dtype, device,
                       std::make_shared<Nd>(nd));
}

template Array from_ndarray(const nb::ndarray<>&, std::optional<Dtype>, const Param&);
template Array from_ndarray(const nb::ndarray<nb::ro>&, std::optional<Dtype>, const Param&);

std::optional<Array> import_array(nb::handle source, const ReadRequest& request,
                                  std::optional<Dtype> dtype_override) {
  nb::ndarray<> rw;
  if (import_ndarray(source, rw)) return from_ndarray(rw, dtype_override, request.param);
  nb::ndarray<nb::ro> ro;
  if (import_ndarray(source, ro)) {
    if (request.writable) throw ValueError(request.param.str() + ": the array is read-only");
    return from_ndarray(ro, dtype_override, request.param).as_read_only();
  }
  return std::nullopt;
}

void throw_unreadable(nb::handle obj, const Param& param) {
  if (!PyType_Check(obj.ptr()) && nb::hasattr(obj, "dtype")) {
    throw TypeError(param.str() + ": arrays of dtype '" + str_of(obj.attr("dtype")) +
                    "' are not supported");
  }
  // An object that offers DLPack but whose export failed: say why, as its own error says it.
  std::string why;
  if (!PyType_Check(obj.ptr()) && nb::hasattr(obj, "__dlpack__")) {
    try {
      obj.attr("__dlpack__")();
      why = " (its __dlpack__ gave what kjit cannot read)";
    } catch (nb::python_error& e) {
      why = " (its __dlpack__ raised " + error_text(e) + ")";
    }
  }
  throw TypeError(param.str() +
                  ": expected an array (NumPy, or any object with __dlpack__), a "
                  "kjit.Array, or a Python bool/int/float, got " +
                  describe(obj) + why);
}

nb::object dlpack_view(const Array& array) {
  return export_as<nb::array_api>(array, to_dlpack_dtype(array.dtype()));
}

namespace {

// The DLPack capsule |obj| exports, asked for as nanobind asks (a versioned capsule, else the
// older kind from producers that refuse the newer keyword), or |obj| itself when it exports none
// (nanobind then tries its buffer protocol). nanobind marks a capsule it is handed as read, but
// not one it asks for itself: a producer that returns the same capsule twice would have it read
// again after its first reader freed it.
nb::object dlpack_capsule_of(nb::handle obj, const Param& param) {
  if (PyType_Check(obj.ptr()) || !nb::hasattr(obj, "__dlpack__")) return nb::borrow(obj);
  nb::object capsule;
  try {
    capsule = obj.attr("__dlpack__")(nb::arg("max_version") =
                                         nb::make_tuple(dl::major_version, dl::minor_version));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_BufferError)) return nb::borrow(obj);
    try {
      capsule = obj.attr("__dlpack__")();
    } catch (nb::python_error&) {
      return nb::borrow(obj);  // the error path below reports what it raises
    }
  }
  if (PyCapsule_IsValid(capsule.ptr(), "used_dltensor") ||
      PyCapsule_IsValid(capsule.ptr(), "used_dltensor_versioned")) {
    throw ValueError(param.str() +
                     ": its __dlpack__ returned a capsule that was already read (a DLPack "
                     "capsule is read once: __dlpack__ must return a new one each call)");
  }
  return capsule;
}

// An object of a library kjit has no adapter for is read through the capsule it exports (its
// own memory, or a copy, when it exports none).
Array read_array(nb::handle obj, const ReadRequest& request) {
  const nb::object source = dlpack_capsule_of(obj, request.param);
  if (std::optional<Array> a = import_array(source, request)) return *std::move(a);
  throw_unreadable(obj, request.param);
}

bool claims(nb::handle, std::string_view) { return true; }

nb::object from_array(const Array& array) { return nb::cast(array); }

}  // namespace

// Any other library's arrays: their outputs come back as kjit.Array, itself a DLPack producer.
const FrameworkAdapter kDlpackAdapter = {
    .claims = claims,
    .remember_types = false,
    .to_array = read_array,
    .from_array = from_array,
};

}  // namespace kjit::python
