"""The first example of MLX's custom-kernel proposal: exp over float16 inputs, computed in float32
(template T), checked against NumPy in float64."""

import numpy as np

import kjit

from seed_kernels import MYEXP as source

kernel = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=source)

a = np.random.default_rng().standard_normal((4, 16)).astype(np.float16)
(out,) = kernel(
    inputs=[a],
    template=[("T", kjit.float32)],
    grid=(a.size, 1, 1),
    threadgroup=(256, 1, 1),
    output_shapes=[a.shape],
    output_dtypes=[a.dtype],
    device=kjit.default_device(),  # the GPU when one works: NumPy data is copied there and back
    verbose=True,
)
reference = np.exp(a.astype(np.float64))
error = np.max(np.abs(out.astype(np.float64) - reference) / reference)
print(f"myexp on {kjit.default_device()}: {a.size} float16 elements, largest relative error "
      f"{error:.2e} (float16 rounding is 4.9e-4)")
assert error < 1e-3
