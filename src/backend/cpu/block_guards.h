// Guard space around the data of kjit's host blocks: bytes of a fixed pattern before and after
// it, which a kernel that writes out of its output's bounds overwrites instead of memory the
// process uses, and after a launch is checked and put back. The last bytes before the data are a
// header that says so: any pointer can be asked whether it starts such a block, reading only
// memory in the same page as the byte it points at.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace kjit::cpu {

/// One block's data and the guard space on each side of it.
struct GuardedBlock {
  unsigned char* data;
  size_t bytes;  // of data
  size_t front;  // guard bytes before data, the header included
  size_t back;   // guard bytes after data + bytes
};

/// The header's size: the front guard is at least this, and a block's data never starts on a
/// page boundary, so that the header is always in the data's page.
inline constexpr size_t kGuardHeaderBytes = 24;
/// The smallest page size of the targets: memory within one such aligned span as a byte the
/// process may read may be read too.
inline constexpr size_t kSmallestPage = 4096;

/// Fills |block|'s guard space and writes its header.
void write_guards(const GuardedBlock& block);
/// Clears |block|'s header, so that memory that held it, reused, is not taken for a block.
void erase_guard_header(const GuardedBlock& block);

/// The block whose data starts at |data|, when kjit's allocator made one there.
std::optional<GuardedBlock> find_guarded_block(const void* data);

/// Whether the guard bytes next to |block|'s data on each side are as written: any write that
/// runs on from the data's edge changes them. Cheap enough for every launch.
bool guards_near_data_intact(const GuardedBlock& block);

/// How far a kernel wrote into a block's guards, in bytes from the data's edge.
struct GuardDamage {
  size_t before = 0;  // of the data's start
  size_t after = 0;   // of the data's end
  bool any() const { return before != 0 || after != 0; }
};

/// Measures what was written into |block|'s guards and writes them again.
GuardDamage restore_guards(const GuardedBlock& block);

}  // namespace kjit::cpu
