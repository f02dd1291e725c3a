// The CUDA device type's backend in a build without CUDA support: no devices, and every use
// says why.
#pragma once

#include "core/backend.h"

namespace kjit::no_cuda {

const Backend& backend();

}  // namespace kjit::no_cuda
