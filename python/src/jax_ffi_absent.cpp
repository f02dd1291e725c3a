// kjit's XLA FFI entry points in a build without jax: each says how to get the handlers.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <stdexcept>
#include <string>

#include "jax_ffi.h"

namespace nb = nanobind;

namespace kjit::python {
namespace {

[[noreturn]] void refuse() {
  throw std::runtime_error(
      "[kjit.jax] kjit was built without JAX's XLA FFI headers (jax was not importable by the "
      "Python that configured the build): install jax, then build kjit again from a fresh "
      "configure (cmake -S . -B build, or pip install without a cached wheel)");
}

}  // namespace

void init_jax_ffi(nb::module_& m) {
  m.def(
      "jax_ffi_version", [] { return std::string(); }, kJaxFfiVersionDoc);
  m.def(
      "jax_ffi_targets", []() -> nb::dict { refuse(); },
      nb::sig("def jax_ffi_targets() -> dict[str, object]"), kJaxFfiTargetsDoc);
  m.def(
      "jax_ffi_register", [](nb::handle) -> int64_t { refuse(); }, nb::arg("bound"),
      nb::sig("def jax_ffi_register(bound: BoundKernel) -> int"), kJaxFfiRegisterDoc);
}

}  // namespace kjit::python
