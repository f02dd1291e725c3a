// kjit's own objects: a kjit.Array is taken as it is, kjit's other objects are read as any
// DLPack producer's. This adapter also serves the calls whose inputs include no array: their
// outputs are kjit.Array.
#include "adapters.h"
#include "dlpack.h"

namespace kjit::python {
namespace {

bool claims(nb::handle, std::string_view module) { return module.starts_with("kjit"); }

Array read_array(nb::handle obj, const ReadRequest& request) {
  if (nb::isinstance<Array>(obj)) return nb::cast<const Array&>(obj);
  if (std::optional<Array> a = import_array(obj, request)) return *std::move(a);
  throw_unreadable(obj, request.param);
}

nb::object from_array(const Array& array) { return nb::cast(array); }

}  // namespace

const FrameworkAdapter kKjitAdapter = {
    .claims = claims,
    .to_array = read_array,
    .from_array = from_array,
};

}  // namespace kjit::python
