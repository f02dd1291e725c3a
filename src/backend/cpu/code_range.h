// Where a loaded kernel's machine code lies in the process.
#pragma once

#include <cstdint>

namespace kjit::cpu {

/// The addresses [begin, end) of a loaded kernel's executable segment.
struct CodeRange {
  uintptr_t begin = 0, end = 0;
};

}  // namespace kjit::cpu
