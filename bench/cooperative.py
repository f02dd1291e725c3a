"""Cooperative kernels (group memory, barriers, SIMD-group operations), measured side by side.

CPU (--cpu): a block-sum kernel (256 threads per group, group memory and barriers) over 2^24
float32 in kjit's region mode (loops over the group's threads between barriers), against the same
kernel in OpenCL C on PoCL, in kjit's cooperative mode (a coroutine per thread, as
KJIT_CPU_REGIONS=0 asks), and against a barrier-free equivalent in kjit's loop mode (one thread
sums a block).
GPU (--gpu): the block-sum kernel and a row softmax with simd_max/simd_sum, against the same
algorithms written as plain CUDA and compiled by NVRTC through CuPy (no kjit involved), and
against torch.sum / torch.softmax.
Usage: PYTHONPATH=build/python python bench/cooperative.py --cpu | --gpu
"""

from __future__ import annotations

import os
import sys

import numpy as np

import kjit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import best_of, comparison_table, device_time  # noqa: E402

BLOCK = 256

BLOCK_SUM = """
    threadgroup float partial[256];
    const uint t = thread_index_in_threadgroup;
    partial[t] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 128; s > 0; s /= 2) {
        if (t < s) partial[t] += partial[t + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (t == 0) out[threadgroup_position_in_grid.x] = partial[0];
"""

SERIAL_SUM = """
    const uint b = thread_position_in_grid.x;
    float s = 0.0f;
    for (uint k = 0; k < 256; ++k) s += inp[b * 256 + k];
    out[b] = s;
"""

OPENCL_BLOCK_SUM = """
__kernel void block_sum(__global const float* inp, __global float* out) {
    __local float partial[256];
    const uint t = get_local_id(0);
    partial[t] = inp[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = 128; s > 0; s /= 2) {
        if (t < s) partial[t] += partial[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0) out[get_group_id(0)] = partial[0];
}
"""

# One simdgroup per row of 32: each lane holds one element.
ROW_SOFTMAX = """
    const uint row = thread_position_in_grid.y, lane = thread_index_in_simdgroup;
    const float x = inp[row * 32 + lane];
    const float e = metal::exp(x - simd_max(x));
    out[row * 32 + lane] = e / simd_sum(e);
"""

# The same over a 1-D grid: lanes of consecutive rows are consecutive threads.
ROW_SOFTMAX_1D = """
    const uint i = thread_position_in_grid.x;
    const float x = inp[i];
    const float e = metal::exp(x - simd_max(x));
    out[i] = e / simd_sum(e);
"""

CUDA_PLAIN = r"""
extern "C" __global__ void block_sum(const float* __restrict__ inp, float* __restrict__ out) {
    __shared__ float partial[256];
    const unsigned t = threadIdx.x;
    partial[t] = inp[blockIdx.x * 256 + t];
    __syncthreads();
    for (unsigned s = 128; s > 0; s /= 2) {
        if (t < s) partial[t] += partial[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}

extern "C" __global__ void row_softmax(const float* __restrict__ inp, float* __restrict__ out) {
    const unsigned row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    const float x = inp[row * 32 + lane];
    float m = x;
    for (int d = 16; d > 0; d /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
    const float e = expf(x - m);
    float s = e;
    for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
    out[row * 32 + lane] = e / s;
}
"""


def ms(t: float) -> str:
    return f"{t * 1e3:.2f} ms"


def ratio(other: float, ours: float) -> str:
    """How many times faster kjit is (below 1: slower), to three significant digits."""
    return f"{other / ours:.3g}x"


def cpu(repeats: int = 7) -> None:
    n = 1 << 24
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    ref = x.astype(np.float64).reshape(-1, BLOCK).sum(1)
    out = np.empty(n // BLOCK, np.float32)
    block_sum = kjit.metal_kernel("block_sum", ["inp"], ["out"], BLOCK_SUM)
    serial = kjit.metal_kernel("serial_sum", ["inp"], ["out"], SERIAL_SUM)
    kw = dict(inputs=[x], output_shapes=[out.shape], output_dtypes=[np.float32], outputs=[out])

    # The same body in cooperative mode: a kernel made while KJIT_CPU_REGIONS=0.
    os.environ["KJIT_CPU_REGIONS"] = "0"
    coroutines = kjit.metal_kernel("block_sum_coroutines", ["inp"], ["out"], BLOCK_SUM)

    def run_coroutines() -> None:
        coroutines(**kw, grid=(n, 1, 1), threadgroup=(BLOCK, 1, 1))

    out.fill(np.nan)
    run_coroutines()
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    del os.environ["KJIT_CPU_REGIONS"]

    def run_regions() -> None:
        block_sum(**kw, grid=(n, 1, 1), threadgroup=(BLOCK, 1, 1))

    def run_loop() -> None:
        serial(**kw, grid=(n // BLOCK, 1, 1), threadgroup=(BLOCK, 1, 1))

    rows = []
    for fn in (run_regions, run_loop):
        out.fill(np.nan)
        fn()
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    what = "block sum 2^24 f32, regions"
    t_regions = best_of(run_regions, repeats)
    t_coroutines = best_of(run_coroutines, repeats)
    t_loop = best_of(run_loop, repeats)
    rows.append((what, ms(t_regions), "cooperative mode", ms(t_coroutines),
                 ratio(t_coroutines, t_regions)))
    rows.append((what, ms(t_regions), "loop mode, no barriers", ms(t_loop),
                 ratio(t_loop, t_regions)))
    try:
        import pyopencl as cl

        platform = next(p for p in cl.get_platforms() if "Portable" in p.name)
        ctx = cl.Context(platform.get_devices())
        queue = cl.CommandQueue(ctx)
        program = cl.Program(ctx, OPENCL_BLOCK_SUM).build(options=["-cl-std=CL1.2"])
        kernel = cl.Kernel(program, "block_sum")
        mf = cl.mem_flags
        d_in = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        d_out = cl.Buffer(ctx, mf.WRITE_ONLY, out.nbytes)
        kernel.set_args(d_in, d_out)

        def run_pocl() -> None:
            cl.enqueue_nd_range_kernel(queue, kernel, (n,), (BLOCK,))
            queue.finish()

        run_pocl()
        pocl_out = np.empty_like(out)
        cl.enqueue_copy(queue, pocl_out, d_out)
        np.testing.assert_allclose(pocl_out, ref, rtol=1e-4, atol=1e-4)
        t_pocl = best_of(run_pocl, repeats)
        rows.append((what, ms(t_regions), f"PoCL {platform.version.split()[1]}", ms(t_pocl),
                     ratio(t_pocl, t_regions)))
    except (ImportError, StopIteration) as e:
        rows.append((what, ms(t_regions), "PoCL", "unavailable", type(e).__name__))
    t_np = best_of(lambda: x.reshape(-1, BLOCK).sum(1, out=out), repeats)
    rows.append((what, ms(t_regions), "numpy sum(axis=1)", ms(t_np), ratio(t_np, t_regions)))
    comparison_table(rows)
    print(f"\nkjit {kjit.__version__}, numpy {np.__version__}, {os.cpu_count()} cores")


def gpu() -> None:
    import cupy
    import torch

    dev = torch.device("cuda")
    torch.cuda.set_stream(torch.cuda.Stream())
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    module = cupy.RawModule(code=CUDA_PLAIN, options=("-arch=sm_90",))
    plain_sum = module.get_function("block_sum")
    plain_softmax = module.get_function("row_softmax")
    rows = []

    n = 1 << 28
    x = torch.randn(n, device=dev)
    out = torch.empty(n // BLOCK, device=dev)
    ref = x.view(-1, BLOCK).double().sum(1).float()
    block_sum = kjit.metal_kernel("block_sum", ["inp"], ["out"], BLOCK_SUM)
    kw = dict(inputs=[x], output_shapes=[out.shape], output_dtypes=[torch.float32], outputs=[out],
              grid=(n, 1, 1), threadgroup=(BLOCK, 1, 1))
    cx, co = cupy.asarray(x), cupy.asarray(out)

    def run_plain_sum() -> None:
        with stream:
            plain_sum((n // BLOCK,), (BLOCK,), (cx, co))

    for fn in (lambda: block_sum(**kw), run_plain_sum):
        out.fill_(float("nan"))
        fn()
        torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-3)
    t_kjit = device_time(lambda: block_sum(**kw))
    t_plain = device_time(run_plain_sum)
    t_torch = device_time(lambda: torch.sum(x.view(-1, BLOCK), dim=1, out=out))
    what = "block sum 2^28 f32"
    rows.append((what, ms(t_kjit), "plain CUDA, NVRTC", ms(t_plain), ratio(t_plain, t_kjit)))
    rows.append((what, ms(t_kjit), "torch.sum(dim=1)", ms(t_torch), ratio(t_torch, t_kjit)))

    rows_n = 1 << 23
    xs = torch.randn(rows_n, 32, device=dev)
    ys = torch.empty_like(xs)
    softmax = kjit.metal_kernel("row_softmax", ["inp"], ["out"], ROW_SOFTMAX)
    skw = dict(inputs=[xs], output_shapes=[ys.shape], output_dtypes=[torch.float32],
               outputs=[ys], grid=(32, rows_n, 1), threadgroup=(32, 8, 1))
    cxs, cys = cupy.asarray(xs), cupy.asarray(ys)

    def run_plain_softmax() -> None:
        with stream:
            plain_softmax((rows_n // 8,), (256,), (cxs, cys))

    ref = torch.softmax(xs.double(), dim=-1).float()
    for fn in (lambda: softmax(**skw), run_plain_softmax):
        ys.fill_(float("nan"))
        fn()
        torch.testing.assert_close(ys, ref, rtol=1e-5, atol=1e-6)
    softmax_1d = kjit.metal_kernel("row_softmax_1d", ["inp"], ["out"], ROW_SOFTMAX_1D)
    kw_1d = dict(skw, grid=(32 * rows_n, 1, 1), threadgroup=(256, 1, 1))
    ys.fill_(float("nan"))
    softmax_1d(**kw_1d)
    torch.testing.assert_close(ys, ref, rtol=1e-5, atol=1e-6)
    t_kjit = device_time(lambda: softmax(**skw))
    t_1d = device_time(lambda: softmax_1d(**kw_1d))
    t_plain = device_time(run_plain_softmax)
    t_torch = device_time(lambda: torch.softmax(xs, dim=-1, out=ys))
    what = "row softmax 2^23 x 32 f32"
    rows.append((what, ms(t_kjit), "plain CUDA, NVRTC", ms(t_plain), ratio(t_plain, t_kjit)))
    rows.append((what, ms(t_kjit), "torch.softmax", ms(t_torch), ratio(t_torch, t_kjit)))
    rows.append((what + ", 1-D grid", ms(t_1d), "plain CUDA, NVRTC", ms(t_plain),
                 ratio(t_plain, t_1d)))
    comparison_table(rows)
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}, cupy {cupy.__version__}, "
          f"kjit {kjit.__version__}")


if __name__ == "__main__":
    if "--gpu" in sys.argv:
        gpu()
    else:
        cpu()
