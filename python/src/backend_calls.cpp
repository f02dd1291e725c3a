#include "backend_calls.h"

#include "backend/cuda/cuda_backend.h"

namespace kjit::python {

LeasedBlock lease(int device, size_t bytes, uintptr_t stream) {
  const cuda::Lease lease = cuda::lease(device, bytes, stream);
  return {.ptr = lease.ptr, .block = lease.block};
}

void end_lease(void* block) noexcept {
  cuda::end_lease(static_cast<cuda::BlockCache::Block*>(block));
}

void synchronize(int device, uintptr_t stream) { cuda::synchronize(device, stream); }

}  // namespace kjit::python
