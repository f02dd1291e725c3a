// The check, after each CPU launch, that the kernel wrote nothing just outside its outputs: an
// output in a block of kjit's has guard space on each side (block_guards.h), checked next to the
// data and put back. A small output kjit did not allocate (a NumPy array or torch tensor given
// in outputs=) has no room for guards — the bytes next to it are the allocator's own records —
// so the kernel writes a guarded copy of it instead, copied back after the launch: a write past
// it then damages neither the allocator's records nor the process. Larger ones are written in
// place, unchecked (see "Memory safety" in docs/design.md).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/block_guards.h"
#include "core/array_ref.h"
#include "support/small_vector.h"

namespace kjit::cpu {

/// The largest output kjit did not allocate that a launch writes through a guarded copy: two
/// copies of it cost about as much as the kernel writing it once.
inline constexpr size_t kMaxCopiedOutputBytes = size_t{1} << 20;

class OutputChecks {
 public:
  /// Before a launch reads |inputs| and writes |outputs|: finds the outputs in kjit's blocks,
  /// and gives the small others a guarded copy, unless the launch reaches their memory through
  /// another array too (an output that is also an input), whose writes the copy would part.
  OutputChecks(std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs);

  /// Copies the copies back and puts the guards back, silently, when restore was not called.
  ~OutputChecks();
  OutputChecks(const OutputChecks&) = delete;
  OutputChecks& operator=(const OutputChecks&) = delete;

  /// Where the kernel writes output |o|: its memory, or its copy's.
  void* data(size_t o) const { return data_[o]; }

  /// After the launch: copies the copies back, then says what the kernel wrote out of its
  /// outputs' bounds, of each output by the name |names| gives it ("outputs[0] ('out') ..."),
  /// or nothing. Puts the guards back.
  std::string restore(std::span<const std::string> names);

 private:
  struct Guarded {
    size_t output;  // its index among the launch's outputs
    GuardedBlock block;
    void* copied_from;  // the output's own memory, when block is its copy
  };
  SmallVector<Guarded, 4> guarded_;
  SmallVector<void*, 4> data_;
  std::vector<std::shared_ptr<void>> copies_;  // held through the launch
  bool restored_ = false;
};

}  // namespace kjit::cpu
