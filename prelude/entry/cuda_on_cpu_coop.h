// A CUDA kernel on the CPU in cooperative mode: each thread is a coroutine that suspends at
// barriers and warp operations.
// The platform layer, the shared numeric types and math, the target's thread model, then the
// dialect, in the order they are compiled (each header's own includes name what it needs).
// clang-format off
#include "target/cpu/platform.h"
#include "target/cpu/abi.h"
#include "common/float_bits.h"
#include "common/scalar.h"
#include "common/math.h"
#include "common/vec.h"
#include "common/int_bits.h"
#include "common/mlx_utils.h"
#include "common/numeric_limits.h"
#include "common/thread_ctx.h"
#include "target/cpu/thread.h"
#include "common/lanes.h"
// <coroutine> (in mode/coop/runtime.h) comes before dialect/cuda/on_cpu/runtime.h, whose
// qualifier macros (__device__...) the standard headers must not see.
#include "mode/coop/runtime.h"
#include "common/atomics.h"
#include "common/debug_view.h"
#include "target/cpu/debug_races.h"
#include "common/debug_group_view.h"
#include "dialect/cuda/names.h"
#include "dialect/cuda/on_cpu/vector_types.h"
#include "dialect/cuda/on_cpu/runtime.h"
#include "dialect/cuda/on_cpu/math.h"
#include "dialect/cuda/on_cpu/intrinsics.h"
#include "dialect/cuda/half2.h"
#include "dialect/cuda/half_atomics.h"
#include "mode/coop/cuda.h"
#include "dialect/cuda/std.h"
#include "dialect/cuda/std_complex.h"
#include "dialect/cuda/mlx_utils.h"
#include "dialect/cuda/user.h"
// clang-format on
