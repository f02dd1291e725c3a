#include "codegen/cpu_mode.h"

#include <cstdlib>
#include <string_view>
#include <utility>

#include "codegen/emit.h"
#include "codegen/source.h"

namespace kjit::codegen {
namespace {

// The names a loop with barriers may use in its header in region mode: the same for every
// thread of a group.
std::vector<std::string> uniform_names(const KernelSpec& spec, const CallSignature& call) {
  std::vector<std::string> names;
  for (const Attribute& a : metal_attributes()) {
    if (a.uniform) names.push_back(a.name);
  }
  for (const CudaBuiltin& b : kCudaBuiltins) {
    for (const Attribute& a : metal_attributes()) {
      if (a.uniform && std::string_view(a.name) == b.attribute) names.push_back(b.name);
    }
  }
  names.push_back("warpSize");
  for (const auto& [name, value] : call.template_args) names.push_back(name);
  for (size_t i = 0; i < spec.input_names.size(); ++i) {
    const std::string& n = spec.input_names[i];
    if (call.inputs[i].second == 0) names.push_back(n);  // a 0-d input: one value
    for (const char* suffix : {"_shape", "_strides", "_ndim"}) names.push_back(n + suffix);
  }
  return names;
}

// The header's helpers that wait, and how the body and header name cooperative groups, as
// generating a body needs them.
WaitingHelpers waiting_helpers(const KernelSpec& spec) {
  WaitingHelpers helpers = find_waiting_helpers(spec.header_tokens, spec.dialect);
  note_cooperative_groups(spec.source_tokens, helpers);
  return helpers;
}

}  // namespace

const char* cpu_mode_name(CpuMode mode) {
  switch (mode) {
    case CpuMode::Loop:
      return "loop";
    case CpuMode::Regions:
      return "region";
    case CpuMode::Coroutine:
      return "cooperative";
  }
  return "";
}

CpuModeChoice choose_cpu_mode(const KernelSpec& spec, const CallSignature& call) {
  CpuModeChoice choice;
  // Read before the body's cooperative groups are noted: region planning reads the body alone.
  WaitingHelpers header_helpers = find_waiting_helpers(spec.header_tokens, spec.dialect);
  const bool header_names_groups = !header_helpers.cooperative_aliases.empty() ||
                                   !header_helpers.cooperative_unqualified.empty();
  choice.helpers = std::move(header_helpers);
  note_cooperative_groups(spec.source_tokens, choice.helpers);
  const WaitingHelpers& helpers = choice.helpers;
  const bool matrices =
      spec.dialect == Dialect::Metal &&
      (uses_simdgroup_matrices(spec.source_tokens) || uses_simdgroup_matrices(spec.header_tokens));
  if (!matrices && helpers.names.empty() &&
      !uses_suspending_calls(spec.source_tokens, spec.dialect, &helpers)) {
    choice.mode = CpuMode::Loop;
    choice.reason = "the body waits for no other thread: a group's threads run as one loop";
    return choice;
  }
  choice.mode = CpuMode::Coroutine;
  // KJIT_CPU_REGIONS=0 keeps every such body in cooperative mode.
  const char* regions_env = std::getenv("KJIT_CPU_REGIONS");
  if (regions_env && std::string_view(regions_env) == "0") {
    choice.reason = "KJIT_CPU_REGIONS=0 turns region mode off";
  } else if (matrices) {
    choice.reason = "SIMD-group matrices need the lanes of a SIMD-group to meet";
  } else if (!helpers.names.empty()) {
    choice.reason = "functions of the header wait for other threads";
  } else if (header_names_groups) {
    choice.reason = "the header names cooperative groups, which region planning does not read";
  } else {
    RegionPlanning planning = plan_regions(spec, uniform_names(spec, call), helpers);
    if ((choice.regions = std::move(planning.plan))) {
      choice.mode = CpuMode::Regions;
      const bool barriers = !choice.regions->barriers.empty();
      const bool operations = choice.regions->operations;
      choice.reason = std::string("its waits are ") +
                      (barriers ? "barriers that every thread of a group meets together" : "") +
                      (barriers && operations ? " and " : "") +
                      (operations ? "SIMD-group or warp operations that every lane of a "
                                    "simdgroup meets together"
                                  : "") +
                      ": the stretches between them run as loops over the group's threads";
    } else {
      choice.reason = "region mode cannot split the body: " + planning.refusal;
    }
  }
  return choice;
}

CpuModeChoice coroutine_mode(const KernelSpec& spec, std::string reason) {
  CpuModeChoice choice;
  choice.mode = CpuMode::Coroutine;
  choice.reason = std::move(reason);
  choice.helpers = waiting_helpers(spec);
  return choice;
}

}  // namespace kjit::codegen
