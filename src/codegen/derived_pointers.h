// Pointers a body derives from its arrays, for a debug build to check their element accesses
// too: a declaration whose initialiser is an input or output, moved or not ("const float* row =
// inp + k;", "float* dst = &out[i];", "auto p = out;").
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "codegen/lexer.h"

namespace kjit::codegen {

/// The pointers |tokens| declare so, by name, each with the number of the array |array_named|
/// finds by name. A name the body declares more than once (in two scopes, or as something else
/// too) is left out: its accesses could not all be told apart; so is one the body assigns
/// anything but an address in the same array ("p = out;" after "auto p = inp;").
std::unordered_map<std::string_view, size_t> derived_pointers(
    const std::vector<Token>& tokens,
    const std::function<std::optional<size_t>(std::string_view)>& array_named);

}  // namespace kjit::codegen
