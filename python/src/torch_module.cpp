// kjit._torch: torch tensors read and made through torch's C++ API (see torch_bridge.h). A plain
// CPython module: torch's headers bring pybind11, which is kept apart from kjit's nanobind module.
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/utils/device_lazy_init.h>

#include <pthread.h>

#include <cstring>
#include <optional>

#include "torch_bridge.h"

namespace kjit::python {
namespace {

// torch's type for each kjit dtype, in kjit's order.
constexpr c10::ScalarType kTorchTypes[kNumDtypes] = {
    c10::ScalarType::Bool,   c10::ScalarType::Char,        c10::ScalarType::Short,
    c10::ScalarType::Int,    c10::ScalarType::Long,        c10::ScalarType::Byte,
    c10::ScalarType::UInt16, c10::ScalarType::UInt32,      c10::ScalarType::UInt64,
    c10::ScalarType::Half,   c10::ScalarType::BFloat16,    c10::ScalarType::Float,
    c10::ScalarType::Double, c10::ScalarType::ComplexFloat};

c10::ScalarType to_torch(Dtype d) { return kTorchTypes[static_cast<int>(d)]; }

std::optional<Dtype> to_kjit(c10::ScalarType t) {
  for (int i = 0; i < kNumDtypes; ++i) {
    if (kTorchTypes[i] == t) return static_cast<Dtype>(i);
  }
  return std::nullopt;
}

// Whether autograd records the operations called now: grad mode is on, and the call is not made
// below autograd (an operator's CPU or CUDA implementation, which torch runs with autograd's
// functionality excluded; its own autograd kernel handles the gradients).
bool autograd_sees_calls() {
  return c10::GradMode::is_enabled() &&
         !c10::impl::tls_is_dispatch_key_excluded(c10::DispatchKey::AutogradFunctionality);
}

bool read(PyObject* obj, bool writable, TorchTensorView* view) {
  try {
    if (!THPVariable_Check(obj)) return false;
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (!t.defined() || t.layout() != c10::kStrided || t.is_neg() || t.is_conj() ||
        t.dim() > kMaxNdim) {
      return false;
    }
    const std::optional<Dtype> dtype = to_kjit(t.scalar_type());
    const c10::Device device = t.device();
    if (!dtype || !(device.is_cpu() || device.is_cuda())) return false;
    if (writable) {
      view->write = t.is_inference() && !c10::InferenceMode::is_enabled() ? TorchWrite::Inference
                    : !t.requires_grad() || !c10::GradMode::is_enabled()  ? TorchWrite::Allowed
                    : t.is_leaf()                                         ? TorchWrite::GradLeaf
                                                                          : TorchWrite::InGraph;
      if (view->write != TorchWrite::Allowed) return true;  // not copied for a write refused
    }
    view->needs_grad = !writable && t.requires_grad() && autograd_sees_calls();
    view->data = writable ? t.mutable_data_ptr() : const_cast<void*>(t.const_data_ptr());
    view->ndim = static_cast<int>(t.dim());
    std::memcpy(view->shape, t.sizes().data(), sizeof(int64_t) * t.dim());
    std::memcpy(view->strides, t.strides().data(), sizeof(int64_t) * t.dim());
    view->dtype = *dtype;
    view->cuda = device.is_cuda();
    view->device_index = device.is_cuda() ? device.index() : 0;
    return true;
  } catch (const std::exception&) {
    PyErr_Clear();  // e.g. a tensor subclass without storage: the general path says why
    return false;
  }
}

bool current_stream(int index, uintptr_t* stream) {
  try {
    const c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
    const c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
    *stream = reinterpret_cast<uintptr_t>(cuda.getStream(device).native_handle());
    return true;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return false;
  }
}

// Whether torch's CUDA state was set up, as it stays (asking takes the GIL again, in each call),
// but in a forked child, where torch's own check refuses. Read and written with the GIL held.
bool torch_cuda_set_up = false;

PyObject* wrap(const TorchTensorView* view, void* context, void (*release)(void*)) {
  try {
    const c10::Device device =
        view->cuda
            ? c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(view->device_index))
            : c10::Device(c10::DeviceType::CPU);
    // Owns the context from here: release(context) runs if anything below fails.
    c10::DataPtr memory(view->data, context, release, device);
    // torch's CUDA state is set up before its first CUDA tensor, as torch's own constructors
    // do: kjit may make it first.
    if (view->cuda && !torch_cuda_set_up) {
      torch::utils::device_lazy_init(c10::DeviceType::CUDA);
      torch_cuda_set_up = true;
    }
    // The storage and tensor are made as at::for_blob makes them, less its checks and options
    // (a view's layout is kjit's own, already checked), which cost about a tenth of a call.
    int64_t elements = 1;  // the storage's extent, from the first element to the last
    for (int d = 0; d < view->ndim; ++d) {
      if (view->shape[d] == 0) {
        elements = 0;
        break;
      }
      elements += (view->shape[d] - 1) * view->strides[d];
    }
    const caffe2::TypeMeta type = caffe2::TypeMeta::fromScalarType(to_torch(view->dtype));
    auto storage = c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), elements * static_cast<int64_t>(type.itemsize()),
        std::move(memory), /*allocator=*/nullptr, /*resizable=*/false);
    at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
        std::move(storage),
        c10::DispatchKeySet(view->cuda ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU), type);
    t.unsafeGetTensorImpl()->set_sizes_and_strides(c10::IntArrayRef(view->shape, view->ndim),
                                                   c10::IntArrayRef(view->strides, view->ndim));
    return THPVariable_Wrap(std::move(t));
  } catch (const std::exception& e) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

const TorchBridge kBridge = {kTorchBridgeAbi, read, current_stream, wrap};

// kjit.torch's eager check (_eager_ready_in_python in kjit/torch.py, which it must agree with):
// 0 when a call on |args| needs torch's dispatcher (a transform, a dispatch or function mode,
// or the JIT tracer is active, an argument is not a plain CPU or CUDA tensor or a Python
// number, or autograd has a tensor to record), else 1, plus 2 when a tensor is on a GPU and 4
// when an argument is a Python number. The same questions as torch's Python API asks, for a
// tenth of their time.
PyObject* eager_ready(PyObject*, PyObject* const* args, Py_ssize_t n) {
  using c10::DispatchKey;
  if (c10::impl::tls_is_dispatch_key_included(DispatchKey::FuncTorchDynamicLayerFrontMode) ||
      c10::impl::tls_is_dispatch_key_included(DispatchKey::FuncTorchDynamicLayerBackMode) ||
      c10::impl::TorchDispatchModeTLS::stack_len() > 0 || at::impl::torch_function_mode_enabled() ||
      torch::jit::tracer::isTracing()) {
    return PyLong_FromLong(0);
  }
  const bool grad = c10::GradMode::is_enabled();
  long ready = 1;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* a = args[i];
    if (THPVariable_CheckExact(a)) {
      const at::Tensor& t = THPVariable_Unpack(a);
      if ((grad && t.requires_grad()) || !(t.is_cpu() || t.is_cuda())) return PyLong_FromLong(0);
      if (t.is_cuda()) ready |= 2;
    } else if (PyLong_Check(a) || PyFloat_Check(a)) {  // PyLong_Check: bools too
      ready |= 4;
    } else {
      return PyLong_FromLong(0);
    }
  }
  return PyLong_FromLong(ready);
}

PyMethodDef kMethods[] = {
    {"eager_ready", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(eager_ready)),
     METH_FASTCALL, "Whether a kjit.torch op call on these arguments may skip the dispatcher."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT,
                       "_torch",
                       "torch tensors read and made through torch's C++ API",
                       -1,
                       kMethods,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};

// The torch this module was built for is the only one it may run with: its C++ API has no stable
// ABI across versions.
bool same_torch_version() {
  PyObject* torch = PyImport_ImportModule("torch");
  if (!torch) return false;
  PyObject* version = PyObject_GetAttrString(torch, "__version__");
  Py_DECREF(torch);
  if (!version) return false;
  PyObject* text = PyObject_Str(version);
  Py_DECREF(version);
  if (!text) return false;
  const char* running = PyUnicode_AsUTF8(text);
  const bool same = running && std::strcmp(running, KJIT_TORCH_VERSION) == 0;
  if (running && !same) {
    PyErr_Format(PyExc_ImportError, "kjit._torch was built for torch %s, not torch %s",
                 KJIT_TORCH_VERSION, running);
  }
  Py_DECREF(text);
  return same;
}

}  // namespace
}  // namespace kjit::python

PyMODINIT_FUNC PyInit__torch() {
  using namespace kjit::python;
  if (!same_torch_version()) return nullptr;
  pthread_atfork(nullptr, nullptr, [] { torch_cuda_set_up = false; });
  PyObject* module = PyModule_Create(&kModule);
  if (!module) return nullptr;
  PyObject* capsule =
      PyCapsule_New(const_cast<TorchBridge*>(&kBridge), kTorchBridgeCapsule, nullptr);
  if (!capsule || PyModule_AddObject(module, "bridge", capsule) < 0) {
    Py_XDECREF(capsule);
    Py_DECREF(module);
    return nullptr;
  }
  if (PyModule_AddStringConstant(module, "torch_version", KJIT_TORCH_VERSION) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
