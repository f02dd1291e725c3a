#include <nanobind/nanobind.h>

#include "errors_binding.h"
#include "jax_ffi.h"

namespace nb = nanobind;

namespace kjit::python {
void init_array(nb::module_& m);
void init_kernel(nb::module_& m);
void init_status(nb::module_& m);
}  // namespace kjit::python

NB_MODULE(_kjit, m) {
  m.doc() = "kjit: GPU kernels written as a body string, run on NVIDIA GPUs or the CPU.";
  // Objects that others keep to the end (a daemon thread's frames, torch.compile's caches) are
  // alive when nanobind counts its instances at exit; it would print them as leaks of kjit's.
  nb::set_leak_warnings(false);
  kjit::python::init_errors(m);
  kjit::python::init_array(m);
  kjit::python::init_status(m);
  kjit::python::init_kernel(m);
  kjit::python::init_jax_ffi(m);
}
