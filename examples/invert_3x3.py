"""The second example of MLX's custom-kernel proposal: invert many 3x3 matrices, one per thread,
checked against numpy.linalg.inv."""

import time

import numpy as np

import kjit

from seed_kernels import INVERT_3X3 as source

invert = kjit.metal_kernel(name="invert_3x3", input_names=["a"], output_names=["out"],
                           source=source)

n = 100_000
rng = np.random.default_rng()
# Well-conditioned matrices: identity plus a small random perturbation.
a = (np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))).astype(np.float32)
start = time.perf_counter()
(inv,) = invert(inputs=[a], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape],
                output_dtypes=[a.dtype], device=kjit.default_device())
elapsed = time.perf_counter() - start
reference = np.linalg.inv(a.astype(np.float64))
error = np.max(np.abs(inv - reference)) / np.max(np.abs(reference))
print(f"invert_3x3 on {kjit.default_device()}: {n} matrices in {elapsed * 1e3:.1f} ms "
      f"(first call: compiling or loading included), largest error {error:.2e} relative to the largest entry")
assert error < 1e-4
