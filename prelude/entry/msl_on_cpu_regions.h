// A Metal kernel on the CPU in region mode: the group's threads are iterations of one loop per
// stretch between barriers and SIMD-group operations; the operations combine slots of the lanes'
// operands (mode/regions/).
// clang-format off
#include "entry/msl_on_cpu_loop.h"
#include "mode/regions/msl.h"
// clang-format on
