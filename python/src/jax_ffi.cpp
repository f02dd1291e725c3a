// XLA FFI handlers that run kjit kernels inside jax.jit, one per platform (the host, CUDA), with
// no Python and no GIL. Python (kjit/jax.py) binds and builds a kernel at trace time and
// registers the bound kernel here under a key; the custom call carries the key as its static
// attribute "key", and the handler runs that bound kernel on XLA's buffers (and stream).
#include <Python.h>
#include <kjit/kjit.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <xla/ffi/api/ffi.h>

#include <cstdint>
#include <deque>
#include <exception>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "bound_kernel_object.h"
#include "jax_ffi.h"

namespace nb = nanobind;
namespace ffi = xla::ffi;

namespace kjit::python {
namespace {

// The launches registered so far, by key (their index). An entry is never removed: a compiled
// XLA program keeps the key in its custom call and may run for as long as the process lives,
// and kjit cannot learn when JAX drops it. Entries are few (one per op and signature traced)
// and small (a bound kernel: its settings and last launch). A deque keeps each entry in place
// while others are added, so that a handler reads its entry after letting go of the lock.
class LaunchRegistry {
 public:
  int64_t add(BoundKernel bound) {
    std::unique_lock lock(mutex_);
    entries_.push_back(std::move(bound));
    return static_cast<int64_t>(entries_.size()) - 1;
  }
  const BoundKernel* find(int64_t key) const {
    std::shared_lock lock(mutex_);
    if (key < 0 || key >= static_cast<int64_t>(entries_.size())) return nullptr;
    return &entries_[static_cast<size_t>(key)];
  }

 private:
  mutable std::shared_mutex mutex_;
  std::deque<BoundKernel> entries_;
};

// Never destroyed: a handler may run on XLA's threads while the interpreter exits.
LaunchRegistry& registry() {
  static auto* r = new LaunchRegistry;
  return *r;
}

std::optional<Dtype> dtype_of(ffi::DataType type) {
  switch (type) {
    case ffi::DataType::PRED:
      return Dtype::Bool;
    case ffi::DataType::S8:
      return Dtype::Int8;
    case ffi::DataType::S16:
      return Dtype::Int16;
    case ffi::DataType::S32:
      return Dtype::Int32;
    case ffi::DataType::S64:
      return Dtype::Int64;
    case ffi::DataType::U8:
      return Dtype::UInt8;
    case ffi::DataType::U16:
      return Dtype::UInt16;
    case ffi::DataType::U32:
      return Dtype::UInt32;
    case ffi::DataType::U64:
      return Dtype::UInt64;
    case ffi::DataType::F16:
      return Dtype::Float16;
    case ffi::DataType::BF16:
      return Dtype::BFloat16;
    case ffi::DataType::F32:
      return Dtype::Float32;
    case ffi::DataType::F64:
      return Dtype::Float64;
    case ffi::DataType::C64:
      return Dtype::Complex64;
    default:
      return std::nullopt;
  }
}

// A view of XLA's buffer (dense and row-major: XLA gives custom calls the default layout), the
// |index|th of the call's |kind| ("input" or "output"), named so only in an error.
Array view_of(const ffi::AnyBuffer& buffer, Device device, const char* kind, size_t index) {
  const std::optional<Dtype> dtype = dtype_of(buffer.element_type());
  if (!dtype) {
    throw TypeError("[kjit.jax] " + std::string(kind) + " " + std::to_string(index) +
                    ": XLA element type " +
                    std::to_string(static_cast<int>(buffer.element_type())) +
                    ", which kjit kernels do not take");
  }
  const auto dims = buffer.dimensions();
  return Array::borrow(buffer.untyped_data(), std::span<const int64_t>(dims.begin(), dims.size()),
                       std::span<const int64_t>(), *dtype, device);
}

ffi::Error error_of(const std::exception& e) {
  const bool argument = dynamic_cast<const std::invalid_argument*>(&e) != nullptr;
  return ffi::Error(argument ? ffi::ErrorCode::kInvalidArgument : ffi::ErrorCode::kInternal,
                    e.what());
}

// Runs the launch registered under |key| on the call's buffers, on |device| and |stream|.
ffi::Error launch(int64_t key, ffi::RemainingArgs args, ffi::RemainingRets rets, Device device,
                  uintptr_t stream) {
  const BoundKernel* bound = registry().find(key);
  if (!bound) {
    return ffi::Error::InvalidArgument("[kjit.jax] no launch is registered under key " +
                                       std::to_string(key) +
                                       " (a program traced by kjit.jax.op in another process?)");
  }
  try {
    std::vector<Array> inputs;
    inputs.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      ffi::ErrorOr<ffi::AnyBuffer> buffer = args.get<ffi::AnyBuffer>(i);
      if (!buffer.has_value()) return buffer.error();
      inputs.push_back(view_of(*buffer, device, "input", i));
    }
    std::vector<Array> outputs;
    outputs.reserve(rets.size());
    for (size_t o = 0; o < rets.size(); ++o) {
      ffi::ErrorOr<ffi::Result<ffi::AnyBuffer>> buffer = rets.get<ffi::AnyBuffer>(o);
      if (!buffer.has_value()) return buffer.error();
      outputs.push_back(view_of(**buffer, device, "output", o));
    }
    LaunchOptions options;
    options.device = device;
    options.outputs = std::move(outputs);
    options.stream = stream;
    (*bound)(inputs, options);
  } catch (const std::exception& e) {
    return error_of(e);
  }
  return ffi::Error::Success();
}

ffi::Error launch_on_host(int64_t key, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return launch(key, args, rets, Device::cpu(), 0);
}

ffi::Error launch_on_cuda(void* stream, int32_t device_ordinal, int64_t key,
                          ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return launch(key, args, rets, Device::cuda(device_ordinal), reinterpret_cast<uintptr_t>(stream));
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    kjit_launch_on_host, launch_on_host,
    ffi::Ffi::Bind().Attr<int64_t>("key").RemainingArgs().RemainingRets());

XLA_FFI_DEFINE_HANDLER_SYMBOL(kjit_launch_on_cuda, launch_on_cuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<void*>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Attr<int64_t>("key")
                                  .RemainingArgs()
                                  .RemainingRets());

// A handler as jax.ffi.register_ffi_target takes it: a capsule with no name around its address
// (what jax.ffi.pycapsule makes).
nb::object capsule_of(XLA_FFI_Handler* handler) {
  PyObject* capsule = PyCapsule_New(reinterpret_cast<void*>(handler), nullptr, nullptr);
  if (!capsule) throw nb::python_error();
  return nb::steal(capsule);
}

}  // namespace

void init_jax_ffi(nb::module_& m) {
  m.def(
      "jax_ffi_version", [] { return std::string(KJIT_JAX_VERSION); }, kJaxFfiVersionDoc);
  m.def(
      "jax_ffi_targets",
      [] {
        nb::dict targets;
        targets["cpu"] = capsule_of(kjit_launch_on_host);
        targets["CUDA"] = capsule_of(kjit_launch_on_cuda);
        return targets;
      },
      nb::sig("def jax_ffi_targets() -> dict[str, object]"), kJaxFfiTargetsDoc);
  m.def(
      "jax_ffi_register",
      [](nb::handle bound) {
        const BoundKernel* b = bound_kernel_of(bound);
        if (!b) throw nb::type_error("[kjit.jax] expected a kjit.BoundKernel");
        return registry().add(*b);
      },
      nb::arg("bound"), nb::sig("def jax_ffi_register(bound: BoundKernel) -> int"),
      kJaxFfiRegisterDoc);
}

}  // namespace kjit::python
