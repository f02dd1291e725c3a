#include "numpy.h"

#include <nanobind/stl/string.h>

#include "../convert.h"
#include "adapters.h"
#include "dlpack.h"

namespace kjit::python {
namespace {

bool claims(nb::handle, std::string_view module) { return module.starts_with("numpy"); }

bool is_scalar(nb::handle obj) {
  static const nb::object& generic = *new nb::object(attr_or_invalid("numpy", "generic"));
  return generic.is_valid() &&
         PyObject_TypeCheck(obj.ptr(), reinterpret_cast<PyTypeObject*>(generic.ptr()));
}

Array read_array(nb::handle obj, const ReadRequest& request) {
  if (std::optional<Array> a = import_array(obj, request)) return *std::move(a);
  // ml_dtypes' bfloat16 arrays export neither protocol: they are read through a uint16 view.
  if (!PyType_Check(obj.ptr()) && nb::hasattr(obj, "dtype") &&
      str_of(obj.attr("dtype")) == "bfloat16") {
    nb::object view = obj.attr("view")("uint16");
    if (std::optional<Array> a = import_array(view, request, Dtype::BFloat16)) {
      return *std::move(a);
    }
  }
  throw_unreadable(obj, request.param);
}

}  // namespace

nb::object to_numpy(const Array& array) {
  // NumPy holds host memory only: device outputs come back as a copy.
  if (array.device().type != DeviceType::CPU) return to_numpy(array.to(Device::cpu()));
  // No bfloat16 of NumPy's own: the bits are exported, then viewed as ml_dtypes' bfloat16.
  if (array.dtype() == Dtype::BFloat16) {
    return export_as<nb::numpy>(array, nb::dtype<uint16_t>())
        .attr("view")(nb::module_::import_("ml_dtypes").attr("bfloat16"));
  }
  return export_as<nb::numpy>(array, to_dlpack_dtype(array.dtype()));
}

const FrameworkAdapter kNumpyAdapter = {
    .claims = claims,
    .is_scalar = is_scalar,
    .to_array = read_array,
    .from_array = to_numpy,
};

}  // namespace kjit::python
