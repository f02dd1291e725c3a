"""Cooperative features, on the CPU (cooperative mode) and on the GPU: barriers in partial edge
groups, threadgroup memory, SIMD-group reductions, scans and shuffles, atomics, cooperative
groups and votes; and those kernels compiled for sm_90 wherever NVRTC loads. GPU cases are
skipped where no CUDA device works."""


import numpy as np
import pytest

import kjit
from conftest import CUDA_STATUS as STATUS
from conftest import DEVICES, EXP, needs_gpu, poisoned


BLOCK_SUM = """
    __shared__ float partial[1024];
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned n = threads_per_threadgroup.x * threads_per_threadgroup.y *
                       threads_per_threadgroup.z;
    const uint3 g = thread_position_in_grid;
    partial[t] = inp[(g.z * threads_per_grid.y + g.y) * threads_per_grid.x + g.x];
    __syncthreads();
    if (t == 0) {
        float s = 0;
        for (unsigned k = 0; k < blockDim.x * blockDim.y * blockDim.z; ++k) {
            const unsigned x = k % blockDim.x, y = (k / blockDim.x) % blockDim.y,
                           z = k / (blockDim.x * blockDim.y);
            if (x < threads_per_threadgroup.x && y < threads_per_threadgroup.y &&
                z < threads_per_threadgroup.z) s += partial[k];
        }
        const uint3 b = threadgroup_position_in_grid;
        out[(b.z * threadgroups_per_grid.y + b.y) * threadgroups_per_grid.x + b.x] = s;
        count[(b.z * threadgroups_per_grid.y + b.y) * threadgroups_per_grid.x + b.x] = n;
    }
"""


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
@pytest.mark.parametrize("grid,group", [((1000, 1, 1), (256, 1, 1)), ((37, 11, 1), (8, 4, 1)),
                                        ((5, 6, 7), (2, 4, 3))])
def test_partial_edge_groups_with_barriers(grid, group, device, rng):
    kernel = kjit.cuda_kernel(name="block_sum", input_names=["inp"],
                              output_names=["out", "count"], source=BLOCK_SUM)
    x = rng.standard_normal(grid[::-1]).astype(np.float32)
    groups = tuple(-(-g // t) for g, t in zip(grid, group))
    out, count = kernel(inputs=[x], output_shapes=[groups[::-1], groups[::-1]],
                        output_dtypes=[np.float32, np.uint32], grid=grid, threadgroup=group,
                        outputs=[poisoned(groups[::-1], np.float32),
                                 poisoned(groups[::-1], np.uint32)], device=device)
    expected = np.zeros(groups[::-1])
    sizes = np.zeros(groups[::-1], np.int64)
    for z in range(grid[2]):
        for y in range(grid[1]):
            for xx in range(grid[0]):
                key = (z // group[2], y // group[1], xx // group[0])
                expected[key] += x[z, y, xx]
                sizes[key] += 1
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(count, sizes)


# --- Metal's cooperative features, on the CPU (cooperative mode) and on the GPU ----------------

METAL_BLOCK_SUM = """
    threadgroup float partial[256];
    const uint t = thread_index_in_threadgroup;
    const uint n = threads_per_threadgroup.x;
    partial[t] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 128; s > 0; s /= 2) {
        if (t < s && t + s < n) partial[t] += partial[t + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (t == 0) out[threadgroup_position_in_grid.x] = partial[0];
"""

SIMD_REDUCE = """
    const uint i = thread_position_in_grid.x;
    const float x = inp[i];
    const float s = simd_sum(x);
    const float m = simd_max(x);
    if (thread_index_in_simdgroup == 0) {
        sums[i / 32] = s;
        maxes[i / 32] = m;
    }
"""

ROW_SOFTMAX = """
    const uint row = thread_position_in_grid.y, lane = thread_index_in_simdgroup;
    const float x = inp[row * 32 + lane];
    const float e = metal::exp(x - simd_max(x));
    out[row * 32 + lane] = e / simd_sum(e);
"""

BLOCK_SCAN = """
    threadgroup float warp_totals[8];
    const uint i = thread_position_in_grid.x;
    const uint lane = thread_index_in_simdgroup, warp = simdgroup_index_in_threadgroup;
    const float x = inp[i];
    const float before = simd_prefix_exclusive_sum(x);
    if (lane == 31) warp_totals[warp] = before + x;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float offset = 0;
    for (uint w = 0; w < warp; ++w) offset += warp_totals[w];
    out[i] = offset + before;
"""

SHUFFLES = """
    const uint i = thread_position_in_grid.x;
    const int x = inp[i];
    down[i] = simd_shuffle_down(x, 3);
    up[i] = simd_shuffle_up(x, 5);
    flip[i] = simd_shuffle_xor(x, 9);
    first[i] = simd_broadcast(x, 7);
    // Each lane names its own source or distance.
    const ushort lane = thread_index_in_simdgroup;
    spread[i] = simd_shuffle(x, ushort(lane * 5 % 32));
    varying[i] = simd_shuffle_down(x, ushort(lane % 3)) + quad_shuffle(x, ushort(3 - lane % 4));
"""

HISTOGRAM = """
    const uint i = thread_position_in_grid.x;
    const float v = inp[i];
    const uint b = min(uint(v * 16.0), 15u);
    atomic_fetch_add_explicit(&counts[b], 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(&sums[b], v, memory_order_relaxed);
    atomic_fetch_max_explicit(&peak[0], v, memory_order_relaxed);
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [1024, 1000, 77])
def test_metal_block_sum_with_threadgroup_memory(device, n, rng):
    k = kjit.metal_kernel(name="metal_block_sum", input_names=["inp"], output_names=["out"],
                          source=METAL_BLOCK_SUM)
    x = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // 256)
    (out,) = k(inputs=[x], output_shapes=[(groups,)], output_dtypes=[np.float32], grid=(n, 1, 1),
               threadgroup=(256, 1, 1), device=device, outputs=[poisoned((groups,), np.float32)])
    expected = [x[g * 256:(g + 1) * 256].astype(np.float64).sum() for g in range(groups)]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [1024, 1000])
def test_simd_sum_and_max_over_full_and_partial_warps(device, n, rng):
    k = kjit.metal_kernel(name="simd_reduce", input_names=["inp"], output_names=["sums", "maxes"],
                          source=SIMD_REDUCE)
    x = rng.standard_normal(n).astype(np.float32)
    warps = -(-n // 32)
    sums, maxes = k(inputs=[x], output_shapes=[(warps,), (warps,)],
                    output_dtypes=[np.float32, np.float32], grid=(n, 1, 1),
                    threadgroup=(256, 1, 1), device=device)
    for w in range(warps):
        chunk = x[w * 32:(w + 1) * 32].astype(np.float64)
        assert abs(sums[w] - chunk.sum()) <= 1e-5 * np.abs(chunk).sum() + 1e-6, w
        assert maxes[w] == chunk.max(), w


@pytest.mark.parametrize("device", DEVICES)
def test_row_softmax_with_simd_max_and_simd_sum(device, rng):
    k = kjit.metal_kernel(name="row_softmax", input_names=["inp"], output_names=["out"],
                          source=ROW_SOFTMAX)
    rows = 300
    x = (3 * rng.standard_normal((rows, 32))).astype(np.float32)
    (out,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
               grid=(32, rows, 1), threadgroup=(32, 1, 1), device=device)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_exclusive_scan_with_simd_prefix_and_threadgroup_memory(device, rng):
    k = kjit.metal_kernel(name="block_scan", input_names=["inp"], output_names=["out"],
                          source=BLOCK_SCAN)
    n = 256 * 6
    x = rng.standard_normal(n).astype(np.float32)
    (out,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32], grid=(n, 1, 1),
               threadgroup=(256, 1, 1), device=device)
    blocks = x.astype(np.float64).reshape(-1, 256)
    expected = (np.cumsum(blocks, axis=1) - blocks).ravel()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_simd_shuffles(device, rng):
    k = kjit.metal_kernel(name="shuffles", input_names=["inp"],
                          output_names=["down", "up", "flip", "first", "spread", "varying"],
                          source=SHUFFLES)
    n = 256
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    outs = k(inputs=[x], output_shapes=[(n,)] * 6, output_dtypes=[np.int32] * 6, grid=(n, 1, 1),
             threadgroup=(128, 1, 1), device=device)
    lane = np.arange(n) % 32
    base = np.arange(n) - lane
    down = np.where(lane + 3 < 32, x[base + np.minimum(lane + 3, 31)], x)
    up = np.where(lane >= 5, x[base + np.maximum(lane - 5, 0)], x)
    np.testing.assert_array_equal(outs[0], down)
    np.testing.assert_array_equal(outs[1], up)
    np.testing.assert_array_equal(outs[2], x[base + (lane ^ 9)])
    np.testing.assert_array_equal(outs[3], x[base + 7])
    np.testing.assert_array_equal(outs[4], x[base + lane * 5 % 32])
    shifted = np.where(lane + lane % 3 < 32, x[base + np.minimum(lane + lane % 3, 31)], x)
    np.testing.assert_array_equal(outs[5], shifted + x[np.arange(n) - lane % 4 + 3 - lane % 4])


CUDA_ATOMICS_OF_EVERY_KIND = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&total[0], (double)x[i]);
    atomicExch(&last[0], 1.5f);
    atomicInc(&wrapped[0], 9u);
    atomicDec(&counted_down[0], 1000u);
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("atomic_outputs", [False, True])  # the same for CUDA bodies
def test_cuda_atomics_on_doubles_floats_and_wrapping_counters(device, atomic_outputs, rng):
    k = kjit.cuda_kernel(name="atomics_of_every_kind", input_names=["x"],
                         output_names=["total", "last", "wrapped", "counted_down"],
                         source=CUDA_ATOMICS_OF_EVERY_KIND, atomic_outputs=atomic_outputs)
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    outs = [np.zeros(1, np.float64), np.zeros(1, np.float32), np.full(1, 3, np.uint32),
            np.full(1, 1200, np.uint32)]
    outs = k(inputs=[x], output_shapes=[(1,)] * 4, output_dtypes=[o.dtype for o in outs],
             grid=(n, 1, 1), threadgroup=(128, 1, 1), device=device, outputs=outs)
    np.testing.assert_allclose(outs[0], x.astype(np.float64).sum(), rtol=1e-12)
    assert outs[1][0] == 1.5
    assert outs[2][0] == (3 + n) % 10  # counts 0..9, then wraps to 0
    # From 1200 (above the limit): the first decrement gives 1000, then it counts down.
    assert outs[3][0] == 1000 - (n - 1)


@pytest.mark.parametrize("device", DEVICES)
def test_histogram_with_atomic_outputs(device, rng):
    k = kjit.metal_kernel(name="histogram", input_names=["inp"],
                          output_names=["counts", "sums", "peak"], source=HISTOGRAM,
                          atomic_outputs=True)
    n = 100_000
    x = rng.random(n).astype(np.float32)
    counts, sums, peak = k(inputs=[x], output_shapes=[(16,), (16,), (1,)],
                           output_dtypes=[np.uint32, np.float32, np.float32], grid=(n, 1, 1),
                           threadgroup=(256, 1, 1), init_value=0, device=device)
    bins = np.minimum((x * 16).astype(np.int64), 15)
    np.testing.assert_array_equal(counts, np.bincount(bins, minlength=16))
    np.testing.assert_allclose(sums, np.bincount(bins, weights=x.astype(np.float64), minlength=16),
                               rtol=1e-4)
    assert peak[0] == x.max()


CG_TILES = """
    namespace cg = cooperative_groups;
    cg::thread_block block = cg::this_thread_block();
    auto tile = cg::tiled_partition<W>(block);
    const unsigned i = cg::this_grid().thread_rank();
    const float x = inp[i];
    float v = x;
    for (int d = W / 2; d > 0; d /= 2) v += tile.shfl_down(v, d);
    sums[i] = tile.shfl(v, 0);
    up[i] = tile.shfl_up(x, 1);
    flip[i] = tile.shfl_xor(x, 1);
    block.sync();
    votes[i] = tile.ballot(x > 0.0f);
    flags[i] = tile.any(x > 1.5f) + 2 * tile.all(x > -1.5f);
    ranks[i] = tile.thread_rank() + 1000 * tile.meta_group_rank();
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("width", [8, 32])
def test_cooperative_groups_tiles(device, width, rng):
    k = kjit.cuda_kernel(name="cg_tiles", input_names=["inp"],
                         output_names=["sums", "up", "flip", "votes", "flags", "ranks"],
                         source=CG_TILES)
    n = 256
    x = rng.standard_normal(n).astype(np.float32)
    dtypes = [np.float32, np.float32, np.float32, np.uint32, np.int32, np.uint32]
    outs = k(inputs=[x], template=[("W", width)], output_shapes=[(n,)] * 6,
             output_dtypes=dtypes, outputs=[poisoned((n,), d) for d in dtypes], grid=(n, 1, 1),
             threadgroup=(64, 1, 1), device=device)
    tiles = x.astype(np.float64).reshape(-1, width)
    lane = np.arange(n) % width
    np.testing.assert_allclose(outs[0], np.repeat(tiles.sum(1), width), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs[1], np.where(lane >= 1, np.roll(x, 1), x))
    np.testing.assert_array_equal(outs[2], x[np.arange(n) ^ 1])
    bits = ((tiles > 0) << np.arange(width)).sum(1)
    np.testing.assert_array_equal(outs[3], np.repeat(bits, width))
    flags = (tiles > 1.5).any(1) + 2 * (tiles > -1.5).all(1)
    np.testing.assert_array_equal(outs[4], np.repeat(flags, width))
    np.testing.assert_array_equal(outs[5], lane + 1000 * ((np.arange(n) % 64) // width))


GRID_RANKS = """
    namespace cg = cooperative_groups;
    const unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    const unsigned i = (blockIdx.z * blockDim.z + threadIdx.z) * 32 * 12 + y * 32 + x;
    ranks[i] = cg::this_grid().thread_rank();
    sizes[i] = cg::this_grid().size();
"""


@pytest.mark.parametrize("device", DEVICES)
def test_grid_ranks_in_a_3d_grid(device):
    k = kjit.cuda_kernel(name="grid_ranks", input_names=[], output_names=["ranks", "sizes"],
                         source=GRID_RANKS)
    shape = (3, 12, 32)
    ranks, sizes = k(inputs=[], output_shapes=[shape, shape], output_dtypes=[np.uint64] * 2,
                     outputs=[poisoned(shape, np.uint64), poisoned(shape, np.uint64)],
                     grid=(32, 12, 3),
                     threadgroup=(8, 4, 1), device=device)
    z, y, x = np.meshgrid(np.arange(3), np.arange(12), np.arange(32), indexing="ij")
    block = (x // 8) + 4 * ((y // 4) + 3 * z)
    np.testing.assert_array_equal(ranks, block * 32 + (x % 8) + 8 * (y % 4))
    np.testing.assert_array_equal(sizes, np.full(shape, 32 * 12 * 3))


BARRIER_VOTES = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const float x = inp[i];
    const int count = __syncthreads_count(x > 0.0f);
    const int all_small = __syncthreads_and(fabsf(x) < 2.0f);
    const int any_big = __syncthreads_or(x > 2.5f);
    const unsigned warp = __activemask();
    unsigned some = 0;
    if (threadIdx.x % 32 < 10) some = __activemask();
    const unsigned ballot = __ballot_sync(0xffffffffu, x > 0.0f);
    const float half_sum = x + __shfl_down_sync(0xffffffffu, x, 8, 16);
    out[i * 6 + 0] = count;
    out[i * 6 + 1] = all_small + 2 * any_big;
    out[i * 6 + 2] = warp;
    out[i * 6 + 3] = some;
    out[i * 6 + 4] = ballot;
    sums[i] = half_sum;
"""


@pytest.mark.parametrize("device", DEVICES)
def test_barrier_votes_and_warp_masks(device, rng):
    k = kjit.cuda_kernel(name="barrier_votes", input_names=["inp"], output_names=["out", "sums"],
                         source=BARRIER_VOTES)
    n, group = 1024, 128
    x = rng.standard_normal(n).astype(np.float32)
    x[:group] = np.abs(x[:group]) % 1.9  # one block where every |x| < 2 and none is above 2.5
    out, sums = k(inputs=[x], output_shapes=[(n, 6), (n,)], output_dtypes=[np.uint32, np.float32],
                  outputs=[poisoned((n, 6), np.uint32), poisoned((n,), np.float32)],
                  grid=(n, 1, 1), threadgroup=(group, 1, 1), device=device)
    blocks = x.reshape(-1, group)
    np.testing.assert_array_equal(out[:, 0], np.repeat((blocks > 0).sum(1), group))
    flags = (np.abs(blocks) < 2).all(1) + 2 * (blocks > 2.5).any(1)
    np.testing.assert_array_equal(out[:, 1], np.repeat(flags, group))
    assert flags[0] == 1
    np.testing.assert_array_equal(out[:, 2], np.full(n, 0xFFFFFFFF))
    lane = np.arange(n) % 32
    np.testing.assert_array_equal(out[:, 3], np.where(lane < 10, 0x3FF, 0))
    warps = x.reshape(-1, 32)
    ballots = ((warps > 0).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(1)
    np.testing.assert_array_equal(out[:, 4], np.repeat(ballots, 32))
    # Shuffles of width 16: lanes 8..15 of each half-warp keep their own value.
    sixteen = np.arange(n) % 16
    partner = np.where(sixteen + 8 < 16, np.arange(n) + 8, np.arange(n))
    np.testing.assert_allclose(sums, x.astype(np.float64) + x[partner], rtol=1e-6)


METAL_VOTES = """
    const uint i = thread_position_in_grid.x;
    const float x = inp[i];
    const simd_vote positive = simd_ballot(x > 0.0f);
    const simd_vote everyone = simd_ballot(x > -100.0f);
    votes[i] = uint(simd_vote::vote_t(positive));
    flags[i] = (positive.any() ? 1 : 0) + (everyone.all() ? 2 : 0) + (positive.all() ? 4 : 0) +
               (simd_any(x > 1.5f) ? 8 : 0) + (simd_all(x > 0.0f) ? 16 : 0);
    both[i] = metal::simd_sum(x) + 1000.0 * metal::simd_max(x);
"""


@pytest.mark.parametrize("device", DEVICES)
def test_simd_ballot_and_two_simd_operations_in_one_expression(device, rng):
    k = kjit.metal_kernel(name="metal_votes", input_names=["inp"],
                          output_names=["votes", "flags", "both"], source=METAL_VOTES)
    n = 256
    x = rng.standard_normal(n).astype(np.float32)
    x[32:64] = np.abs(x[32:64]) + 0.5  # one simdgroup that votes true everywhere
    dtypes = [np.uint32, np.int32, np.float32]
    votes, flags, both = k(inputs=[x], output_shapes=[(n,)] * 3, output_dtypes=dtypes,
                           outputs=[poisoned((n,), d) for d in dtypes], grid=(n, 1, 1),
                           threadgroup=(128, 1, 1), device=device)
    warps = x.astype(np.float64).reshape(-1, 32)
    bits = ((warps > 0).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(1)
    np.testing.assert_array_equal(votes, np.repeat(bits, 32))
    expected = ((warps > 0).any(1) + 2 + 4 * (warps > 0).all(1) + 8 * (warps > 1.5).any(1) +
                16 * (warps > 0).all(1))
    np.testing.assert_array_equal(flags, np.repeat(expected, 32))
    assert expected[1] == 1 + 2 + 4 + 8 * (warps[1] > 1.5).any() + 16
    np.testing.assert_allclose(both, np.repeat(warps.sum(1) + 1000 * warps.max(1), 32),
                               rtol=1e-6)


QUAD_AND_ROTATE = """
    const uint i = thread_position_in_grid.x;
    const float x = inp[i];
    const int v = int(i * 7 % 23);
    floats[3 * i + 0] = quad_sum(x);
    floats[3 * i + 1] = quad_max(x);
    floats[3 * i + 2] = quad_prefix_exclusive_sum(x);
    device int* o = ints + 14 * i;
    o[0] = quad_shuffle(v, 2);
    o[1] = quad_shuffle_up(v, 1);
    o[2] = quad_shuffle_down(v, 3);
    o[3] = quad_shuffle_xor(v, 1);
    o[4] = quad_broadcast(v, 3);
    o[5] = quad_shuffle_rotate_up(v, 1);
    o[6] = int(quad_vote::vote_t(quad_ballot(v % 2 == 1)));
    o[7] = int(quad_all(v > 2)) + 2 * int(quad_any(v > 20)) + 4 * int(quad_is_first());
    o[8] = simd_shuffle_rotate_down(v, 5);
    o[9] = simd_shuffle_and_fill_up(v, v + 1000, 3);
    o[10] = simd_shuffle_and_fill_down(v, v + 1000, 2, 8);
    o[11] = simd_shuffle_and_fill_down(v, v + 1000, 2, 3);  // not a power of two: the simdgroup
    o[12] = quad_shuffle_and_fill_up(v, v + 1000, 1, 0);  // 0: the quad
    o[13] = quad_shuffle_xor(v, 5);  // the source is in another quad: the lane keeps its own
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [128, 122])
def test_quad_group_operations_and_rotating_shuffles(device, n, rng):
    k = kjit.metal_kernel(name="quads", input_names=["inp"], output_names=["floats", "ints"],
                          source=QUAD_AND_ROTATE)
    x = rng.standard_normal(n).astype(np.float32)
    floats, ints = k(inputs=[x], output_shapes=[(n, 3), (n, 14)],
                     output_dtypes=[np.float32, np.int32], grid=(n, 1, 1),
                     threadgroup=(64, 1, 1), device=device,
                     outputs=[poisoned((n, 3), np.float32), poisoned((n, 14), np.int32)])
    i = np.arange(n)
    v = (i * 7 % 23).astype(np.int64)
    fill = v + 1000
    base, kq = i - i % 4, i % 4
    wbase, lane = i - i % 32, i % 32
    quad = [np.arange(b, min(b + 4, n)) for b in base]  # the quad's present lanes
    xd = x.astype(np.float64)
    np.testing.assert_allclose(floats[:, 0], [xd[q].sum() for q in quad], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(floats[:, 1], [x[q].max() for q in quad])
    np.testing.assert_allclose(floats[:, 2], [xd[b:j].sum() for b, j in zip(base, i)],
                               rtol=1e-6, atol=1e-6)
    ballot = [sum(1 << (j - b) for j in q if v[j] % 2 == 1) for q, b in zip(quad, base)]
    np.testing.assert_array_equal(ints[:, 6], ballot)
    flags = [int((v[q] > 2).all()) + 2 * int((v[q] > 20).any()) for q in quad] + 4 * (kq == 0)
    np.testing.assert_array_equal(ints[:, 7], flags)
    full_quads = base + 4 <= n  # shuffles read only lanes that are there
    expected = np.stack([
        v[np.minimum(base + 2, n - 1)],
        np.where(kq >= 1, v[i - 1], v),
        np.where(kq + 3 < 4, v[np.minimum(i + 3, n - 1)], v),
        v[np.minimum(i ^ 1, n - 1)],
        v[np.minimum(base + 3, n - 1)],
        v[np.minimum(base + (kq + 3) % 4, n - 1)],
    ], axis=1)
    np.testing.assert_array_equal(ints[full_quads, 0:6], expected[full_quads])
    expected = np.where(kq >= 1, v[i - 1], fill[np.minimum(base + 3, n - 1)])
    np.testing.assert_array_equal(ints[full_quads, 12], expected[full_quads])
    np.testing.assert_array_equal(ints[:, 13], v)
    full_warps = wbase + 32 <= n
    m8, base8 = i % 8, i - i % 8
    expected = np.stack([
        v[np.minimum(wbase + (lane + 5) % 32, n - 1)],
        np.where(lane >= 3, v[i - 3], fill[np.minimum(wbase + (lane + 29) % 32, n - 1)]),
        np.where(m8 + 2 < 8, v[np.minimum(i + 2, n - 1)],
                 fill[np.minimum(base8 + (m8 + 2) % 8, n - 1)]),
        np.where(lane + 2 < 32, v[np.minimum(i + 2, n - 1)],
                 fill[np.minimum(wbase + (lane + 2) % 32, n - 1)]),
    ], axis=1)
    np.testing.assert_array_equal(ints[full_warps, 8:12], expected[full_warps])


# The kernels above, compiled by NVRTC for sm_90 wherever NVRTC loads (CI has no GPU).
GPU_KERNELS = [
    (kjit.cuda_kernel, dict(name="block_sum", input_names=["inp"], output_names=["out", "count"],
                            source=BLOCK_SUM), [("float32", 3)], ["float32", "uint32"]),
    (kjit.cuda_kernel, dict(name="smem_reverse", input_names=["inp"], output_names=["out"],
                            shared_memory=80_000, source="""
        extern __shared__ float buf[];
        for (unsigned i = threadIdx.x; i < 20000; i += blockDim.x) buf[i] = inp[i];
        __syncthreads();
        for (unsigned i = threadIdx.x; i < 20000; i += blockDim.x) out[i] = buf[19999 - i];
    """), [("float32", 1)], ["float32"]),
    (kjit.cuda_kernel, dict(name="wild_write", input_names=["inp"], output_names=["out"],
                            source="out[(1ull << 40) + threadIdx.x] = inp[threadIdx.x];"),
     [("float32", 1)], ["float32"]),
    (kjit.metal_kernel, dict(name="gpu_exp", input_names=["inp"], output_names=["out"],
                             source=EXP), [("float16", 2)], ["float16"]),
    (kjit.metal_kernel, dict(name="metal_block_sum", input_names=["inp"], output_names=["out"],
                             source=METAL_BLOCK_SUM), [("float32", 1)], ["float32"]),
    (kjit.metal_kernel, dict(name="simd_reduce", input_names=["inp"],
                             output_names=["sums", "maxes"], source=SIMD_REDUCE),
     [("float32", 1)], ["float32", "float32"]),
    (kjit.metal_kernel, dict(name="row_softmax", input_names=["inp"], output_names=["out"],
                             source=ROW_SOFTMAX), [("float32", 2)], ["float32"]),
    (kjit.metal_kernel, dict(name="block_scan", input_names=["inp"], output_names=["out"],
                             source=BLOCK_SCAN), [("float32", 1)], ["float32"]),
    (kjit.metal_kernel, dict(name="shuffles", input_names=["inp"],
                             output_names=["down", "up", "flip", "first", "spread", "varying"],
                             source=SHUFFLES),
     [("int32", 1)], ["int32"] * 6),
    (kjit.metal_kernel, dict(name="histogram", input_names=["inp"],
                             output_names=["counts", "sums", "peak"], source=HISTOGRAM,
                             atomic_outputs=True), [("float32", 1)],
     ["uint32", "float32", "float32"]),
]


@pytest.mark.skipif(STATUS["nvrtc"] is None, reason=f"NVRTC is {STATUS['nvrtc_error']}")
@pytest.mark.parametrize("factory,spec,inputs,outputs", GPU_KERNELS,
                         ids=[k[1]["name"] for k in GPU_KERNELS])
def test_gpu_kernels_compile_for_sm90(factory, spec, inputs, outputs):
    factory(**spec).build(inputs=inputs, output_dtypes=outputs, target="sm_90")
