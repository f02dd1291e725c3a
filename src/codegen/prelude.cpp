#include "codegen/prelude.h"

#include <kjit/errors.h>

#include <initializer_list>
#include <string>

namespace kjit::codegen {
namespace {

std::string concatenate(std::initializer_list<std::string_view> names) {
  std::string out;
  for (std::string_view n : names) {
    std::string_view text = prelude_file(n);
    if (text.empty()) throw InternalError("prelude file missing: " + std::string(n));
    out += text;
    if (out.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace

std::string_view prelude_for(Dialect dialect, Target target) {
  if (target != Target::Cpu) throw InternalError("no prelude for this target yet");
  static const std::string kCpuMetal =
      concatenate({"abi.h", "types.h", "float_bits.h", "scalar.h", "math.h", "vec.h", "mlx_utils.h",
                   "cpu_thread.h", "msl.h"});
  static const std::string kCpuCuda =
      concatenate({"abi.h", "types.h", "float_bits.h", "scalar.h", "math.h", "vec.h", "mlx_utils.h",
                   "cpu_thread.h", "cuda.h"});
  return dialect == Dialect::Metal ? kCpuMetal : kCpuCuda;
}

}  // namespace kjit::codegen
