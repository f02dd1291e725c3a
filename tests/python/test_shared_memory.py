"""Shared memory: dynamic shared memory above 48 KB and without barriers, one body with two sizes,
and the body's own shared arrays counted against the limit. GPU cases are skipped where no CUDA
device works."""


import numpy as np
import pytest

import kjit
from conftest import needs_gpu, poisoned


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
