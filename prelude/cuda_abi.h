// The launch record shared by the library and generated CUDA kernels, passed by value as a
// kernel's last parameter. Plain C layout, no includes.
#ifndef KJIT_PRELUDE_CUDA_ABI_H
#define KJIT_PRELUDE_CUDA_ABI_H

struct kjit_cuda_launch {
  unsigned grid[3];    // threads per dimension
  unsigned group[3];   // threads per full group
  unsigned groups[3];  // groups per dimension
  unsigned layout;     // how groups map to blocks (prelude/cuda_thread.h)
  // For layout 2: division by groups.x and by groups.x * groups.y as a multiply-high, an add
  // and a shift ({multiplier, shift} each, from division_magic in the CUDA backend).
  unsigned by_x[2], by_xy[2];
};

#endif
