"""The seed's exp kernel written in CUDA C++: the body sees the same names (inputs, outputs,
their shapes, the template), with CUDA's own thread indices. Checked against NumPy in float64."""

import numpy as np

import kjit

kernel = kjit.cuda_kernel(
    name="myexp_cuda", input_names=["inp"], output_names=["out"],
    source="""
        // grid counts threads, as MLX counts them: blocks of blockDim.x threads cover it.
        size_t i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < inp_shape[0]) out[i] = static_cast<T>(expf(static_cast<float>(inp[i])));
    """)

x = np.random.default_rng().standard_normal(10_000).astype(np.float32)
(out,) = kernel(inputs=[x], template=[("T", kjit.float32)], grid=(x.size, 1, 1),
                threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype],
                device=kjit.default_device())
error = np.max(np.abs(np.asarray(out, dtype=np.float64) - np.exp(x.astype(np.float64))) /
               np.exp(x.astype(np.float64)))
print(f"myexp (CUDA dialect) on {kjit.default_device()}: largest relative error {error:.2e}")
assert error < 1e-6
