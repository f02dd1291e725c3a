"""Bodies whose only waits are barriers every thread of a group meets: on the CPU they run in
region mode (each stretch between barriers a loop over the group's threads), checked here
against NumPy on the CPU and, where there is one, on the GPU."""

import contextlib
import io

import numpy as np
import pytest

import kjit
from conftest import DEVICES, poisoned

# Threads past the end leave before the first barrier; the others reduce their group's values.
SUM_WITH_EARLY_EXIT = """
    threadgroup float partial[64];
    const uint lid = thread_index_in_threadgroup, gid = thread_position_in_grid.x;
    const uint first = threadgroup_position_in_grid.x * 64;
    const uint count = min(64u, n - first);
    if (gid >= n) return;
    partial[lid] = inp[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = threads_per_threadgroup.x / 2; s > 0; s /= 2) {
        if (lid < s && lid + s < count) partial[lid] += partial[lid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) out[threadgroup_position_in_grid.x] = partial[0];
"""


@pytest.fixture(autouse=True)
def region_mode_on(monkeypatch):
    """These tests are of region mode: whatever KJIT_CPU_REGIONS says for the rest of the run."""
    monkeypatch.delenv("KJIT_CPU_REGIONS", raising=False)


def generated_source(kernel, **kw) -> str:
    """The source kjit generates for this call (verbose=True), with the call's outputs."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        outputs = kernel(**kw, verbose=True)
    return printed.getvalue(), outputs


def run_in_two_groups(kernel, x, device="cpu"):
    """The source generated for |kernel| on 64 float32 inputs in two groups of 32, and its one
    output (poisoned first)."""
    text, (out,) = generated_source(
        kernel, inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
        grid=(64, 1, 1), threadgroup=(32, 1, 1), device=device,
        outputs=[poisoned(x.shape, np.float32)])
    return text, out


@pytest.mark.parametrize("device", DEVICES)
def test_threads_that_leave_early_count_as_arrived(device, rng):
    n = int(rng.integers(900, 1000))
    x = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // 64) + 1  # one group past the end, whose threads all leave
    kernel = kjit.metal_kernel("sum_early_exit", ["inp", "n"], ["out"], SUM_WITH_EARLY_EXIT)
    text, (out,) = generated_source(
        kernel, inputs=[x, np.uint32(n)], output_shapes=[(groups,)], output_dtypes=[np.float32],
        grid=(groups * 64, 1, 1), threadgroup=(64, 1, 1), device=device,
        outputs=[poisoned((groups,), np.float32)])
    if device == "cpu":
        assert "for_each_thread" in text and "co_await" not in text, text
    padded = np.zeros(groups * 64)
    padded[:n] = x
    expected = padded.reshape(groups, 64).sum(1)
    np.testing.assert_allclose(out[:groups - 1], expected[:groups - 1], rtol=1e-5, atol=1e-5)
    assert np.isnan(out[groups - 1])  # nobody wrote it: its threads all left


TRANSPOSE = """
    __shared__ float tile[8][9];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned x = blockIdx.x * 8 + tx, y = blockIdx.y * 8 + ty;
    auto at = [&](unsigned r, unsigned c) { return inp[r * inp_shape[1] + c]; };
    if (x < inp_shape[1] && y < inp_shape[0]) tile[ty][tx] = at(y, x);
    __syncthreads();
    const unsigned ox = blockIdx.y * 8 + tx, oy = blockIdx.x * 8 + ty;
    if (ox < inp_shape[0] && oy < inp_shape[1]) out[oy * inp_shape[0] + ox] = tile[tx][ty];
"""


@pytest.mark.parametrize("device", DEVICES)
def test_cuda_transpose_through_shared_memory(device, rng):
    # Sizes that are no multiple of the tile: the grid covers whole tiles, the body checks bounds.
    h, w = int(rng.integers(20, 40)), int(rng.integers(20, 40))
    a = rng.standard_normal((h, w)).astype(np.float32)
    kernel = kjit.cuda_kernel("transpose_tile", ["inp"], ["out"], TRANSPOSE)
    grid = (-(-w // 8) * 8, -(-h // 8) * 8, 1)
    text, (out,) = generated_source(
        kernel, inputs=[a], output_shapes=[(w, h)], output_dtypes=[np.float32], grid=grid,
        threadgroup=(8, 8, 1), device=device, outputs=[poisoned((w, h), np.float32)])
    if device == "cpu":
        assert "for_each_thread" in text and "co_await" not in text, text
    np.testing.assert_array_equal(out, a.T)


# A per-thread variable that changes in a loop with a barrier (which buffer holds the result).
PREFIX_SUM = """
    threadgroup float buf[2][BLOCK];
    const uint lid = thread_index_in_threadgroup;
    uint src = 0;
    buf[0][lid] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint d = 1; d < BLOCK; d *= 2) {
        const float v = buf[src][lid] + (lid >= d ? buf[src][lid - d] : 0.0f);
        buf[1 - src][lid] = v;
        src = 1 - src;
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[thread_position_in_grid.x] = buf[src][lid];
"""


@pytest.mark.parametrize("device", DEVICES)
def test_inclusive_scan_with_a_carried_buffer_index(device, rng):
    block, groups = 64, 37
    x = rng.standard_normal(block * groups).astype(np.float32)
    kernel = kjit.metal_kernel("scan_blocks", ["inp"], ["out"], PREFIX_SUM)
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                    grid=(x.size, 1, 1), threadgroup=(block, 1, 1), template=[("BLOCK", block)],
                    device=device, outputs=[poisoned(x.shape, np.float32)])
    expected = np.cumsum(x.astype(np.float64).reshape(groups, block), axis=1).reshape(-1)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


# Variables the regions share live in per-thread slots; a region works on copies of them, but
# one whose address the body keeps (at) is reached through its slot, which outlives a region.
CARRIED_POINTER = """
    threadgroup float v[64];
    const uint t = thread_index_in_threadgroup, i = thread_position_in_grid.x;
    float a = inp[i], b = 2.0f * inp[i];
    thread float* at = t % 2 == 0 ? &(a) : &b;
    float later;
    v[t] = a;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    *at += v[(t + 1) % 64];
    if (a > b) later = a; else later = b;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = a - b + later;
"""


def run_in_groups_of_64(kernel, x, device):
    """The output of |kernel| over float32 |x| in groups of 64 (poisoned first); on the CPU,
    checked to have run in region mode."""
    text, (out,) = generated_source(
        kernel, inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
        grid=(x.size, 1, 1), threadgroup=(64, 1, 1), device=device,
        outputs=[poisoned(x.shape, np.float32)])
    if device == "cpu":
        assert "for_each_thread" in text and "co_await" not in text, text
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_variables_shared_by_regions_keep_their_values_and_addresses(device, rng):
    x = rng.standard_normal(64 * 5).astype(np.float32)
    kernel = kjit.metal_kernel("carried_pointer", ["inp"], ["out"], CARRIED_POINTER)
    out = run_in_groups_of_64(kernel, x, device)
    x64 = x.astype(np.float64)
    neighbour = np.roll(x64.reshape(-1, 64), -1, axis=1).reshape(-1)
    even = np.arange(x.size) % 2 == 0
    a = np.where(even, x64 + neighbour, x64)
    b = np.where(even, 2 * x64, 2 * x64 + neighbour)
    np.testing.assert_allclose(out, a - b + np.maximum(a, b), rtol=1e-5, atol=1e-5)


# A pointer kept across a wait to a variable the regions share, however it was taken (by a
# function of the header, a lambda, a template, a builtin): it must reach the variable's slot.
ADDRESS_FORMS = {
    "header function": ("inline thread float* address_of(thread float& r) { return &r; }",
                        "", "address_of(a)"),
    "body lambda": ("", "auto address_of = [](thread float& r) { return &r; };",
                    "address_of(a)"),
    "template": ("template <class T> thread T* address_of(thread T& r) { return &r; }", "",
                 "address_of<float>((a))"),
    "builtin": ("", "", "__builtin_addressof(a)"),
    "captured by reference": ("", "auto get = [&]() -> thread float& { return a; };", "&get()"),
}
ADDRESS_KEPT = """
    threadgroup float v[64];
    const uint t = thread_index_in_threadgroup, i = thread_position_in_grid.x;
    float a = inp[i];
    {declare}
    thread float* at = {take};
    v[t] = a;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    *at += v[(t + 1) % 64];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = a;
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", ADDRESS_FORMS)
def test_pointers_kept_across_a_wait_reach_the_variables_they_were_taken_from(
        device, form, rng):
    x = rng.standard_normal(64 * 3).astype(np.float32)
    header, declare, take = ADDRESS_FORMS[form]
    source = ADDRESS_KEPT.replace("{declare}", declare).replace("{take}", take)
    kernel = kjit.metal_kernel("address_kept", ["inp"], ["out"], source, header=header)
    out = run_in_groups_of_64(kernel, x, device)
    x64 = x.astype(np.float64)
    neighbour = np.roll(x64.reshape(-1, 64), -1, axis=1).reshape(-1)
    np.testing.assert_allclose(out, x64 + neighbour, rtol=1e-5, atol=1e-5)


# A shared variable (bin) that a debug build's checks rewrite into the text around it: the
# body still runs in regions, and each group adds its tile, reversed, into four bins.
BINNED_SUM_CUDA = """
    __shared__ float tile[64];
    const unsigned t = threadIdx.x;
    unsigned bin = t % 4;
    tile[t] = inp[blockIdx.x * 64 + t];
    __syncthreads();
    atomicAdd(out + bin, tile[63 - t]);
"""


@pytest.mark.parametrize("device", DEVICES)
def test_debug_builds_of_region_bodies_keep_their_shared_variables(device, rng):
    x = rng.standard_normal(192).astype(np.float32)
    kernel = kjit.cuda_kernel("binned_sum", ["inp"], ["out"], BINNED_SUM_CUDA,
                              compile_options={"debug": True})
    text, (out,) = generated_source(
        kernel, inputs=[x], output_shapes=[(4,)], output_dtypes=[np.float32],
        grid=(192, 1, 1), threadgroup=(64, 1, 1), device=device,
        outputs=[np.zeros(4, np.float32)])
    if device == "cpu":
        assert "for_each_thread" in text and "co_await" not in text, text
    j = np.arange(192)
    expected = [x[(j % 64) % 4 == 3 - b].astype(np.float64).sum() for b in range(4)]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


# Inner variables named like one the regions share keep cooperative mode.
SHADOWING = """
    threadgroup float shared_vals[32];
    const uint t = thread_index_in_threadgroup;
    shared_vals[t] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float acc = shared_vals[(t + 1) % 32];
    {
        float t INIT;
        t = 2.0f;
        acc *= t;
    }
    out[thread_position_in_grid.x] = acc + float(t);
"""


@pytest.mark.parametrize("initialised", [False, True])
def test_inner_variables_shadowing_a_shared_one(initialised, rng):
    x = rng.standard_normal(96).astype(np.float32)
    kernel = kjit.metal_kernel("shadowing", ["inp"], ["out"],
                               SHADOWING.replace(" INIT", " = 3.0f" if initialised else ""))
    text, (out,) = generated_source(
        kernel, inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
        grid=(96, 1, 1), threadgroup=(32, 1, 1), device="cpu",
        outputs=[poisoned(x.shape, np.float32)])
    assert "co_await" in text, text
    t = np.arange(96) % 32
    neighbour = x.reshape(3, 32)[:, (np.arange(32) + 1) % 32].reshape(-1)
    np.testing.assert_allclose(out, neighbour * 2.0 + t, rtol=1e-6)


# Barriers that not every thread reaches alike keep the coroutines: inside a branch, or in a
# loop whose header differs from thread to thread.
@pytest.mark.parametrize("body", [
    """
    threadgroup float v[32];
    const uint t = thread_index_in_threadgroup;
    v[t] = inp[thread_position_in_grid.x];
    if (threads_per_threadgroup.x > 1) threadgroup_barrier(mem_flags::mem_threadgroup);
    out[thread_position_in_grid.x] = v[(t + 1) % threads_per_threadgroup.x];
    """,
    """
    threadgroup float v[32];
    const uint t = thread_index_in_threadgroup;
    v[t] = inp[thread_position_in_grid.x];
    for (uint k = t / 32; k < 1; ++k) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[thread_position_in_grid.x] = v[(t + 1) % threads_per_threadgroup.x];
    """,
])
def test_barriers_threads_may_reach_apart_keep_cooperative_mode(body, rng):
    x = rng.standard_normal(64).astype(np.float32)
    kernel = kjit.metal_kernel("rotate", ["inp"], ["out"], body)
    text, out = run_in_two_groups(kernel, x)
    assert "co_await" in text, text
    np.testing.assert_array_equal(out, np.roll(x.reshape(2, 32), -1, axis=1).reshape(-1))


COUNTER_STEPPED_IN_THE_BODY = [
    """
    threadgroup float hits[32];
    const uint lid = thread_index_in_threadgroup;
    hits[lid] = 0;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int t = 0; t < 8; ) {
        hits[lid] += 1;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        t += 2;
    }
    out[thread_position_in_grid.x] = hits[lid] + inp[thread_position_in_grid.x];
    """,
    """
    threadgroup float hits[32];
    const uint lid = thread_index_in_threadgroup;
    hits[lid] = 0;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 16; s > 1; ) {
        hits[lid] += 1;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        s >>= 1;
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[thread_position_in_grid.x] = hits[lid] + inp[thread_position_in_grid.x];
    """,
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("body", COUNTER_STEPPED_IN_THE_BODY)
def test_a_loop_counter_the_body_steps_is_stepped_once_per_iteration(body, device, rng):
    x = rng.standard_normal(64).astype(np.float32)
    kernel = kjit.metal_kernel("stepped_in_body", ["inp"], ["out"], body)
    _, out = run_in_two_groups(kernel, x, device)
    np.testing.assert_array_equal(out, x + 4)  # four iterations, each thread counting its own


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("loop", ["for (;;)", "while (true)", "for (int k = 0; k < 1 << 30; ++k)"])
def test_a_loop_every_thread_leaves_by_returning_ends(loop, device, rng):
    x = rng.standard_normal(64).astype(np.float32)
    kernel = kjit.metal_kernel("left_by_return", ["inp"], ["out"], f"""
        threadgroup float shared[32];
        const uint lid = thread_index_in_threadgroup;
        float acc = 0.0f;
        int round = 0;
        {loop} {{
            shared[lid] = inp[thread_position_in_grid.x] + round;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            acc += shared[31 - lid];
            ++round;
            if (round == 3) {{
                out[thread_position_in_grid.x] = acc;
                return;
            }}
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }}
    """)
    text, out = run_in_two_groups(kernel, x, device)
    if device == "cpu":
        assert "for_each_thread" in text and "co_await" not in text, text
    mirrored = x.reshape(2, 32)[:, ::-1].reshape(-1)
    expected = np.zeros(64, np.float32)
    for r in range(3):  # the body's own float32 additions, in its order
        expected += mirrored + np.float32(r)
    np.testing.assert_array_equal(out, expected)


def test_regions_can_be_turned_off(monkeypatch, rng):
    monkeypatch.setenv("KJIT_CPU_REGIONS", "0")
    n = 200
    x = rng.standard_normal(n).astype(np.float32)
    kernel = kjit.metal_kernel("sum_early_exit_coroutines", ["inp", "n"], ["out"],
                               SUM_WITH_EARLY_EXIT)
    text, (out,) = generated_source(
        kernel, inputs=[x, np.uint32(n)], output_shapes=[(4,)], output_dtypes=[np.float32],
        grid=(256, 1, 1), threadgroup=(64, 1, 1), device="cpu",
        outputs=[poisoned((4,), np.float32)])
    assert "co_await" in text and "for_each_thread" not in text, text
    padded = np.zeros(256)
    padded[:n] = x
    np.testing.assert_allclose(out, padded.reshape(4, 64).sum(1), rtol=1e-5, atol=1e-5)


# continue in a loop with barriers leaves region mode's thread loop: that source does not
# compile, and the kernel runs in cooperative mode instead.
SKIPPING_ROUNDS = """
    threadgroup float v[32];
    const uint t = thread_index_in_threadgroup;
    v[t] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float acc = 0.0f;
    for (uint round = 0; round < 4; ++round) {
        if (round == 2) continue;
        acc += v[(t + round) % 32];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[thread_position_in_grid.x] = acc;
"""


def test_a_body_region_mode_cannot_compile_runs_as_coroutines(rng):
    x = rng.standard_normal(64).astype(np.float32)
    kernel = kjit.metal_kernel("skipping_rounds", ["inp"], ["out"], SKIPPING_ROUNDS)
    text, out = run_in_two_groups(kernel, x)
    assert "co_await" in text, text
    v = x.reshape(2, 32).astype(np.float64)
    idx = np.arange(32)
    expected = sum(v[:, (idx + r) % 32] for r in (0, 1, 3)).reshape(-1)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_errors_of_a_body_with_barriers_name_its_own_line():
    kernel = kjit.metal_kernel("broken", ["inp"], ["out"], """
        threadgroup float v[32];
        v[thread_index_in_threadgroup] = inp[0];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[0] = v[0] + undefined_name;
    """)
    with pytest.raises(kjit.CompileError, match=r"source line 5:") as info:
        kernel(inputs=[np.ones(32, np.float32)], output_shapes=[(1,)],
               output_dtypes=[np.float32], grid=(32, 1, 1), threadgroup=(32, 1, 1),
               device="cpu")
    assert "undefined_name" in str(info.value)
