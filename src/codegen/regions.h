// Region mode of the CPU backend, for bodies whose only waits are barriers that every thread of
// a group reaches together: the body is split at its barriers into regions, and each region runs
// as one loop over the group's threads (PoCL's work-item loops), instead of every thread being a
// coroutine that suspends at each barrier.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/lexer.h"
#include "codegen/rewrite.h"

namespace kjit::codegen {

/// How a body splits. Barriers may stand as statements of the body itself, or of the braced
/// body of a for or while loop at the body's top level whose header every thread evaluates
/// alike (it names only |uniform| names, literals and what it declares).
struct RegionPlan {
  struct Piece {
    enum class Kind { Region, LoopBegin, LoopEnd };
    Kind kind;
    size_t begin = 0, end = 0;  // tokens: a region's statements, or a loop's header up to its '{'
  };
  /// A variable of the body's top level declared in one region and used in another: one per
  /// thread, kept for the whole group.
  struct Carried {
    std::string name;
    size_t type_begin = 0, type_end = 0;  // its declaration's specifiers and type
  };
  std::vector<Piece> pieces;
  /// A barrier: the pieces before it end at it.
  struct Barrier {
    size_t before;  // the piece that follows it (pieces.size() at the end)
    int line;
  };
  std::vector<Barrier> barriers;                        // in order
  std::vector<std::pair<size_t, size_t>> group_memory;  // declarations moved to the group's scope
  std::vector<Carried> carried;
  bool returns = false;  // a thread may leave before the last region
};

/// The plan for |spec|'s body, or nothing when it needs the cooperative mode's coroutines:
/// SIMD-group or warp operations, waiting helpers, barriers that threads may reach apart, or code
/// the splitter does not follow. |names| says how the body names cooperative groups
/// (note_cooperative_groups of the body).
std::optional<RegionPlan> plan_regions(const KernelSpec& spec,
                                       const std::vector<std::string>& uniform,
                                       const WaitingHelpers& names);

/// The tokens of the body as a region sees them: group memory declarations and carried
/// variables' types blanked, carried variables read from their per-thread slots (indexed by
/// kjit_wi), and return marking the thread as gone (kjit_exited).
std::vector<Token> region_tokens(const KernelSpec& spec, const RegionPlan& plan,
                                 std::deque<std::string>& texts);

}  // namespace kjit::codegen
