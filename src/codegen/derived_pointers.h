// Pointers a body derives from its arrays, for a debug build to check their element accesses
// too: a declaration whose initialiser is an input or output, moved or not ("const float* row =
// inp + k;", "float* dst = &out[i];", "auto p = out;"), and pointers made in place, cast or
// moved, where an access uses them ("((device float4*)out)[i]", "*(out + i)").
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "codegen/lexer.h"

namespace kjit::codegen {

/// The number of the array a name is, if it is one.
using ArrayNamed = std::function<std::optional<size_t>(std::string_view)>;

/// The pointers |tokens| declare so, by name, each with the number of the array |array_named|
/// finds by name. A name the body declares more than once (in two scopes, or as something else
/// too) is left out: its accesses could not all be told apart; so is one the body assigns
/// anything but an address in the same array ("p = out;" after "auto p = inp;").
std::unordered_map<std::string_view, size_t> derived_pointers(const std::vector<Token>& tokens,
                                                              const ArrayNamed& array_named);

/// A pointer made in place, rather than declared, from an array or a derived pointer, and
/// dereferenced or indexed there: cast ("((device float4*)out)[i]", "*(float4*)(inp + k)"),
/// reinterpreted ("*reinterpret_cast<const float4*>(inp + k)") or moved ("*(out + i)"); or
/// given to an atomic operation, which accesses the element it points at ("atomicAdd(out + i,
/// v)", "atomic_fetch_add_explicit(out, 1, memory_order_relaxed)").
struct PointerInPlace {
  enum class How { Cast, Reinterpret, Moved, Atomic };
  How how;
  size_t at;     // the cast's '(', the reinterpret_cast, or the name moved
  size_t close;  // a cast's ')'
  // A cast's operand when it is not in parentheses, a name alone ("(float4*)out") or an
  // element's address ("(float4*)&out[i]"), or an atomic operation's first argument: its
  // first and last tokens; else none.
  size_t operand;
  size_t operand_last;
  size_t array;  // the number of the array it points into
};

/// The pointers |tokens| make in place from the arrays (or pointers) |array_named| finds, in
/// order.
std::vector<PointerInPlace> pointers_made_in_place(const std::vector<Token>& tokens,
                                                   const ArrayNamed& array_named);

}  // namespace kjit::codegen
