// The launch record shared by the library and generated CPU kernels. Plain C layout, no
// includes: it is compiled into every kernel.
#pragma once

#define KJIT_MAX_NDIM 10

struct kjit_cpu_launch {
  void* const* args;              // inputs then outputs; a 0-d input points at its value
  const int* shapes;              // KJIT_MAX_NDIM entries per input
  const __INT64_TYPE__* strides;  // KJIT_MAX_NDIM entries per input, in elements
  const int* ndims;               // one per input
  unsigned grid[3];               // threads per dimension
  unsigned group[3];              // threads per full group
  unsigned groups[3];             // groups per dimension
};

// Runs groups [first, end) of the launch, groups numbered x-fastest.
typedef void (*kjit_cpu_entry_fn)(const struct kjit_cpu_launch* launch, unsigned long long first,
                                  unsigned long long end);

#define KJIT_CPU_ENTRY_SYMBOL "kjit_cpu_entry"

// Region-mode kernels have a second entry point, for launches whose grid has at most
// KJIT_CPU_SMALL_GRID threads along each dimension: knowing that bound, the compiler can prove
// that a body's 32-bit index arithmetic does not wrap, and read consecutive lanes' elements as
// one vector.
#define KJIT_CPU_SMALL_GRID_ENTRY_SYMBOL "kjit_cpu_entry_small_grid"
#define KJIT_CPU_SMALL_GRID (1u << 20)
