// The backend of each device type: the one place that names them all.
#include "core/backend.h"

#include "backend/cpu/cpu_backend.h"
#if KJIT_WITH_CUDA
#include "backend/cuda/cuda_backend.h"
#else
#include "backend/no_cuda/no_cuda_backend.h"
#endif

namespace kjit {

const Backend& backend_for(DeviceType type) {
  if (type == DeviceType::CPU) return cpu::backend();
#if KJIT_WITH_CUDA
  return cuda::backend();
#else
  return no_cuda::backend();
#endif
}

}  // namespace kjit
