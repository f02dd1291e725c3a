#include "torch.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <complex>
#include <cstdlib>
#include <string_view>

#include "../convert.h"
#include "../recorded_call.h"
#include "adapters.h"
#include "dlpack.h"

namespace kjit::python {

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

namespace {

// Torch means a tensor: other torch objects (torch.Size...) go the general way.
bool claims(nb::handle type, std::string_view module) {
  return module.starts_with("torch") && nb::hasattr(type, "data_ptr");
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

// Whether autograd tracks |tensor| now, as kjit._torch's read says in needs_grad, asked through
// torch's Python API (where kjit._torch does not serve). A tensor that does not require grad,
// the common case, costs one attribute read.
bool needs_grad(nb::handle tensor, const Param& param) {
  static PyObject* const kRequiresGrad = PyUnicode_InternFromString("requires_grad");
  nb::object requires_grad = nb::steal(PyObject_GetAttr(tensor.ptr(), kRequiresGrad));
  if (!requires_grad.is_valid()) {
    nb::python_error error;
    throw TypeError(param.str() + ": this tensor cannot be read (" + error.what() + ")");
  }
  if (requires_grad.ptr() != Py_True) return false;
  // Below autograd (inside an operator's own implementation) torch excludes autograd's
  // functionality, and that operator's autograd handles the gradients.
  nb::module_ torch = nb::module_::import_("torch");
  nb::object c = torch.attr("_C");
  return nb::cast<bool>(torch.attr("is_grad_enabled")()) &&
         !nb::cast<bool>(c.attr("_dispatch_tls_is_dispatch_key_excluded")(
             c.attr("DispatchKey").attr("AutogradFunctionality")));
}

// Warns, once per kernel, that input |param|, which autograd tracks, gets no gradient through
// the call: the outputs a kernel makes or writes do not require grad. A warning filter that
// turns it into an error fails the call, and the next call warns again.
void warn_of_lost_gradient(GradWarning& warning, const Param& param) {
  const std::string message =
      param.str() +
      " requires grad, but autograd does not see a kernel's call: no gradient reaches it "
      "through the outputs, which do not require grad. Wrap the kernel with "
      "kjit.torch.op(kernel, ..., backward=...) to train through it, or call it under "
      "torch.no_grad()/on detached tensors to silence this";
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) < 0) throw nb::python_error();
  warning.issued = true;
}

// The memory kjit._torch read into |view|, as a launch reads it, valid while |view| is.
ArrayRef ref_of(const TorchTensorView& view) {
  return {.data = view.data,
          .dtype = view.dtype,
          .device = view.cuda ? Device::cuda(view.device_index) : Device::cpu(),
          .ndim = view.ndim,
          .shape = view.shape,
          .strides = view.strides,
          .read_only = false};
}

// The memory kjit._torch read into |view|, as an Array; |owner| (may be empty) is kept with it.
Array from_torch_view(const TorchTensorView& view, std::shared_ptr<void> owner) {
  const ArrayRef ref = ref_of(view);
  const auto n = static_cast<size_t>(ref.ndim);
  return Array::borrow(ref.data, {ref.shape, n}, {ref.strides, n}, ref.dtype, ref.device,
                       std::move(owner));
}

// A torch.Tensor, read by kjit._torch where it serves, else described by torch._C._to_dlpack:
// one call into torch's C++ (the tensor's Python __dlpack__ costs several microseconds, its
// accessors a call each for the dtype, device, shape, strides and address).
// |grad_warning| (an input's, nullptr once issued) is issued when autograd tracks the tensor.
Array from_torch(nb::handle tensor, const Param& param, std::shared_ptr<void> owner, bool writable,
                 GradWarning* grad_warning) {
  if (const TorchBridge* bridge = torch_bridge()) {
    TorchTensorView v;
    if (bridge->read(tensor.ptr(), writable, &v)) {
      check_torch_write(v.write, param);
      if (grad_warning && v.needs_grad) warn_of_lost_gradient(*grad_warning, param);
      return from_torch_view(v, std::move(owner));
    }
  }
  if (writable) check_torch_write(torch_write(tensor), param);
  if (grad_warning && needs_grad(tensor, param)) warn_of_lost_gradient(*grad_warning, param);
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
  const bool lazy = is_neg.ptr() == Py_True || (nd.dtype() == nb::dtype<std::complex<float>>() &&
                                                nb::cast<bool>(tensor.attr("is_conj")()));
  if (lazy) {
    if (writable) {
      throw ValueError(param.str() +
                       ": a tensor with torch's lazy conjugation or negation "
                       "cannot be written in place; pass a resolved tensor "
                       "(resolve_conj(), resolve_neg())");
    }
    nb::object resolved = tensor.attr("resolve_conj")().attr("resolve_neg")();
    return from_torch(resolved, param, python_owner(resolved), false, nullptr);
  }
  return from_ndarray(nd, std::nullopt, param);
}

Array read_array(nb::handle obj, const ReadRequest& request) {
  GradWarning* grad_warning =
      request.grad_warning && !request.grad_warning->issued ? request.grad_warning : nullptr;
  return from_torch(obj, request.param,
                    request.keep_alive ? python_owner(nb::borrow(obj)) : nullptr, request.writable,
                    grad_warning);
}

nb::object from_array(const Array& array) {
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
    PyObject* tensor = bridge->wrap(&v, new std::shared_ptr<void>(array.owner()),
                                    [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
    if (!tensor) throw nb::python_error();
    return nb::steal(tensor);
  }
  const dl::dtype dtype = to_dlpack_dtype(array.dtype());
  // torch.utils.dlpack.from_dlpack is Python code around torch._C._from_dlpack; hand the
  // capsule to the latter directly (a few microseconds less per call).
  static const nb::object& from_capsule =
      *new nb::object(attr_or_invalid("torch._C", "_from_dlpack"));
  if (!from_capsule.is_valid()) return export_as<nb::pytorch>(array, dtype);
  return from_capsule(export_as<nb::no_framework>(array, dtype));
}

uintptr_t current_stream(int device) {
  if (const TorchBridge* bridge = torch_bridge()) {
    uintptr_t handle = 0;
    if (!bridge->current_stream(device, &handle)) throw nb::python_error();
    return handle;
  }
  const Param param("the current stream");
  static const nb::object& raw =
      *new nb::object(attr_or_invalid("torch._C", "_cuda_getCurrentRawStream"));
  if (raw.is_valid()) return to_stream(raw(device), param);
  return to_stream(nb::module_::import_("torch.cuda").attr("current_stream")(device), param);
}

// torch's side of a recorded bound call: tensors as kjit._torch describes them.
struct TorchTensors {
  using View = TorchTensorView;
  const TorchBridge* bridge;
  bool grad_warned;  // the kernel's GradWarning was issued

  // Tensors only, as the general path reads them (a tensor subclass of another library is
  // another library's), outputs torch lets be written now, and inputs autograd tracks once the
  // general path has warned of one.
  bool read(PyObject* obj, bool output, View& view) const {
    return &framework_of(obj) == &kTorchAdapter && bridge->read(obj, output, &view) &&
           (output ? view.write == TorchWrite::Allowed : !view.needs_grad || grad_warned);
  }
  static ArrayRef ref_of(const View& view) { return python::ref_of(view); }
  uintptr_t current_stream(int device) const { return python::current_stream(device); }
  static void describe_output(View& view, const ArrayRef& layout) {
    view.ndim = layout.ndim;
    std::copy_n(layout.shape, layout.ndim, view.shape);
    std::copy_n(layout.strides, layout.ndim, view.strides);
    view.dtype = layout.dtype;
    view.cuda = true;
    view.device_index = layout.device.index;
  }
  PyObject* wrap(const View& view, void* block, void (*release)(void*)) const {
    return bridge->wrap(&view, block, release);
  }
};

std::optional<nb::object> call_recorded(const BoundCall& call) {
  // The bridge is looked for once a torch tensor is seen, as the general path does: kjit never
  // imports torch itself.
  const TorchBridge* bridge = torch_bridge();
  if (!bridge) return std::nullopt;
  return run_as_recorded(call, TorchTensors{bridge, call.grad_warning.issued});
}

}  // namespace

const FrameworkAdapter kTorchAdapter = {
    .claims = claims,
    .to_array = read_array,
    .from_array = from_array,
    .current_stream = current_stream,
    .call_recorded = call_recorded,
};

}  // namespace kjit::python
