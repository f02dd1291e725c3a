"""SIMD-group and warp operations in the CPU's region mode: bodies whose lanes all reach each
operation together run as loops over the group's threads, the operation combining the lanes'
values between two loops. Each result is checked against NumPy and against cooperative mode
(a kernel built under KJIT_CPU_REGIONS=0), bit for bit; bodies whose lanes may reach an
operation apart stay in cooperative mode and are still right."""

import contextlib
import io
import os
import re

import numpy as np
import pytest

import kjit
from conftest import poisoned


@pytest.fixture(autouse=True)
def region_mode_on(monkeypatch):
    """These tests are of region mode: whatever KJIT_CPU_REGIONS says for the rest of the run."""
    monkeypatch.delenv("KJIT_CPU_REGIONS", raising=False)


def run(source, inputs, out_shape, out_dtype, grid, threadgroup, dialect="metal",
        cooperative=False):
    """The mode the body ran in on the CPU, why, and its output (poisoned first), from a kernel
    of its own built with region mode on, or off when |cooperative|."""
    make = kjit.metal_kernel if dialect == "metal" else kjit.cuda_kernel
    names = [f"in{k}" for k in range(len(inputs))]
    kernel = make(name="lane_ops_" + ("coop" if cooperative else "regions"),
                  input_names=names, output_names=["out"], source=source)
    if cooperative:
        os.environ["KJIT_CPU_REGIONS"] = "0"
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            (out,) = kernel(inputs=inputs, output_shapes=[out_shape], output_dtypes=[out_dtype],
                            grid=grid, threadgroup=threadgroup, verbose=True,
                            outputs=[poisoned(out_shape, out_dtype)])
    finally:
        os.environ.pop("KJIT_CPU_REGIONS", None)
    line = [ln for ln in printed.getvalue().splitlines() if ln.startswith("On the CPU")][-1]
    mode, reason = line.split(" run in ")[1].split(" mode: ", 1)
    return mode, reason, out


def check(source, inputs, out_shape, out_dtype, grid, threadgroup, expected, dialect="metal",
          mode="region", exact=True, tolerance=1e-5):
    """Runs |source| in both modes: the chosen mode is |mode|; both results match |expected|,
    and each other bit for bit when |exact|."""
    chosen, _, out = run(source, inputs, out_shape, out_dtype, grid, threadgroup, dialect)
    assert chosen == mode
    forced, _, coop = run(source, inputs, out_shape, out_dtype, grid, threadgroup, dialect,
                       cooperative=True)
    assert forced == "cooperative"
    for got in (out, coop):
        if np.issubdtype(np.dtype(out_dtype), np.floating):
            np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
        else:
            np.testing.assert_array_equal(got, expected)
    if exact:
        assert out.tobytes() == coop.tobytes()
    return out


def lanes_of(n):
    """Each thread's lane and simdgroup for a 1-D group of |n| threads."""
    t = np.arange(n)
    return t % 32, t // 32


REDUCTIONS = [("simd_sum", np.sum), ("simd_max", np.max), ("simd_min", np.min),
              ("simd_product", np.prod)]


@pytest.mark.parametrize("group", [64, 48, 20])  # whole simdgroups, a partial last one, one
@pytest.mark.parametrize("name,reduce", REDUCTIONS)
def test_integer_reductions_over_whole_and_partial_simdgroups(rng, name, reduce, group):
    n = 3 * group + 5  # a partial edge group too
    x = rng.integers(-3, 4, n).astype(np.int32)
    source = f"""
        const uint i = thread_position_in_grid.x;
        out[i] = {name}(in0[i]);
    """
    expected = np.empty(n, np.int64)
    for g in range(0, n, group):
        for s in range(g, min(g + group, n), 32):
            end = min(s + 32, g + group, n)
            expected[s:end] = reduce(x[s:end].astype(np.int64))
    check(source, [x], (n,), np.int32, (n, 1, 1), (group, 1, 1), expected.astype(np.int32))


def test_float_and_vector_sums(rng):
    x = rng.standard_normal((128, 4)).astype(np.float32)
    source = """
        const uint i = thread_position_in_grid.x;
        const float4 v = float4(in0[4 * i], in0[4 * i + 1], in0[4 * i + 2], in0[4 * i + 3]);
        const float4 s = simd_sum(v);
        out[4 * i] = s.x; out[4 * i + 1] = s.y; out[4 * i + 2] = s.z; out[4 * i + 3] = s.w;
    """
    sums = x.astype(np.float64).reshape(4, 32, 4).sum(1)
    expected = np.repeat(sums, 32, axis=0).reshape(-1)
    check(source, [x.reshape(-1)], (512,), np.float32, (128, 1, 1), (64, 1, 1), expected)


@pytest.mark.parametrize("inclusive", [True, False])
def test_prefix_sums(rng, inclusive):
    x = rng.integers(0, 10, 96).astype(np.int32)
    kind = "inclusive" if inclusive else "exclusive"
    source = f"""
        const uint i = thread_position_in_grid.x;
        out[i] = simd_prefix_{kind}_sum(in0[i]);
    """
    expected = np.concatenate([np.cumsum(c) - (0 if inclusive else c)
                               for c in np.split(x, 3)])
    check(source, [x], (96,), np.int32, (96, 1, 1), (96, 1, 1), expected)


SHUFFLES = [
    ("simd_shuffle(v, (lane * 7) % 32)", lambda lane: (lane * 7) % 32),
    ("simd_broadcast(v, 5)", lambda lane: 5 + 0 * lane),
    ("simd_shuffle_down(v, 3)", lambda lane: np.where(lane + 3 < 32, lane + 3, lane)),
    ("simd_shuffle_up(v, 2)", lambda lane: np.where(lane >= 2, lane - 2, lane)),
    ("simd_shuffle_xor(v, 6)", lambda lane: lane ^ 6),
    ("simd_shuffle_rotate_down(v, 5)", lambda lane: (lane + 5) % 32),
    ("simd_shuffle_rotate_up(v, 5)", lambda lane: (lane + 27) % 32),
    ("simd_broadcast_first(v)", lambda lane: 0 * lane),
    ("quad_shuffle_xor(v, 1)", lambda lane: lane ^ 1),
    ("quad_shuffle_down(v, 1)", lambda lane: np.where(lane % 4 + 1 < 4, lane + 1, lane)),
]


@pytest.mark.parametrize("call,source_lane", SHUFFLES, ids=[c for c, _ in SHUFFLES])
def test_shuffles_read_the_lane_they_name(rng, call, source_lane):
    x = rng.integers(0, 1000, 64).astype(np.int32)
    source = f"""
        const uint i = thread_position_in_grid.x, lane = thread_index_in_simdgroup;
        const int v = in0[i];
        out[i] = {call};
    """
    lane, sg = lanes_of(64)
    expected = x[sg * 32 + source_lane(lane)]
    check(source, [x], (64,), np.int32, (64, 1, 1), (64, 1, 1), expected)


@pytest.mark.parametrize("up", [True, False])
def test_shuffle_and_fill_with_a_modulo(rng, up):
    x = rng.integers(0, 1000, 32).astype(np.int32)
    fill = rng.integers(1000, 2000, 32).astype(np.int32)
    kind = "up" if up else "down"
    source = f"""
        const uint i = thread_position_in_grid.x;
        out[i] = simd_shuffle_and_fill_{kind}(in0[i], in1[i], 2, 8);
    """
    lane = np.arange(32)
    k = lane % 8
    base = lane - k
    if up:
        expected = np.where(k >= 2, x[base + (k + 6) % 8], fill[base + (k + 6) % 8])
    else:
        expected = np.where(k + 2 < 8, x[base + (k + 2) % 8], fill[base + (k + 2) % 8])
    check(source, [x, fill], (32,), np.int32, (32, 1, 1), (32, 1, 1), expected)


def test_votes(rng):
    x = rng.integers(0, 2, 64).astype(np.int32)
    x[32:] = 1  # the second simdgroup all true
    source = """
        const uint i = thread_position_in_grid.x;
        const bool b = in0[i] != 0;
        const simd_vote v = simd_ballot(b);
        out[4 * i] = uint(static_cast<simd_vote::vote_t>(v) & 0xffffffffu);
        out[4 * i + 1] = simd_all(b);
        out[4 * i + 2] = simd_any(b);
        out[4 * i + 3] = simd_is_first();
    """
    lane, sg = lanes_of(64)
    bits = [int(sum(int(x[s * 32 + j]) << j for j in range(32))) for s in range(2)]
    expected = np.stack([np.array(bits, np.int64)[sg].astype(np.uint32),
                         np.array([x[:32].all(), x[32:].all()])[sg],
                         np.array([x[:32].any(), x[32:].any()])[sg],
                         lane == 0], axis=1).reshape(-1).astype(np.uint32)
    check(source, [x], (256,), np.uint32, (64, 1, 1), (64, 1, 1), expected)


def test_lanes_that_returned_take_no_part(rng):
    x = rng.integers(0, 100, 64).astype(np.int32)
    source = """
        const uint i = thread_position_in_grid.x;
        if (in0[i] % 3 == 0) return;
        out[i] = simd_sum(in0[i]);
    """
    kept = x % 3 != 0
    expected = np.concatenate([np.full(32, c[k].sum()) for c, k in
                               zip(np.split(x, 2), np.split(kept, 2))])
    chosen, _, got = run(source, [x], (64,), np.int32, (64, 1, 1), (64, 1, 1))
    assert chosen == "region"
    _, _, coop = run(source, [x], (64,), np.int32, (64, 1, 1), (64, 1, 1), cooperative=True)
    # Lanes that returned leave their output as it was (poisoned).
    np.testing.assert_array_equal(got[kept], expected[kept])
    assert (got[~kept] == poisoned((1,), np.int32)[0]).all()
    assert got.tobytes() == coop.tobytes()


@pytest.mark.parametrize("braced", [True, False])
def test_a_butterfly_in_a_uniform_loop(rng, braced):
    x = rng.standard_normal(128).astype(np.float32)
    step = "{ s += simd_shuffle_xor(s, d); }" if braced else "s += simd_shuffle_xor(s, d);"
    source = f"""
        const uint i = thread_position_in_grid.x;
        float s = in0[i];
        for (ushort d = 16; d > 0; d /= 2) {step}
        out[i] = s;
    """
    expected = np.repeat(x.astype(np.float64).reshape(4, 32).sum(1), 32)
    check(source, [x], (128,), np.float32, (128, 1, 1), (128, 1, 1), expected, tolerance=1e-5)


def test_nested_uniform_loops_with_an_operation_inside(rng):
    x = rng.integers(0, 10, (3, 64)).astype(np.int32)
    source = """
        const uint i = thread_position_in_grid.x;
        int total = 0;
        for (uint r = 0; r < 3; ++r) {
            for (uint k = 0; k < 2; ++k) {
                const int v = in0[r * 64 + i] * int(k + 1);
                total += simd_sum(v);
            }
        }
        out[i] = total;
    """
    sums = x.reshape(3, 2, 32).sum(axis=(0, 2)) * 3
    check(source, [x.reshape(-1)], (64,), np.int32, (64, 1, 1), (64, 1, 1), np.repeat(sums, 32))


# A loop that waits for nothing, before an operation: one that branches runs as the group's
# loop (a loop over the threads inside it), one that does not stays each thread's own.
ROW_SCANS = {
    "branches": ("if (v > best) { best = v; at = k; }", True),
    "does not branch": ("at += uint(v > best); best = max(best, v);", False),
}


@pytest.mark.parametrize("scan", ROW_SCANS)
def test_a_loop_before_an_operation_runs_as_the_group_s_loop_only_if_it_branches(rng, scan):
    x = rng.standard_normal((64, 8)).astype(np.float32)
    step, group_loop = ROW_SCANS[scan]
    source = f"""
        const uint i = thread_position_in_grid.x;
        float best = -INFINITY;
        uint at = 0;
        for (uint k = 0; k < 8; ++k) {{
            const float v = in0[i * 8 + k];
            {step}
        }}
        out[i] = int(at) + (best == simd_max(best) ? 100 : 0);
    """
    best = x.max(axis=1)
    if group_loop:
        at = x.argmax(axis=1)
    else:
        at = (x > np.maximum.accumulate(np.pad(x, ((0, 0), (1, 0)), constant_values=-np.inf),
                                        axis=1)[:, :-1]).sum(axis=1)
    tops = np.repeat(best.reshape(2, 32).max(axis=1), 32)
    check(source, [x.reshape(-1)], (64,), np.int32, (64, 1, 1), (64, 1, 1),
          at + np.where(best == tops, 100, 0))
    kernel = kjit.metal_kernel("row_scan", ["in0"], ["out"], source)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        kernel(inputs=[x.reshape(-1)], output_shapes=[(64,)], output_dtypes=[np.int32],
               grid=(64, 1, 1), threadgroup=(64, 1, 1), verbose=True, device="cpu")
    header = r"for \(uint k = 0; k < 8; \+\+k\)"
    runs_threads = re.search(header + r"\s*(#line[^\n]*\s*)*\{\s*::kjit::for_each_thread",
                             printed.getvalue())
    assert bool(runs_threads) == group_loop, printed.getvalue()


def test_an_operation_in_an_if_condition_and_two_in_one_statement(rng):
    x = rng.integers(-5, 6, 64).astype(np.int32)
    source = """
        const uint i = thread_position_in_grid.x;
        const int v = in0[i];
        int r = simd_max(v) - simd_min(v);
        if (simd_any(v > 4)) r += 1000;
        out[i] = r;
    """
    expected = []
    for s in range(0, 64, 32):
        c = x[s:s + 32]
        expected += [c.max() - c.min() + (1000 if (c > 4).any() else 0)] * 32
    check(source, [x], (64,), np.int32, (64, 1, 1), (64, 1, 1), np.array(expected))


def test_a_block_reduction_with_barriers_and_operations_in_a_2d_group(rng):
    x = rng.standard_normal((16, 64)).astype(np.float32)
    source = """
        threadgroup float partial[4];
        const uint t = thread_index_in_threadgroup;
        float v = in0[thread_position_in_grid.y * 64 + thread_position_in_grid.x];
        v = simd_sum(v);
        if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float total = t < 4 ? partial[t] : 0.0f;
        total = simd_sum(total);
        if (t == 0) out[threadgroup_position_in_grid.x + 4 * threadgroup_position_in_grid.y] = total;
    """
    # Groups of 32 x 4 threads: four rows of a 16 x 64 array's quarter each.
    expected = np.zeros(16)
    for gy in range(4):
        for gx in range(2):
            expected[gx + 4 * gy] = x[4 * gy:4 * gy + 4, 32 * gx:32 * gx + 32].astype(
                np.float64).sum()
    chosen, _, out = run(source, [x.reshape(-1)], (16,), np.float32, (64, 16, 1), (32, 4, 1))
    assert chosen == "region"
    _, _, coop = run(source, [x.reshape(-1)], (16,), np.float32, (64, 16, 1), (32, 4, 1),
                  cooperative=True)
    written = np.array([gx + 4 * gy for gy in range(4) for gx in range(2)])
    np.testing.assert_allclose(out[written], expected[written], rtol=1e-5, atol=1e-5)
    assert out.tobytes() == coop.tobytes()


ROW_SUM = """
    const uint row = thread_position_in_grid.y + 37 * thread_position_in_grid.z;
    const uint lane = thread_index_in_simdgroup;
    int s = 0;
    for (uint k0 = 0; k0 < 64; k0 += 32) {
        const int v = in0[row * 64 + k0 + lane];
        if (v > 0) s += v;
    }
    const int total = simd_sum(s);
    if (thread_position_in_grid.x < 32) out[row * 32 + lane] = total * 32 + int(lane);
"""


@pytest.mark.parametrize("grid,group", [((32, 37, 3), (32, 4, 2)),   # rows of one simdgroup
                                        ((32, 37, 3), (32, 1, 1)),
                                        ((48, 37, 3), (32, 4, 1))])  # and a partial row
def test_rows_of_a_simdgroup_count_their_lanes(rng, grid, group):
    # Partial groups at the y and z edges; with 48 threads a row, the second group of each row
    # has 16, whose lanes are not a whole simdgroup.
    rows = grid[1] * grid[2]
    x = rng.integers(-5, 6, (rows, 64)).astype(np.int32)
    expected = np.where(x > 0, x, 0).sum(1)[:, None] * 32 + np.arange(32)
    check(ROW_SUM, [x.reshape(-1)], (rows * 32,), np.int32, grid, group, expected.reshape(-1))


def test_grids_beyond_the_small_grid_bound_take_the_general_entry_point(rng):
    # More than 2^20 threads along x: the kernel's other entry point runs it, still right.
    n = (1 << 20) + 96
    x = rng.integers(-3, 4, n).astype(np.int32)
    source = """
        const uint i = thread_position_in_grid.x;
        out[i] = simd_sum(in0[i]) * 32 + int(thread_index_in_simdgroup);
    """
    lane = np.arange(n) % 32
    expected = np.repeat(x.reshape(-1, 32).sum(1), 32) * 32 + lane
    check(source, [x], (n,), np.int32, (n, 1, 1), (64, 1, 1), expected)


CUDA_CASES = [
    ("__shfl_down_sync(0xffffffffu, v, 4, 16)",
     lambda x, lane: x[np.where(lane % 16 + 4 < 16, lane + 4, lane) + (np.arange(64) // 32) * 32]),
    ("__shfl_xor_sync(0xffffffffu, v, 1)",
     lambda x, lane: x[(lane ^ 1) + (np.arange(64) // 32) * 32]),
    ("__shfl_sync(0xffffffffu, v, 3, 8)",
     lambda x, lane: x[(lane & ~7) + 3 + (np.arange(64) // 32) * 32]),
    ("__reduce_add_sync(0xffffffffu, v)",
     lambda x, lane: np.repeat(x.reshape(2, 32).sum(1), 32)),
    ("__reduce_max_sync(0xffffffffu, v)",
     lambda x, lane: np.repeat(x.reshape(2, 32).max(1), 32)),
    ("(int)__ballot_sync(0xffffffffu, v > 50)",
     lambda x, lane: np.repeat([np.int64(sum(int(b) << j for j, b in enumerate(c > 50)))
                                .astype(np.uint32).view(np.int32) for c in x.reshape(2, 32)],
                               32)),
    ("__all_sync(0xffffffffu, v >= 0) + 2 * __any_sync(0xffffffffu, v > 98)",
     lambda x, lane: np.repeat([int((c >= 0).all()) + 2 * int((c > 98).any())
                                for c in x.reshape(2, 32)], 32)),
]


@pytest.mark.parametrize("call,expect", CUDA_CASES, ids=[c for c, _ in CUDA_CASES])
def test_cuda_warp_functions(rng, call, expect):
    x = rng.integers(0, 100, 64).astype(np.int32)
    source = f"""
        const int v = in0[threadIdx.x];
        out[threadIdx.x] = {call};
    """
    lane, _ = lanes_of(64)
    check(source, [x], (64,), np.int32, (64, 1, 1), (64, 1, 1), expect(x, lane), dialect="cuda")


def test_a_cuda_warp_reduction_loop_with_syncwarp(rng):
    x = rng.standard_normal(256).astype(np.float32)
    source = """
        float s = in0[blockIdx.x * blockDim.x + threadIdx.x];
        for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
        __syncwarp();
        if (threadIdx.x % 32 == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = s;
    """
    expected = x.astype(np.float64).reshape(8, 32).sum(1)
    check(source, [x], (8,), np.float32, (256, 1, 1), (128, 1, 1), expected, dialect="cuda",
          tolerance=1e-5)


# Lanes may reach these operations apart: they run in cooperative mode, with Metal's semantics
# (an operation in a branch combines the lanes that take it).
@pytest.mark.parametrize("body,expected", [
    ("if (lane < 16) v = simd_sum(v);", lambda x: np.where(np.arange(32) < 16, x[:16].sum(), x)),
    ("if (lane >= 8 && simd_any(v > 1000)) v = 0;", lambda x: x),
    ("for (uint k = lane; k < 1; ++k) v = simd_max(v);",
     lambda x: np.where(np.arange(32) == 0, x[0], x)),
    ("v = simd_sum(simd_shuffle(v, 0));", lambda x: np.full(32, 32 * x[0])),
    ("if (lane < 16) v = simd_sum(v); else v = simd_sum(v * 100);",
     lambda x: np.where(np.arange(32) < 16, x[:16].sum(), 100 * x[16:].sum())),
], ids=["in a branch", "after &&", "in a loop the lanes run apart", "nested",
        "two on one line in the two branches"])
def test_operations_lanes_may_reach_apart_stay_cooperative(rng, body, expected):
    x = rng.integers(0, 100, 32).astype(np.int32)
    source = f"""
        const uint lane = thread_index_in_simdgroup;
        int v = in0[lane];
        {body}
        out[lane] = v;
    """
    chosen, _, out = run(source, [x], (32,), np.int32, (32, 1, 1), (32, 1, 1))
    assert chosen == "cooperative"
    np.testing.assert_array_equal(out, expected(x.astype(np.int64)))


def test_statements_after_an_unbraced_loop_of_a_loop_run_once(rng):
    # The inner loop is the outer one's whole body: what follows it runs once per thread.
    x = rng.integers(0, 10, 64).astype(np.int32)
    source = """
        const uint i = thread_position_in_grid.x;
        const int v = in0[i];
        int total = 0;
        for (uint r = 0; r < 3; ++r)
            for (uint k = 0; k < 2; ++k) total += simd_sum(v * int(r + k));
        total = total * 2 + 1;
        out[i] = total;
    """
    sums = x.astype(np.int64).reshape(2, 32).sum(1)
    expected = np.repeat(sums * sum(r + k for r in range(3) for k in range(2)) * 2 + 1, 32)
    chosen, _, out = run(source, [x], (64,), np.int32, (64, 1, 1), (64, 1, 1))
    np.testing.assert_array_equal(out, expected)
    assert chosen == "cooperative"


@pytest.mark.parametrize("leave,iterations", [("break", [0, 1]), ("continue", [0, 1, 3])])
def test_a_loop_with_an_operation_that_a_break_or_continue_leaves_stays_cooperative(
        rng, leave, iterations):
    x = rng.integers(0, 100, 32).astype(np.int32)
    source = f"""
        const uint lane = thread_index_in_simdgroup;
        int v = in0[lane];
        for (uint k = 0; k < 4; ++k) {{
            if (k == 2) {leave};
            v += simd_sum(v);
        }}
        out[lane] = v;
    """
    chosen, reason, out = run(source, [x], (32,), np.int32, (32, 1, 1), (32, 1, 1))
    assert chosen == "cooperative"
    assert "line 4: a loop with waits that 'break' or 'continue' may leave early" in reason
    expected = x.astype(np.int64)
    for _ in iterations:
        expected = expected + expected.sum()
    np.testing.assert_array_equal(out, expected)


# Breaks that leave a statement inside the loop, which each thread runs on its own: an inner
# loop, or a switch. Each gives lane l the value m(l).
INNER_BREAKS = {
    "loop": ("""for (uint j = 0; j < 8; ++j) {
                if (j == lane % 5) break;
                m += int(j);
            }""", lambda lane: (lane % 5) * (lane % 5 - 1) // 2),
    "switch": ("switch (lane % 3) { case 0: m = 1; break; case 1: m = 2; break; default: break; }",
               lambda lane: np.array([1, 2, 0])[lane % 3]),
}


@pytest.mark.parametrize("inner", INNER_BREAKS)
def test_a_break_of_a_statement_in_a_loop_with_an_operation_keeps_region_mode(rng, inner):
    statement, m_of = INNER_BREAKS[inner]
    x = rng.integers(0, 100, 64).astype(np.int32)
    source = f"""
        const uint lane = thread_index_in_simdgroup;
        int v = in0[thread_position_in_grid.x];
        for (uint k = 0; k < 3; ++k) {{
            int m = 0;
            {statement}
            v += simd_sum(m);
        }}
        out[thread_position_in_grid.x] = v;
    """
    m = m_of(np.arange(64) % 32)
    expected = x.astype(np.int64) + 3 * m.reshape(2, 32).sum(1).repeat(32)
    check(source, [x], (64,), np.int32, (64, 1, 1), (64, 1, 1), expected)
