// MLX arrays, read through DLPack or the buffer protocol (zero-copy) once evaluated, and made as
// copies: MLX builds an array only from memory it copies. MLX arrays are values that may share
// memory with other arrays, so a kernel never writes one in place. Recognised by their types'
// module, so mlx is imported only once its objects are seen.
#include <nanobind/stl/string.h>

#include <string>

#include "../convert.h"
#include "adapters.h"
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

}  // namespace

const FrameworkAdapter kMlxAdapter = {
    .claims = claims,
    .to_array = read_array,
    .from_array = from_array,
};

}  // namespace kjit::python
