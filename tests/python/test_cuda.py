"""The CUDA backend on a GPU: frameworks' arrays in and out, streams, edge groups with barriers,
large grids, dynamic shared memory, faults; and Metal's cooperative features on both backends.
GPU cases are skipped where no CUDA device works (CI compiles their kernels for sm_90 instead)."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import kjit
from conftest import CUDA_STATUS as STATUS
from conftest import DEVICES, EXP, exp_kernel, needs_gpu, poisoned, run_exp

@needs_gpu
def test_numpy_inputs_run_on_the_gpu_when_asked(rng):
    x = rng.standard_normal(10_001).astype(np.float32)
    out = run_exp(x, device="cuda")
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)), rtol=2e-7)


@needs_gpu
def test_cupy_in_cupy_out(rng):
    cupy = pytest.importorskip("cupy")
    x = cupy.asarray(rng.standard_normal(50_000).astype(np.float32))
    out = run_exp(x)
    assert isinstance(out, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(out), np.exp(cupy.asnumpy(x).astype(np.float64)),
                               rtol=2e-7)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float16, np.int64, np.complex64, np.bool_])
def test_cupy_arrays_of_each_kind_in_and_out(dtype, rng):
    # Strided views (reversed, transposed) read in place, 0-d and empty arrays, and outputs made
    # as CuPy arrays of the output's dtype, new or given.
    cupy = pytest.importorskip("cupy")
    values = (rng.standard_normal((6, 10)) * 4).astype(dtype)
    if dtype == np.complex64:
        values = values + 1j * rng.standard_normal((6, 10)).astype(np.float32)
    x = cupy.asarray(values)
    k = kjit.metal_kernel(name="cupy_kinds", input_names=["x", "s"], output_names=["out"],
                          ensure_row_contiguous=False, source="""
    const uint i = thread_position_in_grid.x, j = thread_position_in_grid.y;
    out[i * x_shape[1] + j] = x[i * x_strides[0] + j * x_strides[1]] + T(s);
""")
    for view, expected in [(x[::-1, ::-2], values[::-1, ::-2]), (x.T, values.T)]:
        shift = np.array(1, dtype=dtype)
        (out,) = k(inputs=[view, cupy.asarray(shift)], template=[("T", dtype)],
                   output_shapes=[view.shape], output_dtypes=[dtype],
                   grid=(view.shape[0], view.shape[1], 1), threadgroup=(4, 4, 1))
        assert isinstance(out, cupy.ndarray) and out.dtype == dtype and out.shape == view.shape
        np.testing.assert_array_equal(cupy.asnumpy(out), expected + shift)
        given = cupy.full(view.shape, 7, dtype=dtype)
        (same,) = k(inputs=[view, cupy.asarray(shift)], template=[("T", dtype)],
                    output_shapes=[view.shape], output_dtypes=[dtype], outputs=[given],
                    grid=(view.shape[0], view.shape[1], 1), threadgroup=(4, 4, 1))
        assert same is given
        np.testing.assert_array_equal(cupy.asnumpy(given), expected + shift)
    (empty,) = k(inputs=[x[:0], cupy.asarray(np.array(1, dtype=dtype))], template=[("T", dtype)],
                 output_shapes=[(0, 10)], output_dtypes=[dtype], grid=(0, 10, 1),
                 threadgroup=(4, 4, 1))
    assert isinstance(empty, cupy.ndarray) and empty.shape == (0, 10)


def jax_array_on_gpu(values: np.ndarray):
    """JAX and |values| as a JAX array on its first GPU (the test is skipped without one)."""
    jax = pytest.importorskip("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX sees no GPU")
    return jax, jax.device_put(jax.numpy.asarray(values), gpus[0])


@needs_gpu
def test_jax_in_jax_out(rng):
    jax, x = jax_array_on_gpu(rng.standard_normal(50_000).astype(np.float32))
    out = run_exp(x)
    assert isinstance(out, jax.Array)
    np.testing.assert_allclose(np.asarray(out), np.exp(np.asarray(x).astype(np.float64)),
                               rtol=2e-7)


@needs_gpu
def test_jax_inputs_still_being_computed(rng):
    jax, y = jax_array_on_gpu(rng.standard_normal(1 << 22).astype(np.float32))
    for _ in range(30):
        y = jax.numpy.sin(y) * 1.5 + 0.25  # queued by JAX: most likely still running when kjit reads y
    out = run_exp(y)
    np.testing.assert_allclose(np.asarray(out), np.exp(np.asarray(y).astype(np.float64)),
                               rtol=2e-7)


class _WithCudaStream:
    """A stream exposed through the CUDA stream protocol."""

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


class _WithPtr:
    """A stream exposed as CuPy's are, through .ptr."""

    def __init__(self, handle: int) -> None:
        self.ptr = handle


def _busy_then_halve(torch, stream, x):
    """Queues a long wait and then x *= 0.5 on |stream|: a kernel ordered after them sees x / 2,
    one on any other stream most likely sees x."""
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)
        x.mul_(0.5)


@needs_gpu
def test_explicit_stream_argument_forms(rng):
    torch = pytest.importorskip("torch")
    cupy = pytest.importorskip("cupy")
    host = rng.standard_normal(1 << 20).astype(np.float32)
    s = torch.cuda.Stream()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # CuPy 14 on ExternalStream
        external = cupy.cuda.ExternalStream(s.cuda_stream)
    forms = [s, s.cuda_stream, external, _WithCudaStream(s.cuda_stream), _WithPtr(s.cuda_stream)]
    for form in forms:
        x = torch.from_numpy(host).cuda()
        torch.cuda.synchronize()
        _busy_then_halve(torch, s, x)
        out = run_exp(x, stream=form)  # the current stream here is the default one
        s.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), np.exp(0.5 * host.astype(np.float64)),
                                   rtol=2e-7, err_msg=type(form).__name__)


@needs_gpu
def test_cupy_current_stream_orders_the_kernel(rng):
    torch = pytest.importorskip("torch")
    cupy = pytest.importorskip("cupy")
    host = rng.standard_normal(1 << 20).astype(np.float32)
    x = torch.from_numpy(host).cuda()
    torch.cuda.synchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    _busy_then_halve(torch, torch.cuda.ExternalStream(s.ptr), x)
    cx = cupy.asarray(x)
    with s:
        y = run_exp(cx)  # ordered on CuPy's current stream, after the halving
        z = y * 2  # and CuPy's next operation sees the output
    s.synchronize()
    np.testing.assert_allclose(cupy.asnumpy(z), 2 * np.exp(0.5 * host.astype(np.float64)),
                               rtol=2e-7)


@needs_gpu
def test_released_outputs_are_reused_only_on_their_stream(rng):
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(rng.standard_normal(1000).astype(np.float32)).cuda()
    a, b = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(a):
        y = run_exp(x)
        block = y.data_ptr()
        torch.cuda._sleep(50_000_000)  # stream a still works when y is released
        keep = y.sum()
        del y
    with torch.cuda.stream(b):
        z = run_exp(x)  # must not be handed y's memory while a may still read it
        assert z.data_ptr() != block
    with torch.cuda.stream(a):
        w = run_exp(x)  # stream a itself may reuse it: its own order protects it
    torch.cuda.synchronize()
    ref = np.exp(x.cpu().numpy().astype(np.float64))
    for out in (z, w):
        np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=2e-7)
    np.testing.assert_allclose(keep.item(), ref.sum(), rtol=1e-5)


@needs_gpu
def test_a_block_used_on_another_stream_is_reused_after_that_work(rng):
    torch = pytest.importorskip("torch")
    a, b = torch.cuda.Stream(), torch.cuda.Stream()
    n = 1 << 16
    x1 = rng.uniform(-1, 1, n).astype(np.float32)  # exp(exp(x1)) stays finite in float32
    x2 = rng.standard_normal(n).astype(np.float32)
    k = exp_kernel()
    kw = dict(output_shapes=[(n,)], output_dtypes=[np.float32], grid=(n, 1, 1),
              threadgroup=(256, 1, 1))
    (y,) = k(inputs=[kjit.array(x1, device="cuda")], stream=a.cuda_stream, **kw)
    a.synchronize()
    with torch.cuda.stream(b):
        torch.cuda._sleep(100_000_000)  # stream b is busy when its kernel is queued
    (z,) = k(inputs=[y], stream=b.cuda_stream, **kw)  # reads y's block on stream b
    del y  # the block goes back to stream a...
    (w,) = k(inputs=[kjit.array(x2, device="cuda")], stream=a.cuda_stream, **kw)
    # ...whose next output may take it only after stream b's kernel has read it.
    torch.cuda.synchronize()
    np.testing.assert_allclose(z.to("cpu").numpy(), np.exp(np.exp(x1.astype(np.float64))),
                               rtol=1e-6)
    np.testing.assert_allclose(w.to("cpu").numpy(), np.exp(x2.astype(np.float64)), rtol=2e-7)


# What the process holds in the device's default memory pool, where kjit's outputs come from
# (torch's allocator does not use it): other processes on the GPU do not move it.
POOL_CHILD = r"""
import ctypes, json, torch, kjit
cuda = ctypes.CDLL("libcuda.so.1")
def pool_bytes_in_use():
    pool, used = ctypes.c_void_p(), ctypes.c_uint64()
    assert cuda.cuDeviceGetDefaultMemPool(ctypes.byref(pool), 0) == 0
    assert cuda.cuMemPoolGetAttribute(pool, 7, ctypes.byref(used)) == 0  # USED_MEM_CURRENT
    return used.value
k = kjit.metal_kernel(name="ones", input_names=[], output_names=["out"],
                      source="out[thread_position_in_grid.x] = 1.0f;")
n = 2 << 20  # 8 MiB outputs
torch.cuda.init()
for _ in range(100):
    s = torch.cuda.Stream()  # a new stream each time: its kept block is never taken again
    (y,) = k(inputs=[], output_shapes=[(n,)], output_dtypes=["float32"], grid=(n, 1, 1),
             threadgroup=(256, 1, 1), device="cuda", stream=s.cuda_stream)
    s.synchronize()
    assert y.to("cpu").numpy()[12345] == 1.0
    del y, s
torch.cuda.synchronize()
print(json.dumps({"used": pool_bytes_in_use()}))
"""


@needs_gpu
def test_kept_blocks_stay_under_the_pool_limit():
    pytest.importorskip("torch")
    env = dict(os.environ, KJIT_CUDA_POOL_BYTES=str(16 << 20))
    run = subprocess.run([sys.executable, "-c", POOL_CHILD], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    used = json.loads(run.stdout)["used"]
    # Unbounded, a block of 8 MiB stays kept for each of the 32 streams torch hands out in turn
    # (256 MiB, measured); bounded at 16 MiB, at most two blocks and the one being made.
    assert used <= 24 << 20, used


@needs_gpu
def test_a_view_used_on_another_stream_holds_its_block_too(rng):
    torch = pytest.importorskip("torch")
    a, b = torch.cuda.Stream(), torch.cuda.Stream()
    n = 1 << 16
    x1 = torch.from_numpy(rng.uniform(-1, 1, n).astype(np.float32)).cuda()
    x2 = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    torch.cuda.synchronize()
    with torch.cuda.stream(a):
        y = run_exp(x1)  # a block kjit lent to stream a
    a.synchronize()
    with torch.cuda.stream(b):
        torch.cuda._sleep(100_000_000)
        z = run_exp(y[1:])  # a view into that block, read on stream b
    del y
    with torch.cuda.stream(a):
        w = run_exp(x2)  # may take the block only after stream b's kernel
    torch.cuda.synchronize()
    np.testing.assert_allclose(z.cpu().numpy(),
                               np.exp(np.exp(x1[1:].cpu().numpy().astype(np.float64))), rtol=1e-6)
    np.testing.assert_allclose(w.cpu().numpy(), np.exp(x2.cpu().numpy().astype(np.float64)),
                               rtol=2e-7)


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


@needs_gpu
def test_grid_beyond_65535_groups_in_y(rng):
    kernel = kjit.metal_kernel(name="rows", input_names=["inp"], output_names=["out"], source="""
        const uint2 p = uint2(thread_position_in_grid.x, thread_position_in_grid.y);
        out[p.y * 4 + p.x] = inp[p.y * 4 + p.x] + float(p.y);
    """)
    rows = 200_000
    x = rng.standard_normal((rows, 4)).astype(np.float32)
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                    grid=(4, rows, 1), threadgroup=(4, 1, 1), device="cuda",
                    outputs=None)
    np.testing.assert_array_equal(out, x + np.arange(rows, dtype=np.float32)[:, None])


WHERE_AND_HOW_BIG = """
    const uint3 p = thread_position_in_grid, n = threads_per_grid;
    const ulong i = 10 * ((ulong(p.z) * n.y + p.y) * n.x + p.x);
    const uint3 g = threadgroup_position_in_grid, s = threads_per_threadgroup;
    out[i + 0] = p.x; out[i + 1] = p.y; out[i + 2] = p.z;
    out[i + 3] = g.x; out[i + 4] = g.y; out[i + 5] = g.z;
    out[i + 6] = s.x; out[i + 7] = s.y; out[i + 8] = s.z;
    out[i + 9] = thread_index_in_threadgroup;
"""

# Each way a launch lays its groups out as blocks, with every group full and with partial ones.
LAUNCH_SHAPES = [
    ((1024, 1, 1), (256, 1, 1)),    # x only, full
    ((1000, 1, 1), (256, 1, 1)),    # x only, partial
    ((16, 12, 4), (4, 3, 2)),       # within the caps, full
    ((15, 13, 5), (4, 3, 2)),       # within the caps, partial in x, y and z
    ((4, 65537, 2), (4, 1, 2)),     # one column of groups beyond the caps, full
    ((4, 65537, 3), (4, 1, 2)),     # one column of groups beyond the caps, partial in z
    ((4, 65537, 1), (2, 1, 1)),     # beyond the caps and several groups wide, full
    ((5, 65537, 1), (2, 1, 1)),     # beyond the caps and several groups wide, partial in x
    ((3, 2, 65537), (2, 1, 1)),     # beyond the caps in z, partial in x
]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_every_launch_shape_places_and_sizes_threads(device):
    # One kernel launched every way: each launch shape gets its entry point on the GPU.
    kernel = kjit.metal_kernel(name="where_and_how_big", input_names=[], output_names=["out"],
                               source=WHERE_AND_HOW_BIG)
    for grid, threadgroup in LAUNCH_SHAPES:
        gx, gy, gz = grid
        (out,) = kernel(inputs=[], output_shapes=[(gz, gy, gx, 10)], output_dtypes=[np.uint32],
                        grid=grid, threadgroup=threadgroup, device=device, init_value=0xFFFFFFF9)
        out = np.asarray(out.to("cpu"))
        z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
        pos = np.stack([x, y, z], axis=-1)
        tg = np.minimum(np.array(threadgroup), np.array(grid))
        group = pos // tg
        size = np.minimum(tg, np.array(grid) - group * tg)
        local = pos - group * tg
        index = local[..., 0] + size[..., 0] * (local[..., 1] + size[..., 1] * local[..., 2])
        where = f"grid {grid}, threadgroup {threadgroup}"
        np.testing.assert_array_equal(out[..., 0:3], pos, err_msg=where)
        np.testing.assert_array_equal(out[..., 3:6], group, err_msg=where)
        np.testing.assert_array_equal(out[..., 6:9], size, err_msg=where)
        np.testing.assert_array_equal(out[..., 9], index, err_msg=where)


AHEAD = r"""
import json, sys, numpy as np, kjit
k = kjit.metal_kernel(name="gpu_exp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
if sys.argv[2] == "build":
    k.build(inputs=[(kjit.float32, 1)], output_dtypes=[kjit.float32], target="cuda")
else:
    x = np.linspace(-3, 3, 4096, dtype=np.float32)
    for group in (256, 100):  # every group full, then a partial one: two entry points
        out, = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                 grid=(x.size, 1, 1), threadgroup=(group, 1, 1), device="cuda")
        assert np.max(np.abs(out - np.exp(x)) / np.exp(x)) < 3e-7
print(json.dumps(kjit.cache_info()))
"""


@needs_gpu
def test_a_kernel_built_ahead_launches_every_way_without_compiling(tmp_path):
    env = dict(os.environ, KJIT_CACHE_DIR=str(tmp_path))
    built = json.loads(subprocess.run([sys.executable, "-c", AHEAD, EXP, "build"], env=env,
                                      check=True, capture_output=True, text=True).stdout)
    assert built["compiles"] == 1
    env["KJIT_ASSERT_NO_COMPILE"] = "1"
    run = json.loads(subprocess.run([sys.executable, "-c", AHEAD, EXP, "run"], env=env,
                                    check=True, capture_output=True, text=True).stdout)
    assert run["compiles"] == 0 and run["disk_hits"] == 1


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_dynamic_shared_memory_above_48_kb(device, rng):
    words = 20_000  # 80 KB
    kernel = kjit.cuda_kernel(name="smem_reverse", input_names=["inp"], output_names=["out"],
                              shared_memory=words * 4, source="""
        extern __shared__ float buf[];
        for (unsigned i = threadIdx.x; i < 20000; i += blockDim.x) buf[i] = inp[i];
        __syncthreads();
        for (unsigned i = threadIdx.x; i < 20000; i += blockDim.x) out[i] = buf[19999 - i];
    """)
    x = rng.standard_normal(words).astype(np.float32)
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                    grid=(256, 1, 1), threadgroup=(256, 1, 1), device=device)
    np.testing.assert_array_equal(out, x[::-1])


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_dynamic_shared_memory_without_barriers(device, rng):
    # Each thread uses only its own slot: no barrier, so the CPU runs it in loop mode.
    kernel = kjit.cuda_kernel(name="smem_own_slot", input_names=["inp"], output_names=["out"],
                              shared_memory=256 * 4, source="""
        extern __shared__ float slot[];
        const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        slot[threadIdx.x] = inp[i] * 2.0f;
        out[i] = slot[threadIdx.x] + 1.0f;
    """)
    x = rng.standard_normal(1000).astype(np.float32)
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                    grid=(1000, 1, 1), threadgroup=(256, 1, 1), device=device,
                    outputs=[poisoned(x.shape, np.float32)])
    np.testing.assert_array_equal(out, x * 2 + 1)


@needs_gpu
def test_one_body_with_two_shared_memory_sizes(rng):
    # The same generated source, so the same module, set up for each kernel's own size.
    source = """
        extern __shared__ float buf[];
        const unsigned n = inp_shape[0];
        for (unsigned i = threadIdx.x; i < n; i += blockDim.x) buf[i] = inp[i];
        __syncthreads();
        for (unsigned i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i];
    """
    for words in (1000, 20_000):  # 4 KB, then 80 KB
        kernel = kjit.cuda_kernel(name="smem_sized", input_names=["inp"], output_names=["out"],
                                  shared_memory=words * 4, source=source)
        x = rng.standard_normal(words).astype(np.float32)
        (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                        grid=(256, 1, 1), threadgroup=(256, 1, 1), device="cuda")
        np.testing.assert_array_equal(out, x[::-1])


@needs_gpu
def test_shared_arrays_of_the_body_count_against_the_limit(rng):
    # 40 KB of __shared__ arrays and 16 KB of dynamic shared memory: over the default 48 KB.
    source = """
        __shared__ float fixed[10240];
        extern __shared__ float dynamic[];
        const unsigned t = threadIdx.x;
        for (unsigned i = t; i < 10240; i += blockDim.x) fixed[i] = inp[i];
        for (unsigned i = t; i < 4096; i += blockDim.x) dynamic[i] = inp[10240 + i];
        __syncthreads();
        for (unsigned i = t; i < 10240; i += blockDim.x) out[i] = fixed[10239 - i];
        for (unsigned i = t; i < 4096; i += blockDim.x) out[10240 + i] = 2 * dynamic[i];
    """
    kernel = kjit.cuda_kernel(name="smem_fixed_and_dynamic", input_names=["inp"],
                              output_names=["out"], shared_memory=4096 * 4, source=source)
    x = rng.standard_normal(10240 + 4096).astype(np.float32)
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                    grid=(256, 1, 1), threadgroup=(256, 1, 1), device="cuda")
    np.testing.assert_array_equal(out[:10240], x[:10240][::-1])
    np.testing.assert_array_equal(out[10240:], 2 * x[10240:])
    too_much = kjit.cuda_kernel(name="smem_fixed_and_dynamic", input_names=["inp"],
                                output_names=["out"], shared_memory=200 * 1024, source=source)
    with pytest.raises(ValueError, match=r"shared_memory: 204800 bytes and the body's 40960 "
                                         r"bytes of __shared__ arrays are more than"):
        too_much(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                 grid=(256, 1, 1), threadgroup=(256, 1, 1), device="cuda")


@needs_gpu
def test_a_0d_gpu_input_to_a_cpu_kernel(rng):
    torch = pytest.importorskip("torch")
    kernel = kjit.metal_kernel(name="scale_by_gpu_scalar", input_names=["x", "s"],
                               output_names=["y"],
                               source="uint i = thread_position_in_grid.x; y[i] = x[i] * s;")
    x = rng.standard_normal(100).astype(np.float32)
    s = torch.tensor(2.5, device="cuda") * 2  # queued on torch's stream
    (y,) = kernel(inputs=[x, s], output_shapes=[x.shape], output_dtypes=[np.float32],
                  grid=(100, 1, 1), threadgroup=(32, 1, 1))
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, x * np.float32(5))


KEEPS_THE_CALLERS_CONTEXT = r"""
import ctypes, json, numpy as np, kjit
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
device, mine, current = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuCtxCreate_v2(ctypes.byref(mine), 0, device) == 0  # now current, not the primary
k = kjit.metal_kernel(name="ctx_copy", input_names=["x"], output_names=["y"],
                      source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1;")
x = np.arange(64, dtype=np.float32)
(y,) = k(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32], grid=(64, 1, 1),
         threadgroup=(64, 1, 1), device="cuda")
del y
cuda.cuCtxGetCurrent(ctypes.byref(current))
print(json.dumps({"kept": current.value == mine.value}))
"""


@needs_gpu
def test_the_callers_current_context_is_kept():
    run = subprocess.run([sys.executable, "-c", KEEPS_THE_CALLERS_CONTEXT], capture_output=True,
                         text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout) == {"kept": True}


GPU_MEMORY_CACHE = r"""
import json, numpy as np, kjit
source = "uint i = thread_position_in_grid.x; y[i] = x[i] + 1;"
x = np.arange(64, dtype=np.float32)

def run():
    k = kjit.metal_kernel(name="cleared_gpu", input_names=["x"], output_names=["y"],
                          source=source)
    (y,) = k(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32], grid=(64, 1, 1),
             threadgroup=(64, 1, 1), device="cuda")
    assert np.array_equal(y, x + 1)

run()
before = kjit.cache_info()
kjit.clear_cache()
cleared = kjit.cache_info()
run()
print(json.dumps({"before": before, "cleared": cleared, "after": kjit.cache_info()}))
"""


@needs_gpu
def test_clear_cache_keeps_the_gpu_modules_loaded(tmp_path):
    run = subprocess.run([sys.executable, "-c", GPU_MEMORY_CACHE], capture_output=True,
                         text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path),
                                  KJIT_CACHE_DIR=str(tmp_path / "cache")))
    assert run.returncode == 0, run.stderr[-2000:]
    info = json.loads(run.stdout)
    assert info["before"]["memory_entries"] >= 1 and info["before"]["compiles"] == 1
    assert info["cleared"]["disk_entries"] == 0
    # Loaded modules cannot be unloaded while launches may be queued: they stay, and counted.
    assert info["cleared"]["memory_entries"] == info["before"]["memory_entries"]
    assert info["after"]["compiles"] == 1


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.complex64, np.float16, np.uint8])
def test_init_value_on_the_gpu(dtype):
    kernel = kjit.metal_kernel(name="every_other_gpu", input_names=["inp"], output_names=["out"],
                               source="""
        uint i = thread_position_in_grid.x;
        if (i % 2 == 0) out[i] = inp[i];
    """)
    x = (np.arange(1001) % 7).astype(dtype)
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                    grid=(x.size, 1, 1), threadgroup=(128, 1, 1), init_value=3,
                    device="cuda")
    expected = np.full_like(x, 3)
    expected[::2] = x[::2]
    np.testing.assert_array_equal(out, expected)


@needs_gpu
def test_an_output_too_large_for_the_gpu_is_a_memory_error_naming_it():
    kernel = kjit.metal_kernel(name="huge_out", input_names=["inp"], output_names=["out"],
                               source="out[0] = inp[0];")
    with pytest.raises(MemoryError, match=r"kernel 'huge_out': output_shapes\[0\] \('out'\): "
                                          r"cuMemAllocAsync failed: CUDA_ERROR_OUT_OF_MEMORY"):
        kernel(inputs=[np.ones(1, np.float32)], output_shapes=[(2**52,)],
               output_dtypes=[np.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1), device="cuda")
    with pytest.raises(MemoryError, match=r"CUDA_ERROR_OUT_OF_MEMORY"):
        kjit.empty((2**52,), device="cuda")
    # The device keeps working.
    (out,) = kernel(inputs=[np.full(1, 3, np.float32)], output_shapes=[(1,)],
                    output_dtypes=[np.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                    device="cuda")
    np.testing.assert_array_equal(np.asarray(out), [3])


@needs_gpu
def test_inputs_on_two_devices_are_an_error(rng):
    torch = pytest.importorskip("torch")
    a = torch.ones(8, device="cuda")
    b = np.ones(8, np.float32)
    k = kjit.metal_kernel(name="add2", input_names=["a", "b"], output_names=["o"],
                          source="uint i = thread_position_in_grid.x; o[i] = a[i] + b[i];")
    with pytest.raises(ValueError, match="arrays on different devices"):
        k(inputs=[a, b], output_shapes=[(8,)], output_dtypes=[np.float32], grid=(8, 1, 1),
          threadgroup=(8, 1, 1))


CHILD = r"""
import json, sys, numpy as np, kjit
k = kjit.metal_kernel(name="gpu_exp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
x = np.linspace(-3, 3, 4096, dtype=np.float32)
out, = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
         threadgroup=(256, 1, 1), device="cuda")
print(json.dumps({"err": float(np.max(np.abs(out - np.exp(x)) / np.exp(x))),
                  "info": kjit.cache_info()}))
"""


@needs_gpu
def test_a_fresh_process_loads_the_cubin_from_disk(tmp_path):
    env = dict(os.environ, KJIT_CACHE_DIR=str(tmp_path))
    first = json.loads(subprocess.run([sys.executable, "-c", CHILD, EXP], env=env, check=True,
                                      capture_output=True, text=True).stdout)
    assert first["info"]["compiles"] == 1 and first["err"] < 3e-7
    env["KJIT_ASSERT_NO_COMPILE"] = "1"
    second = json.loads(subprocess.run([sys.executable, "-c", CHILD, EXP], env=env, check=True,
                                       capture_output=True, text=True).stdout)
    assert second["info"]["compiles"] == 0 and second["info"]["disk_hits"] == 1
    assert second["err"] < 3e-7


FAULT = r"""
import numpy as np, kjit
k = kjit.cuda_kernel(name="wild_write", input_names=["inp"], output_names=["out"],
                     source="out[(1ull << 40) + threadIdx.x] = inp[threadIdx.x];")
x = np.ones(32, np.float32)
try:
    k(inputs=[x], output_shapes=[(32,)], output_dtypes=[np.float32], grid=(32, 1, 1),
      threadgroup=(32, 1, 1), device="cuda")
    print("no error")
except kjit.LaunchError as e:
    print("LaunchError:", e)
"""


@needs_gpu
def test_an_out_of_bounds_write_raises_instead_of_crashing():
    # In a subprocess: after a fault the process's CUDA context is unusable.
    run = subprocess.run([sys.executable, "-c", FAULT], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "LaunchError:" in run.stdout and "no longer usable" in run.stdout, run.stdout


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


# CUDA's integer intrinsics against Python's integers: name, the expression over the thread's
# u, v (uint32), w, z (uint64) and s (a shift, a selector or an addend), its result's dtype, and
# the reference.
def _bits(x: int, n: int) -> int:
    return x & ((1 << n) - 1)


def _signed(x: int, n: int) -> int:
    x = _bits(x, n)
    return x - (1 << n) if x >> (n - 1) else x


def _reversed_bits(x: int, n: int) -> int:
    return int(format(_bits(x, n), f"0{n}b")[::-1], 2)


def _byte_perm(u: int, v: int, s: int) -> int:
    both = (v << 32) | u
    return sum(((both >> (8 * ((s >> (4 * k)) & 7))) & 0xFF) << (8 * k) for k in range(4))


I32, U32, U64, I64 = np.int32, np.uint32, np.uint64, np.int64
INTEGER_INTRINSICS = [
    ("popc", "__popc(u)", I32, lambda u, v, w, z, s: bin(u).count("1")),
    ("popcll", "__popcll(w)", I32, lambda u, v, w, z, s: bin(w).count("1")),
    ("clz", "__clz(int(u))", I32, lambda u, v, w, z, s: 32 - u.bit_length()),
    ("clzll", "__clzll((long long)w)", I32, lambda u, v, w, z, s: 64 - w.bit_length()),
    ("ffs", "__ffs(int(u))", I32, lambda u, v, w, z, s: (u & -u).bit_length()),
    ("ffsll", "__ffsll((long long)w)", I32, lambda u, v, w, z, s: (w & -w).bit_length()),
    ("brev", "__brev(u)", U32, lambda u, v, w, z, s: _reversed_bits(u, 32)),
    ("brevll", "__brevll(w)", U64, lambda u, v, w, z, s: _reversed_bits(w, 64)),
    ("umulhi", "__umulhi(u, v)", U32, lambda u, v, w, z, s: (u * v) >> 32),
    ("mulhi", "__mulhi(int(u), int(v))", I32,
     lambda u, v, w, z, s: (_signed(u, 32) * _signed(v, 32)) >> 32),
    ("umul64hi", "__umul64hi(w, z)", U64, lambda u, v, w, z, s: (w * z) >> 64),
    ("mul64hi", "__mul64hi((long long)w, (long long)z)", I64,
     lambda u, v, w, z, s: (_signed(w, 64) * _signed(z, 64)) >> 64),
    ("mul24", "__mul24(int(u), int(v))", I32,
     lambda u, v, w, z, s: _signed(_signed(u, 24) * _signed(v, 24), 32)),
    ("umul24", "__umul24(u, v)", U32, lambda u, v, w, z, s: _bits(_bits(u, 24) * _bits(v, 24), 32)),
    ("byte_perm", "__byte_perm(u, v, s)", U32, lambda u, v, w, z, s: _byte_perm(u, v, s)),
    ("sad", "__sad(int(u), int(v), s)", U32,
     lambda u, v, w, z, s: _bits(abs(_signed(u, 32) - _signed(v, 32)) + s, 32)),
    ("usad", "__usad(u, v, s)", U32, lambda u, v, w, z, s: _bits(abs(u - v) + s, 32)),
    ("funnelshift_l", "__funnelshift_l(u, v, s)", U32,
     lambda u, v, w, z, s: _bits((((v << 32) | u) << (s & 31)) >> 32, 32)),
    ("funnelshift_lc", "__funnelshift_lc(u, v, s)", U32,
     lambda u, v, w, z, s: _bits((((v << 32) | u) << min(s, 32)) >> 32, 32)),
    ("funnelshift_r", "__funnelshift_r(u, v, s)", U32,
     lambda u, v, w, z, s: _bits(((v << 32) | u) >> (s & 31), 32)),
    ("funnelshift_rc", "__funnelshift_rc(u, v, s)", U32,
     lambda u, v, w, z, s: _bits(((v << 32) | u) >> min(s, 32), 32)),
]


@pytest.mark.parametrize("device", DEVICES)
def test_integer_intrinsics(device, rng):
    names = [name for name, _, _, _ in INTEGER_INTRINSICS]
    dtypes = [dtype for _, _, dtype, _ in INTEGER_INTRINSICS]
    k = kjit.cuda_kernel(name="integer_intrinsics", input_names=["us", "vs", "ws", "zs", "ss"],
                         output_names=names, source="""
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned u = us[i], v = vs[i], s = ss[i];
    const unsigned long long w = ws[i], z = zs[i];
""" + "".join(f"    {name}[i] = {expr};\n" for name, expr, _, _ in INTEGER_INTRINSICS))
    n = 256
    u, v, s = (rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    w, z = (rng.integers(0, 1 << 64, n, dtype=np.uint64) for _ in range(2))
    s[: n // 2] %= 40  # shifts on both sides of 32
    u[:4] = [0, 1, 0x80000000, 0xFFFFFFFF]  # and the edges: zero, one bit, the sign bit, all ones
    w[:4] = [0, 1, 1 << 63, (1 << 64) - 1]
    outs = k(inputs=[u, v, w, z, s], output_shapes=[(n,)] * len(names), output_dtypes=dtypes,
             grid=(n, 1, 1), threadgroup=(64, 1, 1), device=device,
             outputs=[poisoned((n,), d) for d in dtypes])
    for (name, _, dtype, reference), out in zip(INTEGER_INTRINSICS, outs):
        expected = [reference(*map(int, args)) for args in zip(u, v, w, z, s)]
        np.testing.assert_array_equal(out, np.array(expected, dtype=object).astype(dtype),
                                      err_msg=name)


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
