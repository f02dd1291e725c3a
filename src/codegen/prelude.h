// The device-side headers compiled in front of every kernel (prelude/, embedded at build time).
#pragma once

#include <string_view>

#include "codegen/cpu_mode.h"
#include "codegen/kernel_spec.h"
#include "codegen/rewrite.h"

namespace kjit::codegen {

/// The text of the entry header prelude/entry/|name|.h (e.g. "msl_on_cpu_loop") with the prelude
/// headers it includes in place, in the order the compiler reads them; empty when there is no
/// such entry.
std::string_view prelude_entry(std::string_view name);

/// The prelude a kernel of |dialect| needs on |target|: one entry header per combination, and on
/// the CPU per way its threads run (|mode|).
std::string_view prelude_for(Dialect dialect, Target target, CpuMode mode = CpuMode::Loop);

}  // namespace kjit::codegen
