// A kernel of the Metal dialect: the shared headers that differ by dialect test this (math.h's
// abs of unsigned integers, which Metal has and CUDA does not).
#define KJIT_METAL 1
