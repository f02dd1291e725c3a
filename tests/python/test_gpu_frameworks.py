"""Frameworks' arrays in and out on the GPU: NumPy, CuPy and JAX. GPU cases are skipped where no
CUDA device works."""


import numpy as np
import pytest

import kjit
from conftest import needs_gpu, run_exp


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
