#include "codegen/prelude.h"

#include <kjit/errors.h>

#include <initializer_list>
#include <string>

namespace kjit::codegen {
namespace {

std::string concatenate(std::initializer_list<std::string_view> names) {
  std::string out;
  size_t size = 0;
  for (std::string_view n : names) size += prelude_file(n).size() + 1;
  out.reserve(size);
  for (std::string_view n : names) {
    std::string_view text = prelude_file(n);
    if (text.empty()) throw InternalError("prelude file missing: " + std::string(n));
    out += text;
    if (out.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace

std::string_view prelude_for(Dialect dialect, Target target, bool cooperative) {
  // Platform layer, shared numeric types and math, the target's thread model, then the dialect.
  // Each is put together the first time a kernel needs it.
  if (target == Target::Cpu && dialect == Dialect::Metal) {
    if (cooperative) {
      static const std::string text =
          concatenate({"msl_dialect.h", "cpu_platform.h", "abi.h",
                       "float_bits.h",  "scalar.h",       "math.h",
                       "vec.h",         "int_bits.h",     "mlx_utils.h",
                       "thread_ctx.h",  "cpu_thread.h",   "msl.h",
                       "msl_library.h", "msl_pack.h",     "msl_types.h",
                       "atomics.h",     "msl_atomics.h",  "lanes.h",
                       "cpu_coop.h",    "msl_cpu_coop.h", "msl_simdgroup_matrix.h"});
      return text;
    }
    static const std::string text = concatenate(
        {"msl_dialect.h", "cpu_platform.h", "abi.h", "float_bits.h", "scalar.h", "math.h", "vec.h",
         "int_bits.h", "mlx_utils.h", "thread_ctx.h", "cpu_thread.h", "msl.h", "msl_library.h",
         "msl_pack.h", "msl_types.h", "atomics.h", "msl_atomics.h"});
    return text;
  }
  if (target == Target::Cpu) {
    if (cooperative) {
      // <coroutine> comes before cuda_cpu.h, whose qualifier macros the standard headers must
      // not see.
      static const std::string text = concatenate({"cpu_platform.h",
                                                   "abi.h",
                                                   "float_bits.h",
                                                   "scalar.h",
                                                   "math.h",
                                                   "vec.h",
                                                   "int_bits.h",
                                                   "mlx_utils.h",
                                                   "thread_ctx.h",
                                                   "cpu_thread.h",
                                                   "lanes.h",
                                                   "cpu_coop.h",
                                                   "atomics.h",
                                                   "cuda_names.h",
                                                   "cuda_vector_types.h",
                                                   "cuda_cpu.h",
                                                   "cuda_cpu_math.h",
                                                   "cuda_cpu_intrinsics.h",
                                                   "cuda_half2.h",
                                                   "cuda_half_atomics.h",
                                                   "cuda_cpu_coop.h",
                                                   "cuda_user.h"});
      return text;
    }
    static const std::string text = concatenate(
        {"cpu_platform.h", "abi.h", "float_bits.h", "scalar.h", "math.h", "vec.h", "int_bits.h",
         "mlx_utils.h", "thread_ctx.h", "cpu_thread.h", "atomics.h", "cuda_names.h",
         "cuda_vector_types.h", "cuda_cpu.h", "cuda_cpu_math.h", "cuda_cpu_intrinsics.h",
         "cuda_half2.h", "cuda_half_atomics.h", "cuda_user.h"});
    return text;
  }
  if (dialect == Dialect::Metal) {
    static const std::string text = concatenate(
        {"msl_dialect.h", "cuda_platform.h", "float_bits.h",  "scalar.h",
         "math.h",        "vec.h",           "int_bits.h",    "mlx_utils.h",
         "cuda_abi.h",    "thread_ctx.h",    "cuda_thread.h", "msl.h",
         "msl_library.h", "msl_pack.h",      "msl_types.h",   "atomics.h",
         "msl_atomics.h", "lanes.h",         "msl_cuda.h",    "msl_simdgroup_matrix.h"});
    return text;
  }
  static const std::string text =
      concatenate({"cuda_platform.h", "float_bits.h", "scalar.h", "math.h", "vec.h", "mlx_utils.h",
                   "cuda_abi.h", "thread_ctx.h", "cuda_thread.h", "lanes.h", "cuda_names.h",
                   "cuda_gpu.h", "cuda_half2.h", "cuda_half_atomics.h", "cuda_user.h"});
  return text;
}

}  // namespace kjit::codegen
