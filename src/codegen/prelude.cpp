#include "codegen/prelude.h"

#include <kjit/errors.h>

#include <string>

namespace kjit::codegen {
namespace {

// The entry header of each combination (prelude/entry/<name>.h).
const char* entry_name(Dialect dialect, Target target, bool cooperative) {
  if (dialect == Dialect::Metal) {
    if (target == Target::Cuda) return "msl_on_cuda";
    return cooperative ? "msl_on_cpu_coop" : "msl_on_cpu_loop";
  }
  if (target == Target::Cuda) return "cuda_on_cuda";
  return cooperative ? "cuda_on_cpu_coop" : "cuda_on_cpu_loop";
}

}  // namespace

std::string_view prelude_for(Dialect dialect, Target target, bool cooperative) {
  const char* name = entry_name(dialect, target, cooperative);
  const std::string_view text = prelude_entry(name);
  if (text.empty()) {
    throw InternalError("prelude entry missing: prelude/entry/" + std::string(name) + ".h");
  }
  return text;
}

}  // namespace kjit::codegen
