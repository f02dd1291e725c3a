#include "adapter.h"

#include <nanobind/stl/string.h>

#include <string>
#include <unordered_map>

namespace kjit::python {

// Each library's adapter, defined in its own file.
extern const FrameworkAdapter kKjitAdapter;
extern const FrameworkAdapter kNumpyAdapter;
extern const FrameworkAdapter kTorchAdapter;
extern const FrameworkAdapter kCupyAdapter;
extern const FrameworkAdapter kJaxAdapter;
extern const FrameworkAdapter kDlpackAdapter;

namespace {

// Asked in this order; the DLPack adapter, last, claims every object (another library's, or
// none's). MLX arrays, read through DLPack today, would get an adapter before it.
const FrameworkAdapter* const kAdapters[] = {&kKjitAdapter, &kNumpyAdapter, &kTorchAdapter,
                                             &kCupyAdapter, &kJaxAdapter,   &kDlpackAdapter};

}  // namespace

const FrameworkAdapter& framework_of(nb::handle obj) {
  // Called with the GIL held, which guards the map; a call's arrays are mostly of the type the
  // last one had.
  static PyTypeObject* last_type = nullptr;
  static const FrameworkAdapter* last = nullptr;
  static auto& known = *new std::unordered_map<PyTypeObject*, const FrameworkAdapter*>;
  PyTypeObject* type = Py_TYPE(obj.ptr());
  if (type == last_type) return *last;
  if (auto it = known.find(type); it != known.end()) {
    last_type = type;
    return *(last = it->second);
  }
  std::string module;
  if (nb::hasattr(obj.type(), "__module__")) {
    nb::object m = obj.type().attr("__module__");
    if (nb::isinstance<nb::str>(m)) module = nb::cast<std::string>(m);
  }
  const FrameworkAdapter* found = &kDlpackAdapter;
  for (const FrameworkAdapter* adapter : kAdapters) {
    if (adapter->claims(obj.type(), module)) {
      found = adapter;
      break;
    }
  }
  // Remembered by address, so kept alive.
  if (!found->remember_types) return *found;
  if (known.emplace(type, found).second) Py_INCREF(type);
  last_type = type;
  return *(last = found);
}

const FrameworkAdapter& no_framework() { return kKjitAdapter; }

}  // namespace kjit::python
