// Dialect rewriting, token by token: turns a Metal body into C++ the backend compiles, and
// rejects the features a target cannot run, naming the feature and its line.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/lexer.h"

namespace kjit::codegen {

enum class Target { Cpu, Cuda };

/// Where a piece of user text came from, for messages.
enum class TextOrigin { Source, Header };

/// Throws kjit::ValueError when |tokens| use a feature the dialect lacks (textures, simdgroup
/// matrices...), naming it and its line.
void check_supported(const std::vector<Token>& tokens, Dialect dialect, TextOrigin origin);

/// Throws kjit::ValueError when the braces of |tokens| do not pair up: a '}' that closes what
/// the text did not open would end kjit's own function around it (texts whose macros hold
/// braces, or with #if, are left to the compiler), or when a line continuation joins two tokens
/// outside a directive (the compiler would see another token than the checks do).
void check_braces_pair_up(const std::vector<Token>& tokens, Dialect dialect, TextOrigin origin);

/// The functions of a header that wait for other threads: they call barriers, SIMD-group or warp
/// operations, or each other. On the CPU they become coroutines the body awaits.
struct WaitingHelpers {
  struct Definition {
    size_t type_begin, name, body_begin, body_end;  // token indices: specifiers, name, { and }
    bool member;                                    // defined in a class
  };
  std::vector<std::string> names;       // in order of definition
  std::vector<std::string> members;     // those defined in a class: obj.f(...) calls them too
  std::vector<Definition> definitions;  // in order of appearance
  // How the texts name cooperative_groups, for its free functions reduce and sync: the
  // namespace aliases they declare, and which of the two they may call unqualified (both after
  // `using namespace cooperative_groups;`, one after `using cooperative_groups::reduce;`).
  std::vector<std::string> cooperative_aliases;
  std::vector<std::string> cooperative_unqualified;

  /// Adds |name| to names, and to members when it is defined in a class, once each.
  void add(const std::string& name, bool member);
  /// Whether a call of |name|, plainly or |through_object| (obj.f(...)), calls a helper here; in
  /// time independent of how many there are.
  bool lists(std::string_view name, bool through_object) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  using Names = std::unordered_set<std::string, Hash, std::equal_to<>>;
  Names listed_, listed_members_;  // names and members again, for lookups
};

/// Adds to |helpers| how |tokens| name cooperative_groups (aliases, using directives and
/// declarations).
void note_cooperative_groups(const std::vector<Token>& tokens, WaitingHelpers& helpers);

/// Throws kjit::ValueError when a macro of |header| that |body| or the header's code uses waits
/// (a barrier, a SIMD-group or warp operation, or a call of one of |helpers|, which are
/// find_waiting_helpers(header)'s and so know the header's names for cooperative groups): on
/// the CPU the body cannot await what such a macro expands to.
void check_header_macros_do_not_wait(const std::vector<Token>& header,
                                     const std::vector<Token>& body, Dialect dialect,
                                     const WaitingHelpers& helpers);

/// Throws kjit::ValueError when |tokens| wait (a barrier, a SIMD-group or warp operation, or a
/// call of one of |helpers|) inside a lambda, or in the body inside a function of a local class:
/// on the CPU such a function cannot suspend its thread.
void check_waits_are_suspendable(const std::vector<Token>& tokens, Dialect dialect,
                                 TextOrigin origin, const WaitingHelpers& helpers);

/// The text of |tokens| rewritten for |target|. Line structure is kept exactly, so that line N of
/// the result is line N of the input. With |coroutine| (a body in the CPU's cooperative mode),
/// barriers, SIMD-group and warp operations are co_awaited and return becomes co_return;
/// |dynamic_shared| is the size of CUDA's extern __shared__ memory on the CPU.
/// |helpers| names the header's helpers that wait: calls to them are co_awaited too.
std::string rewrite(const std::vector<Token>& tokens, Dialect dialect, Target target,
                    bool coroutine = false, int dynamic_shared = 0,
                    const WaitingHelpers* helpers = nullptr);

WaitingHelpers find_waiting_helpers(const std::vector<Token>& header, Dialect dialect);

/// The header rewritten for |target|; in the CPU's cooperative mode each of |helpers| returns
/// kjit::coop::subtask<T> instead of T and its body is a coroutine. Throws kjit::ValueError for a
/// waiting helper whose return type is deduced.
std::string rewrite_header(const std::vector<Token>& header, Dialect dialect, Target target,
                           const WaitingHelpers& helpers);

/// Whether token |i| names a barrier, a SIMD-group or warp operation, or a collective of
/// cooperative groups: a call a body on the CPU waits at. |names| says how the text names
/// cooperative groups (note_cooperative_groups).
bool is_waiting_call(const std::vector<Token>& tokens, size_t i, Dialect dialect,
                     const WaitingHelpers& names);

/// Whether token |i|, a waiting call (is_waiting_call), is a SIMD-group, quad-group or warp
/// operation of the dialect's own (not a barrier, a SIMD-group matrix operation, a member or
/// collective of cooperative groups, nor __match_all_sync, which writes through a pointer):
/// one the CPU's region mode combines in slots.
bool is_lane_operation(const std::vector<Token>& tokens, size_t i, Dialect dialect);

/// Whether a body calls barriers, SIMD-group or warp operations, or |helpers| (the CPU's
/// cooperative mode).
bool uses_suspending_calls(const std::vector<Token>& tokens, Dialect dialect,
                           const WaitingHelpers* helpers = nullptr);

/// Whether Metal text names SIMD-group matrices (their types or functions): on the CPU they find
/// their lane through the running thread, which cooperative mode keeps.
bool uses_simdgroup_matrices(const std::vector<Token>& tokens);

}  // namespace kjit::codegen
