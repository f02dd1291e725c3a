"""The seed examples (examples/seed_kernels.py) on the CPU, against NumPy."""


import numpy as np

import kjit
from conftest import poisoned
from seed_kernels import INVERT_3X3, MYEXP


def test_myexp(rng):
    kernel = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                               source=MYEXP)
    a = rng.standard_normal((4, 16)).astype(np.float16)
    out = poisoned(a.shape, np.float16)
    (res,) = kernel(inputs=[a], template=[("T", kjit.float32)], grid=(a.size, 1, 1),
                    threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype],
                    outputs=[out])
    assert res is out
    ref = np.exp(a.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2 ** -11, atol=0)
    # Computed in float32 (T) and rounded once to half: within half a float16 ulp, give or take
    # the float32 error.
    half_ulp = np.spacing(ref.astype(np.float16)).astype(np.float64) / 2
    assert np.all(np.abs(out.astype(np.float64) - ref) <= half_ulp + 4 * ref * 2.0 ** -24)


INVERT_3X3_SOURCE = INVERT_3X3


def test_invert_3x3(rng):
    invert = kjit.metal_kernel(name="invert_3x3", input_names=["a"], output_names=["out"],
                               source=INVERT_3X3_SOURCE)
    n = 100_003  # not a multiple of the group: the last group is partial
    a = (np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    out = poisoned(a.shape, np.float32)
    invert(inputs=[a], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape],
           output_dtypes=[a.dtype], outputs=[out])
    a64 = a.astype(np.float64)
    ref = np.linalg.inv(a64)
    assert np.all(np.isfinite(out))
    # Per matrix: error relative to the inverse's size, scaled by the condition number.
    err = np.abs(out - ref).max(axis=(1, 2)) / np.abs(ref).max(axis=(1, 2))
    cond = np.linalg.cond(a64)
    assert np.all(err <= 2e-6 * cond), float((err / cond).max())
    assert err.max() < 1e-4
    # And the product with the matrix is the identity.
    np.testing.assert_allclose(a64 @ out.astype(np.float64), np.broadcast_to(np.eye(3), a.shape),
                               atol=1e-4)
