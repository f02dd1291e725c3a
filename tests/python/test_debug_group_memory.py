"""Debug builds' checks of group memory (threadgroup / __shared__ arrays the body declares):
every index is checked against its dimension's extent, on the CPU and the GPU; on the CPU, races
between two barriers (two threads touching one element, one writing) and threads of a group that
reach different barriers are reported with both threads and lines, in each way the CPU runs a
group (one loop, regions between barriers, coroutines). Planted bugs of each kind, and clean
kernels that report nothing and compute what NumPy does."""

import numpy as np
import pytest

import kjit
from conftest import DEVICES

DEBUG = {"debug": True}

# How a body with barriers runs on the CPU: regions between barriers (by default) or coroutines.
MODES = ["regions", "coroutines"]


@pytest.fixture
def cpu_mode(request, monkeypatch):
    """Runs the test with its body's threads as regions or as coroutines."""
    if request.param == "coroutines":
        monkeypatch.setenv("KJIT_CPU_REGIONS", "0")
    return request.param


def call(kernel, inputs, n_out, grid, threadgroup, device="cpu", **kw):
    return kernel(inputs=inputs, output_shapes=[(n_out,)], output_dtypes=[np.float32],
                  grid=grid, threadgroup=threadgroup, device=device, **kw)[0]


# --- bounds ----------------------------------------------------------------------------------

# The last thread of each group of 64 reads one past the tile (line 7).
READ_PAST_METAL = """
    threadgroup float tile[64];
    uint l = thread_position_in_threadgroup.x;
    uint i = thread_position_in_grid.x;
    tile[l] = inp[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = l == 63 && i > 64 ? tile[l + 1] : tile[63 - l];
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
@pytest.mark.parametrize("device", DEVICES)
def test_a_read_past_a_threadgroup_array_is_reported(rng, device, cpu_mode):
    kernel = kjit.metal_kernel(name="dbg_tg_read", input_names=["inp"], output_names=["out"],
                               source=READ_PAST_METAL, compile_options=DEBUG)
    x = rng.standard_normal(128).astype(np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [x], 128, (128, 1, 1), (64, 1, 1), device)
    assert ("debug check: threadgroup array 'tile' was indexed at 64, outside the array (its "
            "indices are 0 to 63), at line 7 of the source, by the thread at (127, 0, 0) in the "
            "grid (in threadgroup (1, 0, 0))") in str(e.value)
    # One group only: nothing out of bounds, and the tile is reversed.
    out = call(kernel, [x[:64]], 64, (64, 1, 1), (64, 1, 1), device)
    np.testing.assert_array_equal(out, x[:64][::-1])


# Thread 5 writes before the start of the shared array (line 6): the write is skipped, and the
# array holds what the other threads wrote.
WRITE_BEFORE_CUDA = """
    __shared__ float s[32];
    int l = threadIdx.x;
    int i = blockIdx.x * blockDim.x + l;
    s[l] = inp[i];
    if (l == 5) s[l - 6] = -1.0f;
    __syncthreads();
    out[i] = s[(l + 1) % 32];
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
@pytest.mark.parametrize("device", DEVICES)
def test_a_write_before_a_shared_array_is_skipped_and_reported(rng, device, cpu_mode):
    kernel = kjit.cuda_kernel(name="dbg_sh_write", input_names=["inp"], output_names=["out"],
                              source=WRITE_BEFORE_CUDA, compile_options=DEBUG)
    x = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(32, np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        kernel(inputs=[x], output_shapes=[(32,)], output_dtypes=[np.float32], grid=(32, 1, 1),
               threadgroup=(32, 1, 1), device=device,
               **({"outputs": [out]} if device == "cpu" else {}))
    assert ("debug check: __shared__ array 's' was indexed at -1, outside the array (its indices "
            "are 0 to 31), at line 6 of the source, by the thread at (5, 0, 0) in the grid (in "
            "threadgroup (0, 0, 0))") in str(e.value)
    if device == "cpu":  # the kernel ran on, and no element of s was overwritten
        np.testing.assert_array_equal(out, np.roll(x, -1))


# A tile of 8 x 9 (a padded transpose): thread (7, 3) reads column 9 of row 3 (line 7).
TILE_2D_METAL = """
    threadgroup float tile[8][9];
    uint2 l = thread_position_in_threadgroup.xy;
    uint2 g = threadgroup_position_in_grid.xy;
    tile[l.y][l.x] = inp[(g.y * 8 + l.y) * 16 + g.x * 8 + l.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float v = (l.x == 7 && l.y == 3 && g.x == 1 && g.y == 0) ? tile[l.y][l.x + 2] : tile[l.x][l.y];
    out[(g.x * 8 + l.y) * 16 + g.y * 8 + l.x] = v;
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
@pytest.mark.parametrize("device", DEVICES)
def test_each_dimension_of_a_2d_threadgroup_array_is_checked(rng, device, cpu_mode):
    kernel = kjit.metal_kernel(name="dbg_tg_2d", input_names=["inp"], output_names=["out"],
                               source=TILE_2D_METAL, compile_options=DEBUG)
    x = rng.standard_normal(256).astype(np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [x], 256, (16, 16, 1), (8, 8, 1), device)
    # Column 9 is inside the tile's 72 floats, but outside its row of 9.
    assert ("threadgroup array 'tile' was indexed at 9 in its dimension 2 of 2, outside the array "
            "(its indices there are 0 to 8), at line 7 of the source, by the thread at (15, 3, 0) "
            "in the grid (in threadgroup (1, 0, 0))") in str(e.value)
    # The transpose alone (the bad read is in group (1, 0) only).
    clean = TILE_2D_METAL.replace("g.x == 1", "g.x == 9")
    kernel = kjit.metal_kernel(name="dbg_tg_2d_clean", input_names=["inp"], output_names=["out"],
                               source=clean, compile_options=DEBUG)
    out = call(kernel, [x], 256, (16, 16, 1), (8, 8, 1), device)
    np.testing.assert_array_equal(out.reshape(16, 16), x.reshape(16, 16).T)


# Row 4 of a 4 x 32 shared array, written by the block's last warp (line 6).
TILE_2D_CUDA = """
    __shared__ float rows[4][32];
    int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    rows[w][lane] = inp[i];
    if (i == 254) rows[w + 1][lane] = 0.0f;
    __syncthreads();
    out[i] = rows[3 - w][lane];
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
@pytest.mark.parametrize("device", DEVICES)
def test_a_write_past_the_rows_of_a_2d_shared_array_is_reported(rng, device, cpu_mode):
    kernel = kjit.cuda_kernel(name="dbg_sh_2d", input_names=["inp"], output_names=["out"],
                              source=TILE_2D_CUDA, compile_options=DEBUG)
    x = rng.standard_normal(256).astype(np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [x], 256, (256, 1, 1), (128, 1, 1), device)
    assert ("__shared__ array 'rows' was indexed at 4 in its dimension 1 of 2, outside the array "
            "(its indices there are 0 to 3), at line 6 of the source, by the thread at "
            "(254, 0, 0) in the grid (in threadgroup (1, 0, 0))") in str(e.value)


# Dynamic shared memory of shared_memory bytes: 48 floats here, one thread reads the 49th.
DYNAMIC_CUDA = """
    extern __shared__ float buf[];
    int l = threadIdx.x;
    buf[l] = inp[l];
    __syncthreads();
    out[l] = buf[47 - l] + (l == 40 ? buf[48] : 0.0f);
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
@pytest.mark.parametrize("device", DEVICES)
def test_dynamic_shared_memory_is_checked_against_its_size(rng, device, cpu_mode):
    kernel = kjit.cuda_kernel(name="dbg_dynamic", input_names=["inp"], output_names=["out"],
                              source=DYNAMIC_CUDA, shared_memory=48 * 4, compile_options=DEBUG)
    x = rng.standard_normal(48).astype(np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [x], 48, (48, 1, 1), (48, 1, 1), device)
    assert ("__shared__ array 'buf' was indexed at 48, outside the array (its indices are 0 to "
            "47), at line 6 of the source, by the thread at (40, 0, 0) in the grid") in str(e.value)


# --- races -----------------------------------------------------------------------------------

# Each thread writes its element and reads its neighbour's with no barrier between (lines 5, 6).
NEIGHBOUR_RACE = """
    threadgroup float tile[32];
    uint l = thread_position_in_threadgroup.x;
    uint i = thread_position_in_grid.x;
    tile[l] = inp[i];
    out[i] = tile[(l + 1) % 32];
"""


@pytest.mark.parametrize("barrier", [False, True])
def test_a_read_of_an_element_another_thread_writes_without_a_barrier_is_a_race(rng, barrier):
    # Without the barrier the body runs as one loop over the group's threads. Thread 1's write
    # of element 1 after thread 0 read it is seen when the stretch ends; thread 31's read of
    # element 0, which thread 0 wrote, is seen as it happens, and comes first.
    source = NEIGHBOUR_RACE.replace(
        "    out[i]", "    threadgroup_barrier(mem_flags::mem_threadgroup);\n    out[i]"
    ) if barrier else NEIGHBOUR_RACE
    kernel = kjit.metal_kernel(name="dbg_neighbour" + "_barrier" * barrier, input_names=["inp"],
                               output_names=["out"], source=source, compile_options=DEBUG)
    x = rng.standard_normal(32).astype(np.float32)
    if barrier:
        np.testing.assert_array_equal(call(kernel, [x], 32, (32, 1, 1), (32, 1, 1)),
                                      np.roll(x, -1))
        return
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [x], 32, (32, 1, 1), (32, 1, 1))
    assert ("debug check: a race on threadgroup array 'tile': the thread at (0, 0, 0) in the grid "
            "wrote its element 0 at line 5 of the source, and the thread at (31, 0, 0) read it at "
            "line 6, with no barrier between them (in threadgroup (0, 0, 0))") in str(e.value)


# Thread 0 writes a flag that every thread then reads, with no barrier between (lines 4, 5).
BROADCAST_RACE = """
    __shared__ float scale[1];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) scale[0] = inp[blockIdx.x * blockDim.x];
    out[i] = inp[i] * scale[0];
    __syncthreads();
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
def test_a_value_one_thread_writes_and_all_read_needs_a_barrier(rng, cpu_mode):
    kernel = kjit.cuda_kernel(name="dbg_broadcast", input_names=["inp"], output_names=["out"],
                              source=BROADCAST_RACE, compile_options=DEBUG)
    x = rng.standard_normal(64).astype(np.float32) + 2.0
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [x], 64, (64, 1, 1), (32, 1, 1))
    message = str(e.value)
    assert "a race on __shared__ array 'scale': the thread at (" in message
    assert "wrote its element 0 at line 4 of the source, and the thread at (" in message
    assert "read it at line 5, with no barrier between them" in message
    # With the barrier in its place: no race, and each group scaled by its first element.
    fixed = BROADCAST_RACE.replace("    out[i] = inp[i] * scale[0];\n    __syncthreads();",
                                   "    __syncthreads();\n    out[i] = inp[i] * scale[0];")
    kernel = kjit.cuda_kernel(name="dbg_broadcast_fixed", input_names=["inp"],
                              output_names=["out"], source=fixed, compile_options=DEBUG)
    out = call(kernel, [x], 64, (64, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out, x * np.repeat(x[::32], 32))


# Thread 0 of each group sets a threadgroup variable (not an array) that every thread then reads,
# with the barrier after the reads instead of between (lines 4, 5).
VARIABLE_RACE = """
    threadgroup float total;
    uint i = thread_position_in_grid.x;
    if (thread_position_in_threadgroup.x == 0) total = inp[i] + 1.0f;
    out[i] = inp[i] * total;
    threadgroup_barrier(mem_flags::mem_threadgroup);
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
def test_a_group_variable_one_thread_writes_and_all_read_needs_a_barrier(rng, cpu_mode):
    kernel = kjit.metal_kernel(name="dbg_variable_race", input_names=["inp"],
                               output_names=["out"], source=VARIABLE_RACE, compile_options=DEBUG)
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [x], 64, (64, 1, 1), (32, 1, 1))
    assert ("debug check: a race on threadgroup variable 'total': the thread at (0, 0, 0) in the "
            "grid wrote it at line 4 of the source, and the thread at (1, 0, 0) read it at line "
            "5, with no barrier between them (in threadgroup (0, 0, 0))") in str(e.value)
    fixed = VARIABLE_RACE.replace(
        "    out[i] = inp[i] * total;\n    threadgroup_barrier(mem_flags::mem_threadgroup);",
        "    threadgroup_barrier(mem_flags::mem_threadgroup);\n    out[i] = inp[i] * total;")
    kernel = kjit.metal_kernel(name="dbg_variable_fixed", input_names=["inp"],
                               output_names=["out"], source=fixed, compile_options=DEBUG)
    out = call(kernel, [x], 64, (64, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out, x * (np.repeat(x[::32], 32) + np.float32(1.0)))


# A tiled matrix product: each group computes a 16 x 16 block of C = A B, a tile of A and one
# of B at a time. MISSING marks the barrier between using the tiles and loading the next ones:
# without it, a fast thread overwrites a tile another still reads (on a GPU whose threads run
# in lockstep the result may still come out right).
MATMUL_METAL = """
    threadgroup float a[16][16];
    threadgroup float b[16][16];
    const uint2 l = thread_position_in_threadgroup.xy;
    const uint row = thread_position_in_grid.y, col = thread_position_in_grid.x;
    float acc = 0.0f;
    for (uint t = 0; t < n / 16; ++t) {
        a[l.y][l.x] = A[row * n + t * 16 + l.x];
        b[l.y][l.x] = B[(t * 16 + l.y) * n + col];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < 16; ++k) acc += a[l.y][k] * b[k][l.x];
        MISSING
    }
    C[row * n + col] = acc;
"""
MATMUL_CUDA = """
    __shared__ float a[16][16];
    __shared__ float b[16][16];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int t = 0; t < n / 16; ++t) {
        a[ty][tx] = A[row * n + t * 16 + tx];
        b[ty][tx] = B[(t * 16 + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += a[ty][k] * b[k][tx];
        MISSING
    }
    C[row * n + col] = acc;
"""


def matmul(dialect, with_barrier):
    barrier = ("threadgroup_barrier(mem_flags::mem_threadgroup);" if dialect == "metal"
               else "__syncthreads();") if with_barrier else ""
    name = f"dbg_matmul_{dialect}" + ("" if with_barrier else "_racy")
    if dialect == "metal":
        return kjit.metal_kernel(name=name, input_names=["A", "B", "n"], output_names=["C"],
                                 source=MATMUL_METAL.replace("MISSING", barrier),
                                 compile_options=DEBUG)
    return kjit.cuda_kernel(name=name, input_names=["A", "B", "n"], output_names=["C"],
                            source=MATMUL_CUDA.replace("MISSING", barrier), compile_options=DEBUG)


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
@pytest.mark.parametrize("dialect", ["metal", "cuda"])
def test_a_tiled_matmul_missing_its_second_barrier_is_reported(rng, dialect, cpu_mode):
    n = 32
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)

    def run(kernel):
        return kernel(inputs=[a, b, np.uint32(n) if dialect == "metal" else np.int32(n)],
                      output_shapes=[(n, n)], output_dtypes=[np.float32], grid=(n, n, 1),
                      threadgroup=(16, 16, 1), device="cpu")[0]

    with pytest.raises(kjit.LaunchError) as e:
        run(matmul(dialect, with_barrier=False))
    message = str(e.value)
    tile = "threadgroup array" if dialect == "metal" else "__shared__ array"
    # The next tile's load (line 8 or 9) overwrites what the product (line 11) reads.
    assert f"a race on {tile} 'a': " in message or f"a race on {tile} 'b': " in message, message
    assert " wrote its element [" in message, message
    assert "at line 8 of the source" in message or "at line 9 of the source" in message, message
    assert "read it at line 11, with no barrier between them" in message, message
    np.testing.assert_allclose(run(matmul(dialect, with_barrier=True)), a @ b, rtol=1e-4,
                               atol=1e-4)


# --- barriers --------------------------------------------------------------------------------

# The two halves of each group wait at different barriers (lines 4 and 6): a hang on a GPU.
SPLIT_BARRIER = """
    uint l = thread_position_in_threadgroup.x;
    if (l < 16) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    } else {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[thread_position_in_grid.x] = inp[thread_position_in_grid.x];
"""


def test_threads_waiting_at_different_barriers_are_reported(rng):
    kernel = kjit.metal_kernel(name="dbg_split", input_names=["inp"], output_names=["out"],
                               source=SPLIT_BARRIER, compile_options=DEBUG)
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [x], 64, (64, 1, 1), (32, 1, 1))
    assert ("debug check: the threads of threadgroup (0, 0, 0) reached different barriers: the "
            "thread at (0, 0, 0) in the grid waits at the barrier at line 4 of the source, and "
            "the thread at (16, 0, 0) waits at the barrier at line 6") in str(e.value) or (
            "debug check: the threads of threadgroup (1, 0, 0) reached different barriers: the "
            "thread at (32, 0, 0) in the grid waits at the barrier at line 4 of the source, and "
            "the thread at (48, 0, 0) waits at the barrier at line 6") in str(e.value)
    # A barrier that every thread reaches in a branch all take alike is no divergence.
    uniform = SPLIT_BARRIER.replace("if (l < 16)", "if (threadgroup_position_in_grid.x < 1)")
    kernel = kjit.metal_kernel(name="dbg_split_uniform", input_names=["inp"],
                               output_names=["out"], source=uniform, compile_options=DEBUG)
    np.testing.assert_array_equal(call(kernel, [x], 64, (64, 1, 1), (32, 1, 1)), x)


# Thread 3 of block 1 leaves before the barrier that the others wait at: threads that left
# count as arrived, as on NVIDIA's GPUs, so this common early exit is no divergence.
LEAVING = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __shared__ float s[32];
    if (threadIdx.x == 3 && blockIdx.x == 1) return;
    s[threadIdx.x] = inp[i];
    __syncthreads();
    out[i] = s[threadIdx.x];
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
def test_a_thread_that_leaves_before_a_barrier_counts_as_arrived(rng, cpu_mode):
    kernel = kjit.cuda_kernel(name="dbg_leaving", input_names=["inp"], output_names=["out"],
                              source=LEAVING, compile_options=DEBUG)
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    call(kernel, [x], 64, (64, 1, 1), (32, 1, 1), outputs=[out])
    want = x.copy()
    want[35] = 0.0
    np.testing.assert_array_equal(out, want)


# --- clean kernels ---------------------------------------------------------------------------

# A tree reduction in shared memory, a histogram built with atomics on shared memory, and a
# dynamic shared buffer carved into two arrays: nothing to report.
REDUCTION_CUDA = """
    __shared__ float partial[64];
    int l = threadIdx.x;
    partial[l] = inp[blockIdx.x * 64 + l];
    __syncthreads();
    for (int s = 32; s > 0; s /= 2) {
        if (l < s) partial[l] += partial[l + s];
        __syncthreads();
    }
    if (l == 0) out[blockIdx.x] = partial[0];
"""
HISTOGRAM_CUDA = """
    __shared__ unsigned counts[8];
    int l = threadIdx.x;
    if (l < 8) counts[l] = 0;
    __syncthreads();
    atomicAdd(&counts[bins[blockIdx.x * blockDim.x + l] % 8], 1u);
    __syncthreads();
    if (l < 8) out[blockIdx.x * 8 + l] = float(counts[l]);
"""
REDUCTION_METAL = """
    threadgroup float partial[64];
    uint l = thread_index_in_threadgroup;
    partial[l] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 32; s > 0; s /= 2) {
        if (l < s) partial[l] += partial[l + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (l == 0) out[threadgroup_position_in_grid.x] = partial[0];
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
@pytest.mark.parametrize("device", DEVICES)
def test_clean_kernels_with_group_memory_report_nothing(rng, device, cpu_mode):
    x = rng.standard_normal(256).astype(np.float32)
    want = x.reshape(4, 64).sum(1)
    kernel = kjit.cuda_kernel(name="dbg_reduce", input_names=["inp"], output_names=["out"],
                              source=REDUCTION_CUDA, compile_options=DEBUG)
    np.testing.assert_allclose(call(kernel, [x], 4, (256, 1, 1), (64, 1, 1), device), want,
                               rtol=1e-5, atol=1e-5)
    kernel = kjit.metal_kernel(name="dbg_reduce_metal", input_names=["inp"],
                               output_names=["out"], source=REDUCTION_METAL,
                               compile_options=DEBUG)
    np.testing.assert_allclose(call(kernel, [x], 4, (256, 1, 1), (64, 1, 1), device), want,
                               rtol=1e-5, atol=1e-5)
    bins = rng.integers(0, 1000, 256).astype(np.uint32)
    kernel = kjit.cuda_kernel(name="dbg_histogram", input_names=["bins"], output_names=["out"],
                              source=HISTOGRAM_CUDA, compile_options=DEBUG)
    counts = call(kernel, [bins], 32, (256, 1, 1), (64, 1, 1), device)
    want = np.stack([np.bincount(g % 8, minlength=8) for g in bins.reshape(4, 64)]).ravel()
    np.testing.assert_array_equal(counts, want)


# Group variables of one value used as GPUs use them: a counter that every thread adds to with
# an atomic operation, set and read by one thread with barriers between, a value one thread
# sets for all, and sizeof.
COUNTER_CUDA = """
    __shared__ unsigned count;
    __shared__ float scale;
    if (threadIdx.x == 0) { count = 0; scale = inp[blockIdx.x * blockDim.x]; }
    __syncthreads();
    if (inp[blockIdx.x * blockDim.x + threadIdx.x] > 0.0f) atomicAdd(&count, 1u);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = float(count) * scale + float(sizeof(count));
"""
COUNTER_METAL = """
    threadgroup atomic_uint count;
    threadgroup float scale;
    uint l = thread_index_in_threadgroup, g = threadgroup_position_in_grid.x;
    if (l == 0) { atomic_store_explicit(&count, 0u, memory_order_relaxed); scale = inp[g * 64]; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (inp[thread_position_in_grid.x] > 0.0f)
        atomic_fetch_add_explicit(&count, 1u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (l == 0)
        out[g] = float(atomic_load_explicit(&count, memory_order_relaxed)) * scale + 4.0f;
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
@pytest.mark.parametrize("device", DEVICES)
def test_clean_kernels_with_group_variables_report_nothing(rng, device, cpu_mode):
    x = rng.standard_normal(256).astype(np.float32)
    groups = x.reshape(4, 64)
    want = (groups > 0).sum(1).astype(np.float32) * groups[:, 0] + 4.0
    for make, source in [(kjit.cuda_kernel, COUNTER_CUDA), (kjit.metal_kernel, COUNTER_METAL)]:
        kernel = make(name="dbg_counter_" + make.__name__, input_names=["inp"],
                      output_names=["out"], source=source, compile_options=DEBUG)
        out = call(kernel, [x], 4, (256, 1, 1), (64, 1, 1), device)
        np.testing.assert_allclose(out, want, rtol=1e-6)


# Group memory the header declares at its top level, which the body indexes: thread 7 of each
# group of 8 writes one past the array (line 2).
HEADER_CACHE = "#define WIDTH 8\n__shared__ float cache[WIDTH];\n"
HEADER_BODY = """
    int l = threadIdx.x;
    cache[l + (l == 7 && blockIdx.x == 1)] = inp[blockIdx.x * 8 + l];
    __syncthreads();
    out[blockIdx.x * 8 + l] = cache[7 - l];
"""


@pytest.mark.parametrize("cpu_mode", MODES, indirect=True)
@pytest.mark.parametrize("device", DEVICES)
def test_group_memory_the_header_declares_is_checked(rng, device, cpu_mode):
    kernel = kjit.cuda_kernel(name="dbg_header_cache", input_names=["inp"], output_names=["out"],
                              header=HEADER_CACHE, source=HEADER_BODY, compile_options=DEBUG)
    x = rng.standard_normal(16).astype(np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [x], 16, (16, 1, 1), (8, 1, 1), device)
    assert ("debug check: __shared__ array 'cache' was indexed at 8, outside the array (its "
            "indices are 0 to 7), at line 3 of the source, by the thread at (15, 0, 0) in the "
            "grid (in threadgroup (1, 0, 0))") in str(e.value)
    out = call(kernel, [x[:8]], 8, (8, 1, 1), (8, 1, 1), device)
    np.testing.assert_array_equal(out, x[:8][::-1])


def test_races_on_group_memory_the_header_declares_are_reported(rng):
    racy = HEADER_BODY.replace("(l == 7 && blockIdx.x == 1)", "0").replace(
        "    __syncthreads();\n", "")
    kernel = kjit.cuda_kernel(name="dbg_header_race", input_names=["inp"], output_names=["out"],
                              header=HEADER_CACHE, source=racy, compile_options=DEBUG)
    with pytest.raises(kjit.LaunchError) as e:
        call(kernel, [rng.standard_normal(8).astype(np.float32)], 8, (8, 1, 1), (8, 1, 1))
    # Thread 4 reads what thread 3 wrote: the first race of the group's one loop over threads.
    assert ("a race on __shared__ array 'cache': the thread at (3, 0, 0) in the grid wrote its "
            "element 3 at line 3 of the source, and the thread at (4, 0, 0) read it at line 4, "
            "with no barrier between them") in str(e.value)


def test_sizeof_a_group_array_is_the_array_s_size():
    kernel = kjit.cuda_kernel(name="dbg_sizeof", input_names=["inp"], output_names=["out"],
                              compile_options=DEBUG, source="""
        __shared__ double d[4][5];
        out[threadIdx.x] = float(sizeof(d) / sizeof(d[0][0])) + inp[threadIdx.x] * 0.0f;
    """)
    out = call(kernel, [np.ones(4, np.float32)], 4, (4, 1, 1), (4, 1, 1))
    np.testing.assert_array_equal(out, 20.0)
