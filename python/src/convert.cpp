#include "convert.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <complex>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace kjit::python {
namespace {

namespace dl = nb::dlpack;

}  // namespace

std::string str_of(nb::handle obj) {
  nb::object s = nb::steal(PyObject_Str(obj.ptr()));
  if (!s.is_valid()) throw nb::python_error();
  return nb::cast<std::string>(s);
}

std::string error_text(nb::python_error& e) {
  return nb::cast<std::string>(nb::handle(e.type()).attr("__name__")) + ": " +
         str_of(e.value()).substr(0, 200);
}

std::string Param::str() const {
  std::string out = parent_ ? parent_->str() : std::string();
  if (kernel_) {
    out += "[kjit." + std::string(kernel_->api()) + "] kernel '" + kernel_->name() + "': ";
  }
  out += owned_ ? *owned_ : std::string(text_);
  if (index_ >= 0) out.append("[").append(std::to_string(index_)).append("]");
  if (label_) out += " ('" + *label_ + "')";
  return out;
}

namespace {

std::string qualified_type_name(nb::handle obj) {
  return nb::borrow<nb::str>(nb::type_name(obj.type())).c_str();
}

std::string describe(nb::handle obj) {
  return std::string("'").append(qualified_type_name(obj)).append("'");
}

std::optional<Dtype> from_dlpack_dtype(dl::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<dl::dtype_code>(t.code)) {
    case dl::dtype_code::Bool: return Dtype::Bool;
    case dl::dtype_code::Int:
      switch (t.bits) {
        case 8: return Dtype::Int8;
        case 16: return Dtype::Int16;
        case 32: return Dtype::Int32;
        case 64: return Dtype::Int64;
      }
      break;
    case dl::dtype_code::UInt:
      switch (t.bits) {
        case 8: return Dtype::UInt8;
        case 16: return Dtype::UInt16;
        case 32: return Dtype::UInt32;
        case 64: return Dtype::UInt64;
      }
      break;
    case dl::dtype_code::Float:
      switch (t.bits) {
        case 16: return Dtype::Float16;
        case 32: return Dtype::Float32;
        case 64: return Dtype::Float64;
      }
      break;
    case dl::dtype_code::Bfloat:
      if (t.bits == 16) return Dtype::BFloat16;
      break;
    case dl::dtype_code::Complex:
      if (t.bits == 64) return Dtype::Complex64;
      break;
    default: break;
  }
  return std::nullopt;
}

dl::dtype to_dlpack_dtype(Dtype d) {
  uint8_t bits = static_cast<uint8_t>(itemsize(d) * 8);
  dl::dtype_code code = dl::dtype_code::Float;
  if (d == Dtype::Bool) code = dl::dtype_code::Bool;
  else if (d >= Dtype::Int8 && d <= Dtype::Int64) code = dl::dtype_code::Int;
  else if (d >= Dtype::UInt8 && d <= Dtype::UInt64) code = dl::dtype_code::UInt;
  else if (d == Dtype::BFloat16) code = dl::dtype_code::Bfloat;
  else if (d == Dtype::Complex64) code = dl::dtype_code::Complex;
  return dl::dtype{static_cast<uint8_t>(code), bits, 1};
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

}  // namespace

Framework framework_of(nb::handle obj) {
  // Called with the GIL held, which guards the map; a call's arrays are mostly of the type the
  // last one had.
  static PyTypeObject* last_type = nullptr;
  static Framework last = Framework::None;
  static auto& known = *new std::unordered_map<PyTypeObject*, Framework>;
  PyTypeObject* type = Py_TYPE(obj.ptr());
  if (type == last_type) return last;
  if (auto it = known.find(type); it != known.end()) {
    last_type = type;
    return last = it->second;
  }
  std::string module;
  if (nb::hasattr(obj.type(), "__module__")) {
    nb::object m = obj.type().attr("__module__");
    if (nb::isinstance<nb::str>(m)) module = nb::cast<std::string>(m);
  }
  auto starts = [&](const char* p) { return module.rfind(p, 0) == 0; };
  // Torch means a tensor: other torch objects (torch.Size...) go the general way.
  const bool tensor = nb::hasattr(obj.type(), "data_ptr");
  Framework f = starts("kjit")                      ? Framework::Kjit
                : starts("numpy")                   ? Framework::Numpy
                : starts("torch") && tensor         ? Framework::Torch
                : starts("torch")                   ? Framework::Other
                : starts("cupy")                    ? Framework::Cupy
                : starts("jax") || starts("jaxlib") ? Framework::Jax
                                                    : Framework::Other;
  // The frameworks' own types live as long as their modules, and are remembered (by address,
  // so kept alive); any other type may be made and dropped at run time, and is looked at anew.
  if (f == Framework::Other) return f;
  if (known.emplace(type, f).second) Py_INCREF(type);
  last_type = type;
  return last = f;
}

Framework outputs_framework(const HeldItems& inputs) {
  Framework of_scalar = Framework::None;
  for (size_t i = 0; i < inputs.size(); ++i) {
    nb::handle item = inputs[i];
    if (is_python_scalar(item)) continue;
    const Framework f = framework_of(item);
    if (f == Framework::Numpy) {
      static const nb::object& generic = *new nb::object(attr_or_invalid("numpy", "generic"));
      if (generic.is_valid() &&
          PyObject_TypeCheck(item.ptr(), reinterpret_cast<PyTypeObject*>(generic.ptr()))) {
        if (of_scalar == Framework::None) of_scalar = f;
        continue;
      }
    }
    return f;
  }
  return of_scalar;
}

namespace {

// Whether kjit._torch serves this process, and why not. Plain statics under the GIL: a
// function-local static's guard could be held by a thread that waits for the GIL inside the
// import.
struct TorchBridgeState {
  bool looked = false;
  const TorchBridge* bridge = nullptr;
  std::string why_not;
};

// kjit._torch: kjit's build's own, or one built for the running torch at first use
// (kjit/_torch_bridge.py). Invalid, with the Python error set, when it cannot be had.
nb::object import_torch_bridge() {
  nb::object loader = nb::steal(PyImport_ImportModule("kjit._torch_bridge"));
  if (!loader.is_valid()) return loader;
  return nb::steal(PyObject_CallMethod(loader.ptr(), "load", nullptr));
}

TorchBridgeState& torch_bridge_state() {
  static TorchBridgeState* state = new TorchBridgeState;  // never destroyed: Python may outlive it
  if (state->looked) return *state;
  state->looked = true;
  const char* setting = std::getenv("KJIT_TORCH_BRIDGE");
  if (setting && std::string_view(setting) == "0") {
    state->why_not = "turned off by KJIT_TORCH_BRIDGE=0";
    return *state;
  }
  // The module is imported first: PyCapsule_Import only looks up attributes after "kjit".
  nb::object module = import_torch_bridge();
  auto* found = module.is_valid()
                    ? static_cast<const TorchBridge*>(PyCapsule_Import(kTorchBridgeCapsule, 0))
                    : nullptr;
  if (!found) {
    // Not built (no torch at build time), or built for another torch.
    nb::python_error error;
    state->why_not = nb::cast<std::string>(nb::str(error.value()));
    return *state;
  }
  if (found->abi != kTorchBridgeAbi) {
    state->why_not = "kjit._torch is from another build of kjit";
    return *state;
  }
  state->bridge = found;
  return *state;
}

}  // namespace

const TorchBridge* torch_bridge() { return torch_bridge_state().bridge; }

std::string torch_path() {
  const TorchBridgeState& state = torch_bridge_state();
  return state.bridge ? std::string("kjit._torch (torch's C++ API)")
                      : "DLPack (kjit._torch: " + state.why_not + ")";
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
  } else if (PyType_Check(obj.ptr())) {
    try {
      nb::object np_dtype = nb::module_::import_("numpy").attr("dtype")(obj);
      name = nb::cast<std::string>(np_dtype.attr("name"));
    } catch (const nb::python_error&) {
      throw TypeError(param.str() + ": " + describe(obj) + " is not a dtype");
    }
  } else {
    throw TypeError(param.str() + ": expected a dtype (kjit.float32, a NumPy or torch dtype, or a "
                    "name such as 'float32'), got " + describe(obj));
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

namespace {

// Imports |obj| through DLPack or the buffer protocol; false when it offers neither for this
// access (a producer may refuse both, as NumPy's bfloat16 does).
template <class Nd>
bool import_ndarray(nb::handle obj, Nd& nd) {
  bool imported = false;
  try {
    imported = nb::try_cast(obj, nd, false);
  } catch (const std::exception&) {
  }
  PyErr_Clear();
  return imported;
}

// Whether torch lets |tensor| be written in place now, asked through torch's Python API (where
// kjit._torch does not serve).
TorchWrite torch_write(nb::handle tensor) {
  nb::module_ torch = nb::module_::import_("torch");
  if (nb::cast<bool>(tensor.attr("is_inference")()) &&
      !nb::cast<bool>(torch.attr("is_inference_mode_enabled")())) {
    return TorchWrite::Inference;
  }
  if (!nb::cast<bool>(tensor.attr("requires_grad")) ||
      !nb::cast<bool>(torch.attr("is_grad_enabled")())) {
    return TorchWrite::Allowed;
  }
  return nb::cast<bool>(tensor.attr("is_leaf")) ? TorchWrite::GradLeaf : TorchWrite::InGraph;
}

// Refuses to write a tensor in place where torch itself would, as torch says why, and where
// autograd would not see the write.
void check_torch_write(TorchWrite write, const Param& param) {
  const char* why = nullptr;
  switch (write) {
    case TorchWrite::Allowed:
      return;
    case TorchWrite::GradLeaf:
      why =
          "a leaf tensor that requires grad cannot be written in place while grad mode is on, "
          "as torch refuses too; write under torch.no_grad(), or into a tensor that does not "
          "require grad";
      break;
    case TorchWrite::InGraph:
      why =
          "a tensor that requires grad cannot be written while grad mode is on: autograd "
          "records torch's in-place writes, but would not see a kernel's, and its gradients "
          "would be wrong; write under torch.no_grad(), or into a tensor that does not require "
          "grad";
      break;
    case TorchWrite::Inference:
      why =
          "an inference tensor cannot be written in place outside inference mode, as torch "
          "refuses too; write under torch.inference_mode(), or into a normal tensor";
      break;
  }
  throw ValueError(param.str() + ": " + why);
}

// A torch.Tensor, read by kjit._torch where it serves, else described by torch._C._to_dlpack:
// one call into torch's C++ (the tensor's Python __dlpack__ costs several microseconds, its
// accessors a call each for the dtype, device, shape, strides and address).
Array from_torch(nb::handle tensor, const Param& param, std::shared_ptr<void> owner,
                 bool writable) {
  if (const TorchBridge* bridge = torch_bridge()) {
    TorchTensorView v;
    if (bridge->read(tensor.ptr(), writable, &v)) {
      check_torch_write(v.write, param);
      return from_torch_view(v, std::move(owner));
    }
  }
  if (writable) check_torch_write(torch_write(tensor), param);
  static const nb::object& to_dlpack = *new nb::object(attr_or_invalid("torch._C", "_to_dlpack"));
  static PyObject* const kIsNeg = PyUnicode_InternFromString("is_neg");
  nb::object capsule;
  try {
    capsule = to_dlpack(tensor);
  } catch (const nb::python_error& e) {
    throw TypeError(param.str() + ": this tensor cannot be read (" + e.what() + ")");
  }
  nb::ndarray<> nd;
  if (!import_ndarray(capsule, nd)) {
    throw TypeError(param.str() + ": this tensor cannot be read through DLPack");
  }
  // Views with torch's lazy conjugation or negation (x.conj(), x.conj().imag) hold the data as
  // it was. An input is materialised, the copy living as long as the array; an output would
  // lose the kernel's writes in the copy, so it is refused.
  nb::object is_neg = nb::steal(PyObject_CallMethodNoArgs(tensor.ptr(), kIsNeg));
  if (!is_neg.is_valid()) throw nb::python_error();
  const bool lazy = is_neg.ptr() == Py_True ||
                    (nd.dtype() == nb::dtype<std::complex<float>>() &&
                     nb::cast<bool>(tensor.attr("is_conj")()));
  if (lazy) {
    if (writable) {
      throw ValueError(param.str() + ": a tensor with torch's lazy conjugation or negation "
                       "cannot be written in place; pass a resolved tensor "
                       "(resolve_conj(), resolve_neg())");
    }
    nb::object resolved = tensor.attr("resolve_conj")().attr("resolve_neg")();
    return from_torch(resolved, param, python_owner(resolved), false);
  }
  return from_ndarray(nd, std::nullopt, param);
}

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

// True when |obj| says through __dlpack_device__ that it lives on a CUDA device.
bool on_cuda(nb::handle obj) {
  if (!nb::hasattr(obj, "__dlpack_device__")) return false;
  nb::object device = obj.attr("__dlpack_device__")();
  return is_list(device) && nb::len(device) == 2 &&
         PyLong_AsLong(nb::object(device[0]).ptr()) == nb::device::cuda::value;
}

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

}  // namespace

Array to_array(nb::handle obj, const Param& param, bool keep_alive, bool writable,
               uintptr_t dlpack_stream) {
  if (is_python_scalar(obj) && writable) {
    throw TypeError(param.str() + ": a Python scalar cannot be an output; pass an array");
  }
  if (PyBool_Check(obj.ptr())) return Array::scalar(obj.ptr() == Py_True, Dtype::Bool);
  if (PyLong_CheckExact(obj.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow) throw ValueError(param.str() + ": the integer does not fit in a signed 64-bit int");
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
  if (nb::isinstance<Array>(obj)) return nb::cast<const Array&>(obj);
  const Framework framework = framework_of(obj);
  if (framework == Framework::Torch) {
    return from_torch(obj, param, keep_alive ? python_owner(nb::borrow(obj)) : nullptr, writable);
  }
  if (framework == Framework::Cupy) {
    if (std::optional<Array> a =
            from_cupy(obj, param, keep_alive ? python_owner(nb::borrow(obj)) : nullptr)) {
      return *std::move(a);
    }
  }
  // An object of any other library is read through the capsule it exports (its own memory, or
  // a copy, when it exports none).
  const nb::object source =
      framework == Framework::Other ? dlpack_capsule_of(obj, param) : nb::borrow(obj);
  nb::ndarray<> rw;
  if (dlpack_stream && framework == Framework::Jax && on_cuda(obj)) {
    // Export for work on our stream: JAX makes it wait for the array instead of blocking the
    // host until the array is ready.
    try {
      nb::object capsule = obj.attr("__dlpack__")(nb::arg("stream") = dlpack_stream);
      if (import_ndarray(capsule, rw)) return from_ndarray(rw, std::nullopt, param);
    } catch (const nb::python_error&) {
    }
    // Otherwise the usual export, which waits until the array is ready.
  }
  if (import_ndarray(source, rw)) return from_ndarray(rw, std::nullopt, param);
  nb::ndarray<nb::ro> ro;
  if (import_ndarray(source, ro)) {
    if (writable) throw ValueError(param.str() + ": the array is read-only");
    return from_ndarray(ro, std::nullopt, param).as_read_only();
  }
  // NumPy has no bfloat16 of its own: ml_dtypes' bfloat16 arrays are read through a uint16 view.
  const bool has_dtype = !PyType_Check(obj.ptr()) && nb::hasattr(obj, "dtype");
  const std::string dtype = has_dtype ? str_of(obj.attr("dtype")) : "";
  if (framework == Framework::Numpy && dtype == "bfloat16") {
    nb::object view = obj.attr("view")("uint16");
    if (import_ndarray(view, rw)) return from_ndarray(rw, Dtype::BFloat16, param);
    if (import_ndarray(view, ro)) {
      if (writable) throw ValueError(param.str() + ": the array is read-only");
      return from_ndarray(ro, Dtype::BFloat16, param).as_read_only();
    }
  }
  if (has_dtype) {
    throw TypeError(param.str() + ": arrays of dtype '" + dtype + "' are not supported");
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

namespace {

// A zero-copy view of |a| for framework Fw; the view owns a copy of the Array (and with it the
// memory).
template <class Fw>
nb::object export_as(const Array& a, dl::dtype dtype) {
  auto* keep = new Array(a);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Array*>(p); });
  size_t shape[kMaxNdim];
  int64_t strides[kMaxNdim];
  for (int i = 0; i < a.ndim(); ++i) {
    shape[i] = static_cast<size_t>(a.shape(i));
    strides[i] = a.stride(i);
  }
  int device_type =
      a.device().type == DeviceType::CPU ? nb::device::cpu::value : nb::device::cuda::value;
  // Read-only memory (a read-only NumPy array's, bytes') stays read-only in the other library.
  if (a.read_only()) {
    return nb::cast(nb::ndarray<Fw, nb::ro>(a.data(), static_cast<size_t>(a.ndim()), shape, owner,
                                            strides, dtype, device_type, a.device().index));
  }
  return nb::cast(nb::ndarray<Fw>(a.data(), static_cast<size_t>(a.ndim()), shape, owner, strides,
                                  dtype, device_type, a.device().index));
}

}  // namespace

nb::object from_array(const Array& array, Framework framework) {
  // NumPy holds host memory only: device outputs come back as a copy.
  if (framework == Framework::Numpy && array.device().type != DeviceType::CPU) {
    return from_array(array.to(Device::cpu()), framework);
  }
  const dl::dtype dtype = to_dlpack_dtype(array.dtype());
  switch (framework) {
    case Framework::Numpy:
      // NumPy has no bfloat16: export the bits and view them as ml_dtypes' bfloat16.
      if (array.dtype() == Dtype::BFloat16) {
        return export_as<nb::numpy>(array, nb::dtype<uint16_t>())
            .attr("view")(nb::module_::import_("ml_dtypes").attr("bfloat16"));
      }
      return export_as<nb::numpy>(array, dtype);
    case Framework::Torch: {
      if (const TorchBridge* bridge = torch_bridge()) {
        TorchTensorView v;
        v.data = array.data();
        v.ndim = array.ndim();
        std::copy(array.shape().begin(), array.shape().end(), v.shape);
        std::copy(array.strides().begin(), array.strides().end(), v.strides);
        v.dtype = array.dtype();
        v.cuda = array.device().type == DeviceType::CUDA;
        v.device_index = array.device().index;
        // The tensor holds what keeps the memory alive, not the whole Array.
        PyObject* tensor = bridge->wrap(&v, new std::shared_ptr<void>(array.owner()), [](void* p) {
          delete static_cast<std::shared_ptr<void>*>(p);
        });
        if (!tensor) throw nb::python_error();
        return nb::steal(tensor);
      }
      // torch.utils.dlpack.from_dlpack is Python code around torch._C._from_dlpack; hand the
      // capsule to the latter directly (a few microseconds less per call).
      static const nb::object& from_capsule =
          *new nb::object(attr_or_invalid("torch._C", "_from_dlpack"));
      if (!from_capsule.is_valid()) return export_as<nb::pytorch>(array, dtype);
      return from_capsule(export_as<nb::no_framework>(array, dtype));
    }
    case Framework::Cupy:
      if (std::optional<nb::object> made = to_cupy(array)) return *std::move(made);
      return export_as<nb::cupy>(array, dtype);
    case Framework::Jax: return export_as<nb::jax>(array, dtype);
    default: return nb::cast(array);
  }
}

nb::object dlpack_view(const Array& array) {
  return export_as<nb::array_api>(array, to_dlpack_dtype(array.dtype()));
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

HeldItems::HeldItems(PyObject* const* items, size_t n) : size_(n) {
  if (size_ > kInPlace) {
    on_heap_.resize(size_);
    items_ = on_heap_.data();
  }
  for (size_t i = 0; i < size_; ++i) items_[i] = Py_NewRef(items[i]);
}

HeldItems::~HeldItems() {
  for (size_t i = 0; i < size_; ++i) Py_DECREF(items_[i]);
}

nb::list HeldItems::list() const { return list_of(items_, size_); }

nb::list list_of(const std::vector<Array>& arrays, Framework framework) {
  nb::list out = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(arrays.size())));
  if (!out.is_valid()) throw nb::python_error();
  for (size_t i = 0; i < arrays.size(); ++i) {
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i),
                    from_array(arrays[i], framework).release().ptr());
  }
  return out;
}

nb::list list_of(PyObject* const* items, size_t n) {
  nb::list out = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(n)));
  if (!out.is_valid()) throw nb::python_error();
  for (size_t i = 0; i < n; ++i) {
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), Py_NewRef(items[i]));
  }
  return out;
}

ArrayRef ref_of(const TorchTensorView& view) {
  return {.data = view.data,
          .dtype = view.dtype,
          .device = view.cuda ? Device::cuda(view.device_index) : Device::cpu(),
          .ndim = view.ndim,
          .shape = view.shape,
          .strides = view.strides,
          .read_only = false};
}

Array from_torch_view(const TorchTensorView& view, std::shared_ptr<void> owner) {
  const ArrayRef ref = ref_of(view);
  const auto n = static_cast<size_t>(ref.ndim);
  return Array::borrow(ref.data, {ref.shape, n}, {ref.strides, n}, ref.dtype, ref.device,
                       std::move(owner));
}

Dim3 to_dim3(nb::handle obj, const Param& param) {
  if (!nb::isinstance<nb::sequence>(obj) || nb::isinstance<nb::str>(obj)) {
    throw TypeError(param.str() + ": expected a tuple of 3 ints, got " + describe(obj));
  }
  nb::sequence seq = nb::borrow<nb::sequence>(obj);
  if (nb::len(seq) != 3) {
    throw ValueError(param.str() + ": expected 3 sizes (x, y, z), got " + std::to_string(nb::len(seq)));
  }
  int64_t v[3];
  for (size_t i = 0; i < 3; ++i) v[i] = to_int(seq[i], param);
  return Dim3{v[0], v[1], v[2]};
}

Shape to_shape(nb::handle obj, const Param& param) {
  if (!nb::isinstance<nb::sequence>(obj) || nb::isinstance<nb::str>(obj)) {
    throw TypeError(param.str() + ": expected a sequence of ints, got " + describe(obj));
  }
  nb::sequence seq = nb::borrow<nb::sequence>(obj);
  const size_t ndim = nb::len(seq);
  if (ndim > static_cast<size_t>(kMaxNdim)) {
    throw ValueError(param.str() + " has " + std::to_string(ndim) +
                     " dimensions; at most 10 are supported");
  }
  Shape shape;
  shape.reserve(ndim);
  for (nb::handle item : seq) {
    int64_t d = to_int(item, param);
    if (d < 0) throw ValueError(param.str() + ": dimensions must be >= 0, got " + std::to_string(d));
    shape.push_back(d);
  }
  return shape;
}

}  // namespace kjit::python
