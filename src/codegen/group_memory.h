// The group memory a kernel declares: threadgroup (Metal) and __shared__ (CUDA) variables, in
// statements of their own, in the body or at the header's top level. Region mode moves the
// body's declarations to the group's scope; a debug build checks every index into each of these
// arrays, and on the CPU records every access of each variable for its race checks.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "codegen/lexer.h"

namespace kjit::codegen {

/// Whether the statement starting at token |k| (before |end|) declares group memory:
/// "threadgroup float buf[32];", "__shared__ float s[64];", "extern __shared__ float dyn[];"
/// (no pointer, reference or initialiser; an alignment such as "__align__(16)" may come first).
bool declares_group_memory(const std::vector<Token>& t, size_t k, size_t end, Dialect dialect);

/// A variable of group memory: an array ("threadgroup float tile[32];") or not ("__shared__
/// int count;").
struct GroupVariable {
  std::string name;
  size_t name_at = 0;    // the token of its name in the declaration
  bool array = true;     // false: a variable of one value
  bool dynamic = false;  // extern __shared__ T name[]: the launch's dynamic shared memory
  bool in_header = false;
};

/// What the dialect calls a group variable, for messages: "threadgroup array", "__shared__
/// variable"...
std::string group_variable_kind(Dialect dialect, bool array);

/// The group variables |t| declares, in order: everywhere in a body, at the top level of a
/// header (|top_level_only|), whose functions' own are out of the body's sight.
std::vector<GroupVariable> group_variables(const std::vector<Token>& t, Dialect dialect,
                                           bool top_level_only = false);

/// The group variables a kernel's body can use: the body's, then the header's.
std::vector<GroupVariable> group_variables(const KernelSpec& spec);

}  // namespace kjit::codegen
