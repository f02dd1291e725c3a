#include "codegen/prelude.h"

#include <kjit/errors.h>

#include <string>

namespace kjit::codegen {
namespace {

// The entry header of each combination (prelude/entry/<name>.h).
const char* entry_name(Dialect dialect, Target target, CpuMode mode) {
  const bool metal = dialect == Dialect::Metal;
  if (target == Target::Cuda) return metal ? "msl_on_cuda" : "cuda_on_cuda";
  switch (mode) {
    case CpuMode::Loop:
      return metal ? "msl_on_cpu_loop" : "cuda_on_cpu_loop";
    case CpuMode::Regions:
      return metal ? "msl_on_cpu_regions" : "cuda_on_cpu_regions";
    case CpuMode::Coroutine:
      return metal ? "msl_on_cpu_coop" : "cuda_on_cpu_coop";
  }
  return "";
}

}  // namespace

std::string_view prelude_for(Dialect dialect, Target target, CpuMode mode) {
  const char* name = entry_name(dialect, target, mode);
  const std::string_view text = prelude_entry(name);
  if (text.empty()) {
    throw InternalError("prelude entry missing: prelude/entry/" + std::string(name) + ".h");
  }
  return text;
}

}  // namespace kjit::codegen
