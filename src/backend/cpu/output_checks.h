// The check, after each CPU launch, that the kernel wrote nothing just outside its outputs: an
// output in a block of kjit's has guard space on each side (block_guards.h), checked next to the
// data and put back. Memory kjit did not allocate (a NumPy array, a torch tensor given as an
// output) has none, and is not checked: the bytes next to it are the allocator's own records,
// which other allocations change while the kernel runs (see "Memory safety" in docs/design.md).
#pragma once

#include <span>
#include <string>

#include "backend/cpu/block_guards.h"
#include "core/array_ref.h"
#include "support/small_vector.h"

namespace kjit::cpu {

class OutputChecks {
 public:
  /// Finds, before a launch writes |outputs|, those in kjit's blocks.
  explicit OutputChecks(std::span<const ArrayRef> outputs);

  /// After the launch: what the kernel wrote out of its outputs' bounds, said of each output by
  /// the name |names| gives it ("outputs[0] ('out') ..."), or empty. Puts the guards back.
  std::string restore(std::span<const std::string> names);

 private:
  struct Guarded {
    size_t output;  // its index among the launch's outputs
    GuardedBlock block;
  };
  SmallVector<Guarded, 4> guarded_;
};

}  // namespace kjit::cpu
