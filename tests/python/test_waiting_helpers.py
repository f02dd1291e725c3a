"""Code that waits for other threads outside the body's own lines: header helpers and classes that
wait, header functions reading the index variables, helpers called in branches, loops in which
only some lanes meet, and lambdas in a body that waits. GPU cases are skipped where no CUDA
device works."""


import numpy as np
import pytest

import kjit
from conftest import DEVICES, poisoned


WAITING_HELPERS_METAL = """
template <typename T>
inline T warp_total(T v) {
    for (ushort d = 16; d > 0; d /= 2) v += simd_shuffle_down(v, d);
    return simd_broadcast(v, 0);
}
float block_total(float v, threadgroup float* scratch, uint lane, uint warp, uint warps) {
    const float w = warp_total(v);
    if (lane == 0) scratch[warp] = w;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t = 0;
    for (uint k = 0; k < warps; ++k) t += scratch[k];
    return t;
}
void keep(device float* p, float v) { p[0] = v; }
"""

WAITING_HELPERS_METAL_BODY = """
    threadgroup float scratch[32];
    const uint i = thread_position_in_grid.x;
    const float t = block_total(inp[i], scratch, thread_index_in_simdgroup,
                                simdgroup_index_in_threadgroup, simdgroups_per_threadgroup);
    out[i] = t + warp_total<int>(int(i % 3));  // explicit template arguments
"""

WAITING_HELPERS_CUDA = """
namespace cg = cooperative_groups;
__device__ __forceinline__ float tile_sum(cg::thread_block_tile<32> tile, float v) {
    for (int d = 16; d > 0; d /= 2) v += tile.shfl_down(v, d);
    return tile.shfl(v, 0);
}
__device__ float block_sum(float v, float* scratch) {
    cg::thread_block block = cg::this_thread_block();
    auto tile = cg::tiled_partition<32>(block);
    const float w = tile_sum(tile, v);
    if (tile.thread_rank() == 0) scratch[tile.meta_group_rank()] = w;
    block.sync();
    float t = 0;
    for (unsigned k = 0; k < tile.meta_group_size(); ++k) t += scratch[k];
    return t;
}
"""

WAITING_HELPERS_CUDA_BODY = """
    __shared__ float scratch[32];
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    struct Halve {  // a local class's functions return from themselves
        float operator()(float v) const { return v / 2; }
    };
    out[i] = Halve{}(block_sum(inp[i], scratch)) * 2;
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dialect", ["metal", "cuda"])
def test_header_helpers_that_wait(device, dialect, rng):
    if dialect == "metal":
        k = kjit.metal_kernel(name="waiting_helpers", input_names=["inp"], output_names=["out"],
                              source=WAITING_HELPERS_METAL_BODY, header=WAITING_HELPERS_METAL)
    else:
        k = kjit.cuda_kernel(name="waiting_helpers", input_names=["inp"], output_names=["out"],
                             source=WAITING_HELPERS_CUDA_BODY, header=WAITING_HELPERS_CUDA)
    n, group = 1024, 256
    x = rng.standard_normal(n).astype(np.float32)
    (out,) = k(inputs=[x], output_shapes=[(n,)], output_dtypes=[np.float32],
               outputs=[poisoned((n,), np.float32)], grid=(n, 1, 1), threadgroup=(group, 1, 1),
               device=device)
    expected = np.repeat(x.astype(np.float64).reshape(-1, group).sum(1), group)
    if dialect == "metal":
        expected += np.repeat((np.arange(n) % 3).reshape(-1, 32).sum(1), 32)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_a_header_class_whose_static_function_waits(device, rng):
    k = kjit.cuda_kernel(name="class_reduce", input_names=["x"], output_names=["out"], header="""
struct BlockReduce {
    static __device__ float sum(float v, float* scratch, unsigned t, unsigned n) {
        scratch[t] = v;
        __syncthreads();
        float s = 0;
        for (unsigned i = 0; i < n; ++i) s += scratch[i];
        __syncthreads();
        return s;
    }
};
""", source="""
    __shared__ float scratch[64];
    out[blockIdx.x * blockDim.x + threadIdx.x] =
        BlockReduce::sum(x[blockIdx.x * blockDim.x + threadIdx.x], scratch, threadIdx.x, blockDim.x);
""")
    x = rng.integers(-50, 50, 256).astype(np.float32)
    (out,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32], grid=(256, 1, 1),
               threadgroup=(64, 1, 1), device=device, outputs=[poisoned(x.shape, np.float32)])
    np.testing.assert_array_equal(out, np.repeat(x.reshape(4, 64).sum(1), 64))


@pytest.mark.parametrize("device", DEVICES)
def test_a_header_class_whose_instance_functions_wait(device, rng):
    # As CUB's BlockReduce(storage).Sum(v): an object over shared storage, whose functions call
    # barriers and each other; called on a named object and on a temporary.
    k = kjit.cuda_kernel(name="instance_reduce", input_names=["x"], output_names=["out"],
                         header="""
struct BlockReduce {
    float* scratch;
    unsigned t, n;
    __device__ BlockReduce(float* s) : scratch(s), t(threadIdx.x), n(blockDim.x) {}
    __device__ float Sum(float v) {
        scratch[t] = v;
        __syncthreads();
        const float s = Total();
        __syncthreads();
        return s;
    }
    __device__ float Total() const {
        float s = 0;
        for (unsigned i = 0; i < n; ++i) s += scratch[i];
        return s;
    }
    __device__ float Max(float v) {
        scratch[t] = v;
        __syncthreads();
        float m = scratch[0];
        for (unsigned i = 1; i < n; ++i) m = fmaxf(m, scratch[i]);
        __syncthreads();
        return m;
    }
};
""", source="""
    __shared__ float scratch[64];
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    BlockReduce reduce(scratch);
    const float total = reduce.Sum(x[i]);
    out[i] = total + 1000.0f * BlockReduce(scratch).Max(x[i]);
""")
    x = rng.integers(-50, 50, 256).astype(np.float32)
    (out,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32], grid=(256, 1, 1),
               threadgroup=(64, 1, 1), device=device, outputs=[poisoned(x.shape, np.float32)])
    groups = x.astype(np.float64).reshape(4, 64)
    np.testing.assert_array_equal(out, np.repeat(groups.sum(1) + 1000 * groups.max(1), 64))


@pytest.mark.parametrize("wait", ["", "__syncthreads();", "__syncwarp();"])
@pytest.mark.parametrize("grid,group", [((40, 6, 3), (16, 4, 2)), ((1, 70_000, 1), (1, 1, 1)),
                                        ((2, 70_000, 1), (1, 1, 1))])
@pytest.mark.parametrize("device", DEVICES)
def test_header_functions_read_the_index_variables(device, grid, group, wait):
    # As in the body: the thread's position, its block's, and their extents, also for grids of
    # more than 65535 groups in y (laid out otherwise on the GPU), and in each CPU mode (a loop
    # over threads, regions between barriers, coroutines).
    k = kjit.cuda_kernel(name="header_indices", input_names=[], output_names=["out"],
                         header="""
__device__ void store_indices(unsigned* row) {
    const unsigned v[12] = {threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y,
                            blockIdx.z, blockDim.x, blockDim.y, blockDim.z, gridDim.x,
                            gridDim.y, gridDim.z};
    for (int k = 0; k < 12; ++k) row[k] = v[k];
}
""", source=f"""
    const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    const unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    {wait}
    store_indices(out + 12ull * (x + {grid[0]}u * (y + {grid[1]}u * z)));
""")
    shape = (grid[2], grid[1], grid[0], 12)
    (out,) = k(inputs=[], output_shapes=[shape], output_dtypes=[np.uint32], grid=grid,
               threadgroup=group, device=device, outputs=[poisoned(shape, np.uint32)])
    z, y, x = np.meshgrid(*(np.arange(n) for n in grid[::-1]), indexing="ij")
    expected = np.stack([x % group[0], y % group[1], z % group[2], x // group[0], y // group[1],
                         z // group[2]] + [np.full_like(x, v) for v in group] +
                        [np.full_like(x, -(-n // g)) for n, g in zip(grid, group)], axis=-1)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("device", DEVICES)
def test_header_functions_use_index_variables_whole_beside_names_of_their_own(device):
    # Read element by element, whole, through a macro and as an argument; blockDim, which the
    # header declares (a member, a parameter), stays the header's own.
    k = kjit.cuda_kernel(name="header_whole_indices", input_names=[], output_names=["out"],
                         header="""
#define LANE (threadIdx.x % 16)
struct Launch { unsigned size, blockDim; };
__device__ unsigned groups() { dim3 g = gridDim; return g.x * g.y; }
__device__ uint3 position() { return blockIdx; }
__device__ unsigned first(uint3 a, unsigned b) { return a.x + b; }
__device__ unsigned sizes(Launch l) { const uint3& t = threadIdx; return l.size + l.blockDim + t.x; }
__device__ unsigned own(dim3 blockDim) { return blockDim.x; }
""", source="""
    const unsigned i = blockIdx.y * gridDim.x * blockDim.x + blockIdx.x * blockDim.x + threadIdx.x;
    out[3 * i] = groups();
    out[3 * i + 1] = position().x + 100 * position().y;
    out[3 * i + 2] = sizes(Launch{1000u, 20000u}) + 100000 * (first(threadIdx, 0) != LANE) +
                     1000000 * (own(dim3(5)) != 5);
""")
    (out,) = k(inputs=[], output_shapes=[(3 * 256,)], output_dtypes=[np.uint32], grid=(64, 4, 1),
               threadgroup=(16, 1, 1), device=device, outputs=[poisoned((3 * 256,), np.uint32)])
    y, x = np.meshgrid(np.arange(4), np.arange(64), indexing="ij")
    expected = np.stack([np.full(256, 16), (x // 16 + 100 * y).ravel(), 21000 + (x % 16).ravel()],
                        axis=1)
    np.testing.assert_array_equal(out.reshape(256, 3), expected)


HELPER_IN_A_BRANCH = """
float total(float v) { return simd_sum(v); }
float biggest(float v) { return simd_max(v); }
float both(float v) { return total(v) + 1000.0 * biggest(v); }
void store_total(device float* out, uint i, float v) { out[i] = total(v); }
"""

HELPER_IN_A_BRANCH_BODY = """
    const uint i = thread_position_in_grid.x;
    const float b = both(inp[i]);
    if (i % 2 == 0) { store_total(evens, i / 2, inp[i]); }
    out[i] = b + total(inp[i]) - total(inp[i]);
"""


@pytest.mark.parametrize("device", DEVICES)
def test_helper_called_in_a_branch_meets_only_its_lanes(device, rng):
    # The even lanes reach total's simd_sum through store_total (called on the body's line 4)
    # while the odd lanes reach the same simd_sum from the body's line 5: different meeting
    # points, as on a GPU, where the odd lanes wait for the branch to end.
    k = kjit.metal_kernel(name="helper_in_branch", input_names=["inp"],
                          output_names=["out", "evens"], source=HELPER_IN_A_BRANCH_BODY,
                          header=HELPER_IN_A_BRANCH)
    n = 128
    x = rng.random(n).astype(np.float32)
    out, evens = k(inputs=[x], output_shapes=[(n,), (n // 2,)], output_dtypes=[np.float32] * 2,
                   outputs=[poisoned((n,), np.float32), poisoned((n // 2,), np.float32)],
                   grid=(n, 1, 1), threadgroup=(64, 1, 1), device=device)
    warps = x.astype(np.float64).reshape(-1, 32)
    np.testing.assert_allclose(out, np.repeat(warps.sum(1) + 1000 * warps.max(1), 32), rtol=1e-5,
                               atol=1e-3)
    np.testing.assert_allclose(evens, np.repeat(warps[:, ::2].sum(1), 16), rtol=1e-5)


# Loops in which only some lanes reach a SIMD-group operation: at each iteration the lanes
# that reach it meet, and no others (lanes a branch or a continue sent on to the next iteration
# wait, as on a GPU). Each case: the header, the body (v is the thread's input, lane its lane),
# and which lanes of a simdgroup meet, as a boolean mask over the 32 lanes per meeting, in
# program order. A lane adds each sum it gets times how many it has had, so that sums that
# reach the wrong lanes, or the right lanes in the wrong order, change the result.
LANE = np.arange(32)
LOOPS_THAT_SKIP = {
    "for_continue": ("", """
    for (uint k = 0; k < 4; ++k) {
        if (k < lane % 4) continue;
        acc += ++calls * simd_sum(v);
    }""", [LANE % 4 <= k for k in range(4)]),
    "for_two_operations_in_an_outer_loop": ("", """
    for (uint r = 0; r < 2; ++r) {
        for (uint k = 0; k < 3; ++k) {
            acc += ++calls * simd_sum(v);
            if (lane < 16 + 4 * k) acc += ++calls * simd_sum(v);
        }
    }""", [m for _ in range(2) for k in range(3) for m in (LANE >= 0, LANE < 16 + 4 * k)]),
    "while_operation_in_the_condition": ("", """
    uint k = 0;
    while (simd_sum(1u) > 4 * k) {
        if ((lane + k) % 2 == 0) acc += ++calls * simd_sum(v);
        ++k;
    }""", [(LANE + k) % 2 == 0 for k in range(8)]),
    "do_while": ("", """
    uint k = 0;
    do {
        if ((lane + k) % 3 != 0) acc += ++calls * simd_sum(v);
        ++k;
    } while (k < 3);""", [(LANE + k) % 3 != 0 for k in range(3)]),
    "unroll_hint_and_labelled_body": ("", """
#pragma unroll
    for (uint k = 0; k < 4; ++k)
        next: { if (k < lane % 4) continue; acc += ++calls * simd_sum(v); }""",
                                      [LANE % 4 <= k for k in range(4)]),
    "range_for_without_braces": ("", """
    const uint ks[3] = {0u, 1u, 2u};
    for (uint k : ks) if (lane < 8 * (k + 1)) acc += ++calls * simd_sum(v);""",
                                 [LANE < 8 * (k + 1) for k in range(3)]),
    "loop_in_a_helper": ("""
float skip_sum(float v, uint lane) {
    float acc = 0;
    uint calls = 0;
    for (uint k = 0; k < 4; ++k) {
        if (k < lane % 4) continue;
        acc += ++calls * simd_sum(v);
    }
    return acc;
}""", """
    acc = skip_sum(v, lane);""", [LANE % 4 <= k for k in range(4)]),
}


@pytest.mark.parametrize("case", sorted(LOOPS_THAT_SKIP))
@pytest.mark.parametrize("device", DEVICES)
def test_lanes_meet_only_in_the_same_iteration_of_a_loop(device, case, rng):
    header, loop, meetings = LOOPS_THAT_SKIP[case]
    k = kjit.metal_kernel(name="loop_" + case, input_names=["inp"], output_names=["out"],
                          header=header, source=f"""
    const uint i = thread_position_in_grid.x;
    const uint lane = thread_index_in_simdgroup;
    const float v = inp[i];
    float acc = 0;
    uint calls = 0;
    {loop}
    out[i] = acc;
""")
    n = 128
    x = rng.integers(-20, 20, n).astype(np.float32)
    (out,) = k(inputs=[x], output_shapes=[(n,)], output_dtypes=[np.float32], grid=(n, 1, 1),
               threadgroup=(64, 1, 1), device=device, outputs=[poisoned((n,), np.float32)])
    warps = x.astype(np.float64).reshape(-1, 32)
    expected = np.zeros_like(warps)
    calls = np.zeros(32)
    for mask in meetings:
        calls[mask] += 1
        expected[:, mask] += calls[mask] * warps[:, mask].sum(1, keepdims=True)
    np.testing.assert_array_equal(out, expected.ravel())


LAMBDA_IN_A_WAITING_BODY = """
    const uint i = thread_position_in_grid.x;
    auto square = [](float v) -> float { return v * v; };
    const float s = simd_sum(square(inp[i]));
    if (thread_index_in_simdgroup != 0) return;
    out[i / 32] = s;
"""


@pytest.mark.parametrize("device", DEVICES)
def test_lambda_in_a_body_that_waits(device, rng):
    k = kjit.metal_kernel(name="lambda_waits", input_names=["inp"], output_names=["out"],
                          source=LAMBDA_IN_A_WAITING_BODY)
    n = 256
    x = rng.standard_normal(n).astype(np.float32)
    (out,) = k(inputs=[x], output_shapes=[(n // 32,)], output_dtypes=[np.float32],
               outputs=[poisoned((n // 32,), np.float32)], grid=(n, 1, 1),
               threadgroup=(128, 1, 1), device=device)
    np.testing.assert_allclose(out, (x.astype(np.float64) ** 2).reshape(-1, 32).sum(1),
                               rtol=1e-5)
