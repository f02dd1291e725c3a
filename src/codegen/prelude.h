// The device-side headers compiled in front of every kernel (prelude/*.h, embedded at build time).
#pragma once

#include <string_view>

#include "codegen/rewrite.h"
#include "codegen/kernel_spec.h"

namespace kjit::codegen {

/// The text of one prelude file (e.g. "msl.h"); empty when there is no such file.
std::string_view prelude_file(std::string_view name);

/// Every prelude file a kernel of |dialect| needs on |target|, concatenated in order;
/// |cooperative| adds the CPU's cooperative mode (Metal bodies with barriers or SIMD-group
/// operations).
std::string_view prelude_for(Dialect dialect, Target target, bool cooperative = false);

}  // namespace kjit::codegen
