"""A cooperative reduction: each threadgroup sums its 256 elements through threadgroup memory
and barriers, and writes one partial sum. Checked against NumPy in float64."""

import numpy as np

import kjit

GROUP = 256

kernel = kjit.metal_kernel(
    name="block_sum", input_names=["x"], output_names=["sums"],
    source="""
        threadgroup float partial[256];
        uint i = thread_position_in_grid.x;
        uint t = thread_position_in_threadgroup.x;
        partial[t] = i < x_shape[0] ? x[i] : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint stride = 128; stride > 0; stride /= 2) {
            if (t < stride) partial[t] += partial[t + stride];
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (t == 0) sums[threadgroup_position_in_grid.x] = partial[0];
    """)

x = np.random.default_rng().random(1_000_003, dtype=np.float32)
groups = -(-x.size // GROUP)
# The grid is whole groups: as in Metal, a grid that ends inside a group makes that last group
# smaller, and its missing threads would leave their slots of `partial` unwritten.
(sums,) = kernel(inputs=[x], grid=(groups * GROUP, 1, 1), threadgroup=(GROUP, 1, 1),
                 output_shapes=[(groups,)], output_dtypes=[np.float32],
                 device=kjit.default_device())
padded = np.zeros(groups * GROUP)
padded[: x.size] = x
expected = padded.reshape(groups, GROUP).sum(1)
# A tree of 8 levels of float32 additions of positive terms: each sum within 8 roundings.
error = np.max(np.abs(np.asarray(sums, dtype=np.float64) - expected) / expected)
print(f"block_sum on {kjit.default_device()}: {groups} groups of {GROUP}, relative error "
      f"{error:.2e}, total {np.asarray(sums, dtype=np.float64).sum():.6e}")
assert error <= 8 * 2.0 ** -24
