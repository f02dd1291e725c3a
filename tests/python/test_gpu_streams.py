"""Streams on the GPU: the stream argument's forms, frameworks' current streams, and memory blocks
reused only after the work of the streams that used them. GPU cases are skipped where no CUDA
device works."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import kjit
from conftest import exp_kernel, needs_gpu, run_exp


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
