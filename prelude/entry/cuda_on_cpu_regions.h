// A CUDA kernel on the CPU in region mode: the group's threads are iterations of one loop per
// stretch between barriers and warp operations; the operations combine slots of the lanes'
// operands (mode/regions/).
// clang-format off
#include "entry/cuda_on_cpu_loop.h"
#include "mode/regions/cuda.h"
// clang-format on
