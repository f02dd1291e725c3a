// The group memory a body declares: threadgroup (Metal) and __shared__ (CUDA) variables, in
// statements of their own. Region mode moves their declarations to the group's scope; a debug
// build checks every index into each of these arrays.
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

/// An array of group memory the body declares.
struct GroupArray {
  std::string name;
  size_t name_at = 0;    // the token of its name in the declaration
  bool dynamic = false;  // extern __shared__ T name[]: the launch's dynamic shared memory
};

/// "threadgroup array" or "__shared__ array": what the dialect calls a group array, for messages.
std::string group_array_kind(Dialect dialect);

/// The arrays of group memory body |t| declares, in order (scalars of group memory aside).
std::vector<GroupArray> group_arrays(const std::vector<Token>& t, Dialect dialect);

}  // namespace kjit::codegen
