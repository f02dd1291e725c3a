// A launch's sizes, as every backend receives them.
#pragma once

namespace kjit {

struct LaunchDims {
  unsigned grid[3];    // threads per dimension
  unsigned group[3];   // threads per full group: min(threadgroup, grid), at least 1
  unsigned groups[3];  // groups per dimension: ceil(grid / group)
  // Threads per group as the call gave them: a precompiled kernel's block, which MLX launches
  // whole even where the grid is smaller.
  unsigned threadgroup[3];
};

}  // namespace kjit
