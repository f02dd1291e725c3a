// The launch record shared by the library and generated CUDA kernels, passed by value as a
// kernel's last parameter, and the ways a launch lays out its groups as blocks. Plain C, no
// includes.
#pragma once

// The driver caps a grid of blocks at 65535 in y and z, so the grid of groups becomes blocks as:
enum kjit_cuda_layout {
  kjit_cuda_row = 0,     // a grid of threads in x only: groups as blocks in x
  kjit_cuda_blocks = 1,  // any grid within the caps: groups as blocks, as they are
  kjit_cuda_column = 2,  // a single column of groups (groups.x == 1) taller than the caps:
                         // groups y and z as blocks x and y (the common "one group per row")
  kjit_cuda_flat = 3,    // any other grid beyond the caps: flattened to blocks in x, decoded
  kjit_cuda_layouts = 4
};

struct kjit_cuda_launch {
  unsigned grid[3];    // threads per dimension
  unsigned group[3];   // threads per full group
  unsigned groups[3];  // groups per dimension
  // For kjit_cuda_flat: division by groups.x and by groups.x * groups.y as a multiply-high, an
  // add and a shift ({multiplier, shift} each, from division_magic in the CUDA backend).
  unsigned by_x[2], by_xy[2];
};
