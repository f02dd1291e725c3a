// Pointers a body derives from its arrays, for a debug build to check their element accesses
// too: a declaration whose initialiser is an input or output, moved or not ("const float* row =
// inp + k;", "float* dst = &out[i];", "auto p = out;").
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "codegen/lexer.h"

namespace kjit::codegen {

struct DerivedPointer {
  std::string_view name;
  size_t array;  // the array's number, as |array_named| gives it
};

/// The pointers |tokens| declare so, each from the array |array_named| finds by name. A name
/// the body declares more than once (in two scopes, or as something else too) is left out: its
/// accesses could not all be told apart.
std::vector<DerivedPointer> derived_pointers(
    const std::vector<Token>& tokens,
    const std::function<std::optional<size_t>(std::string_view)>& array_named);

}  // namespace kjit::codegen
