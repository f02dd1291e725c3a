// JAX arrays, read and made through DLPack. JAX reads imported memory without waiting on the
// exporter's stream, and its work is ordered on no stream kjit can learn: a call runs on the
// legacy stream, which its GPU inputs are exported for, and waits for the launch before
// returning. A tracer (inside jax.jit, grad, vmap) has no data to read: kjit.jax.op runs a
// kernel there.
#include "../convert.h"
#include "adapters.h"
#include "dlpack.h"

namespace kjit::python {
namespace {

bool claims(nb::handle, std::string_view module) { return module.starts_with("jax"); }

// True when |obj| says through __dlpack_device__ that it lives on a CUDA device.
bool on_cuda(nb::handle obj) {
  if (!nb::hasattr(obj, "__dlpack_device__")) return false;
  nb::object device = obj.attr("__dlpack_device__")();
  return is_list(device) && nb::len(device) == 2 &&
         PyLong_AsLong(nb::object(device[0]).ptr()) == nb::device::cuda::value;
}

// Whether |obj| is a JAX tracer: an instance of a class named Tracer, in JAX's modules (its
// type was claimed by this adapter).
bool is_tracer(nb::handle obj) {
  PyObject* mro = Py_TYPE(obj.ptr())->tp_mro;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    if (std::string_view(reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i))->tp_name) ==
        "Tracer") {
      return true;
    }
  }
  return false;
}

Array read_array(nb::handle obj, const ReadRequest& request) {
  if (is_tracer(obj)) {
    throw TypeError(request.param.str() +
                    ": a JAX tracer cannot be read here: use kjit.jax.op(...) to run a kernel "
                    "inside jax.jit, grad or vmap");
  }
  if (request.dlpack_stream && on_cuda(obj)) {
    // Export for work on our stream: JAX makes it wait for the array instead of blocking the
    // host until the array is ready.
    try {
      nb::object capsule = obj.attr("__dlpack__")(nb::arg("stream") = request.dlpack_stream);
      nb::ndarray<> rw;
      if (import_ndarray(capsule, rw)) return from_ndarray(rw, std::nullopt, request.param);
    } catch (const nb::python_error&) {
    }
    // Otherwise the usual export, which waits until the array is ready.
  }
  if (std::optional<Array> a = import_array(obj, request)) return *std::move(a);
  throw_unreadable(obj, request.param);
}

nb::object from_array(const Array& array) {
  return export_as<nb::jax>(array, to_dlpack_dtype(array.dtype()));
}

}  // namespace

const FrameworkAdapter kJaxAdapter = {
    .claims = claims,
    .to_array = read_array,
    .from_array = from_array,
    .queues_on_legacy_stream = true,
    .after_launch = AfterLaunch::Synchronize,
};

}  // namespace kjit::python
