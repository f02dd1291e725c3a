// Host memory for arrays. Large blocks are kept after release and reused for the next request
// of the same size, so that a loop producing fresh outputs does not pay the kernel's page
// faults on every call (the cap is KJIT_CPU_POOL_BYTES, default 1 GiB). Every block has guard
// space on each side of its data (block_guards.h), which launches check.
#pragma once

#include <cstddef>
#include <memory>

namespace kjit::cpu {

/// At least |bytes| of 64-byte-aligned memory, released when the last owner goes, with guards
/// around exactly |bytes|: of a quarter of |bytes| (256 bytes to 16 KiB) on each side, or of 16
/// KiB whatever the size with |full_guards| (for memory kept and written by many launches).
std::shared_ptr<void> host_allocate(size_t bytes, bool full_guards = false);

}  // namespace kjit::cpu
