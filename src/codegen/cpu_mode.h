// How the threads of a kernel's group run on the CPU, and why: the one place that decides it.
// A body that never waits for other threads runs as a loop over the group's threads; one whose
// only waits are barriers that every thread of a group meets together runs in region mode (a
// loop per stretch between barriers, codegen/regions.h); any other body that waits runs its
// threads as coroutines (cooperative mode, prelude/mode/coop/).
#pragma once

#include <optional>
#include <string>

#include "codegen/kernel_spec.h"
#include "codegen/regions.h"
#include "codegen/rewrite.h"

namespace kjit::codegen {

struct CallSignature;

enum class CpuMode { Loop, Regions, Coroutine };

/// "loop", "region" or "cooperative", as the documentation names the modes.
const char* cpu_mode_name(CpuMode mode);

/// A mode, the reason for it, and what generating the body in that mode needs.
struct CpuModeChoice {
  CpuMode mode = CpuMode::Loop;
  std::string reason;
  WaitingHelpers helpers;             // the header's helpers that wait, and group names
  std::optional<RegionPlan> regions;  // the body's split, in region mode
};

/// The mode |spec|'s body runs in on the CPU for |call|. KJIT_CPU_REGIONS=0 in the environment
/// keeps every body that waits in cooperative mode.
CpuModeChoice choose_cpu_mode(const KernelSpec& spec, const CallSignature& call);

/// Cooperative mode for |spec|'s body, which runs any body, for |reason| (region mode's rewriting
/// of a body that did not compile).
CpuModeChoice coroutine_mode(const KernelSpec& spec, std::string reason);

}  // namespace kjit::codegen
