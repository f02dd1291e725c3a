// A kernel of the Metal dialect: the shared headers that differ by dialect test this
// (common/math.h's abs of unsigned integers, which Metal has and CUDA does not).
#pragma once

#define KJIT_METAL 1
