// A debug build's launch (CompileOptions::debug). Its kernel indexes its arrays through views
// that check each index (prelude/common/debug_view.h) and report the first outside its array
// to a report the launch passes after the outputs. Fresh outputs start poisoned, and elements
// still poisoned after the launch were never written. Either finding is a LaunchError.
#pragma once

#include <cstdint>
#include <span>

#include "codegen/kernel_spec.h"
#include "core/array_ref.h"
#include "core/backend.h"

namespace kjit {

/// Runs |launch| of debug build |spec| and checks it. |fresh_outputs|: the outputs hold nothing
/// the kernel may read (kjit made them and no init value filled them), so they are poisoned
/// first and checked for elements never written.
void run_debug_launch(const KernelSpec& spec, const PreparedLaunch& launch,
                      std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
                      uintptr_t stream, bool fresh_outputs);

}  // namespace kjit
