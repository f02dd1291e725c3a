// The binding's only calls into the CUDA backend: the block cache that a bound call's made
// outputs are leased from, and waiting on a stream. They sit here alone, behind declarations
// that name no backend type, until the core offers them through its backend interface.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kjit::python {

/// Device memory lent by the block cache: |ptr|, until end_lease(|block|).
struct LeasedBlock {
  void* ptr;
  void* block;
};

/// |bytes| of memory on CUDA device |device| for work on |stream|; throws OutOfMemory.
LeasedBlock lease(int device, size_t bytes, uintptr_t stream);
/// Gives a lease's memory back to the block cache. Never throws: it runs when arrays are freed.
void end_lease(void* block) noexcept;

/// Waits until the work queued on |stream| of CUDA device |device| is done.
void synchronize(int device, uintptr_t stream);

}  // namespace kjit::python
