// A Metal kernel on the CPU in cooperative mode: each thread is a coroutine that suspends at
// barriers and SIMD-group operations.
// The platform layer, the shared numeric types and math, the target's thread model, then the
// dialect, in the order they are compiled (each header's own includes name what it needs).
// clang-format off
// First: the shared headers test KJIT_METAL.
#include "dialect/msl/dialect.h"
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
#include "dialect/msl/names.h"
#include "dialect/msl/library.h"
#include "dialect/msl/pack.h"
#include "dialect/msl/types.h"
#include "common/atomics.h"
#include "common/debug_view.h"
#include "target/cpu/debug_races.h"
#include "common/debug_group_view.h"
#include "dialect/msl/atomics.h"
#include "common/lanes.h"
#include "mode/coop/runtime.h"
#include "mode/coop/msl.h"
#include "dialect/msl/simdgroup_matrix.h"
// clang-format on
