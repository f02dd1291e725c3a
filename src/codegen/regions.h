// Region mode of the CPU backend, for bodies whose waits are barriers that every thread of a
// group reaches together and SIMD-group or warp operations that the lanes of a simdgroup reach
// together: the body is split at them into regions, and each region runs as one loop over the
// group's threads (PoCL's work-item loops), instead of every thread being a coroutine that
// suspends at each wait. A SIMD-group operation between two regions reads every lane's operand
// from a slot array, combines the lanes of each simdgroup there, and the next region reads each
// lane's result from its slot (the warp-level collapsing of COX and CuPBoP).
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/lexer.h"
#include "codegen/rewrite.h"

namespace kjit::codegen {

/// How a body splits. Barriers may stand as statements of the body itself, or of the body of a
/// for or while loop whose header every thread evaluates alike (it names only |uniform| names,
/// literals and what it declares), nested or not. A SIMD-group or warp operation may stand
/// anywhere such a barrier may, as a call in a statement (or in an if's condition) that every
/// lane evaluates: not after ?, && or ||, nor in a block of its own. A loop that does not wait
/// but whose header every thread evaluates alike may be the group's loop too, so that the loop
/// over the threads inside it vectorises.
struct RegionPlan {
  struct Piece {
    enum class Kind { Region, LoopBegin, LoopEnd, Operation };
    Kind kind;
    // Tokens: a region's statements, a loop's header up to its body, or an operation's call
    // (which also lies in the region after it, where its result replaces it).
    size_t begin = 0, end = 0;
  };
  /// A variable declared at the top of a region (of the body or of a loop's body) and used in
  /// another piece: one per thread, kept for the whole group in a slot array. A region works on
  /// a local copy of its thread's slot, stored back at the region's end, so that its updates are
  /// a register's and the loop over the threads vectorises (unless copies_slots is false).
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
  /// A const declaration that regions use across a wait and can compute again for their thread
  /// (from the index variables and uniform values, "const uint t = thread_index_in_threadgroup"):
  /// each piece that uses it declares it again rather than reading a slot, so that indexing
  /// with it stays contiguous and the loops vectorise.
  struct Recomputed {
    size_t begin = 0, end = 0;   // tokens: the whole declaration, its ';' included
    std::vector<size_t> pieces;  // the pieces that declare it again, in order
  };
  std::vector<Recomputed> recomputed;  // in the text's order
  bool returns = false;                // a thread may leave before the last region
  bool operations = false;             // some pieces are SIMD-group or warp operations
  /// Whether regions work on copies of the carried variables' slots. Not where a carried
  /// variable or group memory may hold an address, which could be a copy's: then every region
  /// works on the slots themselves, which outlive it.
  bool copies_slots = true;
};

/// The plan for |spec|'s body, or, when it needs the cooperative mode's coroutines, why:
/// waiting helpers, barriers or operations that threads may reach apart, or code the splitter
/// does not follow. |names| says how the body names cooperative groups
/// (note_cooperative_groups of the body).
struct RegionPlanning {
  std::optional<RegionPlan> plan;
  std::string refusal;  // when there is no plan: the first thing that kept the body whole
};
RegionPlanning plan_regions(const KernelSpec& spec, const std::vector<std::string>& uniform,
                            const WaitingHelpers& names);

/// The tokens of the body as a region sees them: group memory declarations and carried
/// variables' types blanked and carried variables named kjit_carried_<name> (what each piece
/// declares from the variable's slot, kjit_slot_<name>[kjit_wi]), and return marking the thread
/// as gone (kjit_exited).
std::vector<Token> region_tokens(const KernelSpec& spec, const RegionPlan& plan,
                                 std::deque<std::string>& texts);

/// |tokens| (region_tokens) with the call of each operation of |plan| replaced by its result
/// slot: kjit_op<N>_out[kjit_wi], N counting the plan's operations from 0.
std::vector<Token> with_operation_results(std::vector<Token> tokens, const RegionPlan& plan,
                                          std::deque<std::string>& texts);

}  // namespace kjit::codegen
