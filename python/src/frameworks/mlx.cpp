// MLX arrays, read through DLPack or the buffer protocol (zero-copy) once evaluated, and made as
// copies: MLX builds an array only from memory it copies. MLX arrays are values that may share
// memory with other arrays, so a kernel never writes one in place. MLX's streams and devices
// (mx.cpu, mx.gpu, mx.Device, mx.Stream) name where a call runs, as MLX code passes them.
// Recognised by their types' module, so mlx is imported only once its objects are seen.
#include <nanobind/stl/string.h>

#include <string>

#include "../convert.h"
#include "adapters.h"
#include "core/backend.h"
#include "dlpack.h"

namespace kjit::python {
namespace {

bool claims(nb::handle, std::string_view module) { return module.starts_with("mlx."); }

// mlx.core's |name|. Asked only once an MLX object exists, so mlx is imported already; callers
// keep what it returns.
nb::object mlx_attr(const char* name) { return nb::module_::import_("mlx.core").attr(name); }

Array read_array(nb::handle obj, const ReadRequest& request) {
  static const nb::object& array_type = *new nb::object(mlx_attr("array"));
  if (!nb::isinstance(obj, array_type)) throw_unreadable(obj, request.param);
  if (request.writable) {
    throw TypeError(request.param.str() +
                    ": an MLX array cannot be written in place (MLX arrays are values, whose "
                    "memory other arrays may share); leave outputs= out and use the arrays the "
                    "call returns");
  }
  // MLX is lazy: an array's memory holds its value only once it is evaluated.
  static const nb::object& eval = *new nb::object(mlx_attr("eval"));
  eval(obj);
  if (std::optional<Array> a = import_array(obj, request)) return *std::move(a);
  throw_unreadable(obj, request.param);
}

// MLX's dtype object for |d|, looked up once per dtype.
nb::handle mlx_dtype(Dtype d) {
  static nb::object* made[kNumDtypes] = {};
  nb::object*& slot = made[static_cast<int>(d)];
  if (!slot) {
    const std::string name = d == Dtype::Bool ? "bool_" : std::string(dtype_name(d));
    slot = new nb::object(mlx_attr(name.c_str()));
  }
  return *slot;
}

// An MLX array with |array|'s values: a copy, from a memoryview of host memory (mx.array copies
// what it is given). The dtype is passed, since MLX would make float32 of float64; bfloat16,
// which has no buffer format, is copied as its bits and viewed.
nb::object from_array(const Array& array) {
  if (array.device().type != DeviceType::CPU) return from_array(array.to(Device::cpu()));
  static const nb::object& make = *new nb::object(mlx_attr("array"));
  if (array.dtype() == Dtype::BFloat16) {
    nb::object bits = export_as<nb::memview>(array, nb::dtype<uint16_t>());
    return make(bits, nb::arg("dtype") = mlx_dtype(Dtype::UInt16))
        .attr("view")(mlx_dtype(Dtype::BFloat16));
  }
  nb::object view = export_as<nb::memview>(array, to_dlpack_dtype(array.dtype()));
  return make(view, nb::arg("dtype") = mlx_dtype(array.dtype()));
}

// |stream| is one of MLX's objects.
std::optional<Device> device_of(nb::handle stream, const Param& param) {
  static const nb::object& stream_type = *new nb::object(mlx_attr("Stream"));
  static const nb::object& device_type = *new nb::object(mlx_attr("Device"));
  static const nb::object& kind_type = *new nb::object(mlx_attr("DeviceType"));
  static const nb::object& cpu = *new nb::object(mlx_attr("cpu"));
  static const nb::object& gpu = *new nb::object(mlx_attr("gpu"));
  nb::object place = nb::borrow(stream);
  if (nb::isinstance(place, stream_type)) place = place.attr("device");
  nb::object device;  // an mx.Device, whose index Python does not show: compared instead
  if (nb::isinstance(place, device_type)) {
    device = place;
    place = place.attr("type");
  }
  // Compared only as a DeviceType: an mx.array's == is elementwise.
  const bool is_kind = nb::isinstance(place, kind_type);
  if (is_kind && place.equal(cpu)) return Device::cpu();
  if (is_kind && place.equal(gpu)) {
    // MLX's GPU here is kjit's default one.
    if (default_device().type != DeviceType::CUDA) {
      throw ValueError(param.str() + ": " + str_of(stream) +
                       " asks for a GPU, and none works here (python -m kjit doctor says why); "
                       "pass mx.cpu to run on the CPU");
    }
    if (!device.is_valid()) return Device::cuda();
    const int count = backend_for(DeviceType::CUDA).device_count();
    for (int i = 0; i < count; ++i) {
      if (device.equal(device_type(gpu, i))) return Device::cuda(i);
    }
    throw ValueError(param.str() + ": " + str_of(stream) + " asks for a GPU beyond the " +
                     std::to_string(count) + " this machine has");
  }
  throw TypeError(param.str() +
                  ": expected an MLX stream or device (mx.cpu, mx.gpu, an mx.Device or an "
                  "mx.Stream), or a CUDA stream, got " +
                  describe(stream));
}

}  // namespace

const FrameworkAdapter kMlxAdapter = {
    .claims = claims,
    .to_array = read_array,
    .from_array = from_array,
    .device_of_stream = device_of,
};

}  // namespace kjit::python
