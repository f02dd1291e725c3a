// A CUDA kernel on the CUDA backend, compiled by NVRTC.
// The platform layer, the shared numeric types and math, the target's thread model, then the
// dialect, in the order they are compiled (each header's own includes name what it needs).
// clang-format off
#include "target/cuda/platform.h"
#include "common/float_bits.h"
#include "common/scalar.h"
#include "common/math.h"
#include "common/vec.h"
#include "common/mlx_utils.h"
#include "common/numeric_limits.h"
#include "target/cuda/abi.h"
#include "common/thread_ctx.h"
#include "target/cuda/thread.h"
#include "common/debug_view.h"
#include "common/debug_group_view.h"
#include "common/lanes.h"
#include "dialect/cuda/names.h"
#include "dialect/cuda/on_cuda/cooperative_groups.h"
#include "dialect/cuda/half2.h"
#include "dialect/cuda/half_atomics.h"
#include "dialect/cuda/std.h"
#include "dialect/cuda/std_complex.h"
#include "dialect/cuda/mlx_utils.h"
#include "dialect/cuda/user.h"
// clang-format on
