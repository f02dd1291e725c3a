// Loops of a cooperative body that wait, marked so that each thread on the CPU counts its
// iterations (kjit::coop::loop_mark): lanes of a simdgroup in different iterations of a loop
// must not meet at one of its operations, as they do not on a GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/lexer.h"

namespace kjit::codegen {

/// Text the rewriter emits around tokens of a coroutine's body: before[i] before token i (and
/// before[tokens.size()] at the end), and instead[i], when set, in place of token i. Braces and
/// statements are added within lines, so that the line structure stays the same.
struct LoopMarks {
  std::vector<std::string> before;
  std::vector<std::optional<std::string>> instead;
};

/// The marks for every loop (for, range for, while, do-while) of |tokens| whose header or body
/// holds a call that waits (waits[i]: token i names one), outside lambdas and local classes.
/// A loop counts an iteration where the next one begins, after the step of a for (a while
/// becomes a for with an empty init), and on entering the body of a range for or a do-while, so
/// that an operation in a loop's condition comes after the previous iteration's body. The
/// unroll hints right before a marked loop (#pragma lines, _Pragma operators) are blanked: the
/// mark comes between them and the loop.
LoopMarks mark_waiting_loops(const std::vector<Token>& tokens, const std::vector<bool>& waits);

}  // namespace kjit::codegen
