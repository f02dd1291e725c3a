// The bound kernel inside a kjit.BoundKernel object, for the binding's own modules.
#pragma once

#include <kjit/kjit.h>
#include <nanobind/nanobind.h>

namespace kjit::python {

/// |obj|'s bound kernel when it is a kjit.BoundKernel, else nullptr.
const BoundKernel* bound_kernel_of(nanobind::handle obj);

}  // namespace kjit::python
