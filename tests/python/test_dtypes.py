"""Every dtype through a copy kernel, init_value of every dtype, dtype names and sizes, the
types calls return, and kjit.Array under NumPy's array protocol."""


import ml_dtypes
import numpy as np
import pytest

import kjit
from conftest import poisoned


# --- every dtype through a copy kernel ---------------------------------------------------------

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64"]


def numpy_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def random_data(rng, name, n):
    dt = numpy_dtype(name)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    if name == "complex64":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    a = (rng.standard_normal(n) * 100).astype(dt)
    a[:4] = np.array([np.inf, -np.inf, -0.0, np.nan]).astype(dt)
    return a


def same_bits(a, b):
    """Element-wise identical, NaNs and signed zeros included."""
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype == np.bool_:
        return np.array_equal(a, b)
    return np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.fixture(scope="module")
def copy_kernel():
    return kjit.metal_kernel(name="copy", input_names=["inp"], output_names=["out"], source="""
        uint i = thread_position_in_grid.x;
        out[i] = inp[i];
    """)


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_copy(copy_kernel, name, rng):
    n = 257
    a = random_data(rng, name, n)
    assert a.dtype == numpy_dtype(name)
    kjit_dtype = getattr(kjit, "bool_" if name == "bool" else name)
    for spelled in (kjit_dtype, numpy_dtype(name), name):
        (out,) = copy_kernel(inputs=[a], grid=(n, 1, 1), threadgroup=(64, 1, 1),
                             output_shapes=[(n,)], output_dtypes=[spelled])
        assert isinstance(out, np.ndarray)
        assert out.dtype == a.dtype, (spelled, out.dtype)
        assert same_bits(out, a)
    # Preallocated outputs: poisoned, then holding the complement of every element's bits, so
    # that an element left unwritten differs from the input in one of the two runs.
    if a.dtype == np.bool_:
        complement = ~a
    else:
        bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize // (
            2 if name == "complex64" else 1)]
        complement = (~a.view(bits)).view(a.dtype)
    for out in (poisoned((n,), a.dtype), complement.copy()):
        copy_kernel(inputs=[a], grid=(n, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(n,)],
                    output_dtypes=[kjit_dtype], outputs=[out])
        assert same_bits(out, a)


@pytest.mark.parametrize("name", DTYPES)
def test_init_value_every_dtype(copy_kernel, name, rng):
    """init_value converts like NumPy's astype: rounded for floats, truncated for integers."""
    dt = numpy_dtype(name)
    a = random_data(rng, name, 8)
    if name == "bool":
        values = [0.0, float(rng.uniform(0.1, 5))]
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
        values = [float(rng.integers(lo, hi)) + 0.75, float(rng.integers(0, hi)) + 0.25]
    else:
        values = [float(rng.standard_normal() * 100), -float(rng.uniform(0, 1e-3))]
    for v in values:
        # A grid with no threads: the outputs hold init_value and nothing else.
        (out,) = copy_kernel(inputs=[a], grid=(0, 1, 1), threadgroup=(64, 1, 1),
                             output_shapes=[(5, 3)], output_dtypes=[dt], init_value=v)
        assert out.dtype == dt and out.shape == (5, 3)
        assert same_bits(out, np.full((5, 3), np.array(v).astype(dt))), (v, out)


def test_init_value_out_of_an_outputs_range_is_an_error(copy_kernel):
    a = np.arange(8, dtype=np.float32)

    def fill(dtype, value):
        return copy_kernel(inputs=[a], grid=(0, 1, 1), threadgroup=(64, 1, 1),
                           output_shapes=[(4,)], output_dtypes=[dtype], init_value=value)[0]

    for dtype, value in [(np.int8, 300), (np.uint8, -1), (np.uint64, float(2**64)),
                         (np.int32, 1e10), (np.int32, float("nan")), (np.int16, float("-inf"))]:
        with pytest.raises(ValueError, match=r"init_value \(for outputs\[0\] \('out'\)\): "
                           r"\S+ is out of the range of " + np.dtype(dtype).name):
            fill(dtype, value)
    # Integers a double would round are refused before anything runs.
    for value in (2**53 + 1, np.int64(2**62 + 1), -(2**63) + 1):
        with pytest.raises(ValueError, match=r"init_value: -?\d+ is not exactly a double"):
            fill(np.int64, value)
    np.testing.assert_array_equal(fill(np.int64, -(2**63)), np.full(4, -(2**63), np.int64))
    np.testing.assert_array_equal(fill(np.uint64, 2**63), np.full(4, 2**63, np.uint64))
    np.testing.assert_array_equal(fill(np.uint8, 255.9), np.full(4, 255, np.uint8))


def test_dtype_names_and_sizes():
    for name in DTYPES:
        d = getattr(kjit, "bool_" if name == "bool" else name)
        assert d.itemsize == numpy_dtype(name).itemsize, name


# --- return types ----------------------------------------------------------------------------

def test_return_types(copy_kernel, rng):
    a = rng.standard_normal((6, 5)).astype(np.float32)
    kwargs = dict(grid=(a.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[a.shape],
                  output_dtypes=[np.float32])
    (out_np,) = copy_kernel(inputs=[a], **kwargs)
    assert type(out_np) is np.ndarray
    np.testing.assert_array_equal(out_np, a)

    ka = kjit.array(a)
    assert isinstance(ka, kjit.Array)
    assert tuple(ka.shape) == a.shape and ka.dtype == kjit.float32
    (out_k,) = copy_kernel(inputs=[ka], **kwargs)
    assert isinstance(out_k, kjit.Array)
    assert tuple(out_k.shape) == a.shape and out_k.dtype == kjit.float32
    # NumPy imports host memory only; a kjit.Array on a GPU converts through a copy.
    on_host = out_k.device == "cpu"
    for converted in (np.asarray(out_k), out_k.numpy()) + ((np.from_dlpack(out_k),) if on_host else ()):
        assert isinstance(converted, np.ndarray) and converted.dtype == np.float32
        np.testing.assert_array_equal(converted, a)

    # A kjit.Array output can be fed back in as an input.
    (again,) = copy_kernel(inputs=[out_k], **kwargs)
    assert isinstance(again, kjit.Array)
    np.testing.assert_array_equal(np.asarray(again), a)


def test_return_type_bfloat16_kjit_array(copy_kernel, rng):
    a = rng.standard_normal(40).astype(ml_dtypes.bfloat16)
    (out,) = copy_kernel(inputs=[kjit.array(a)], grid=(40, 1, 1), threadgroup=(32, 1, 1),
                         output_shapes=[(40,)], output_dtypes=[kjit.bfloat16])
    assert isinstance(out, kjit.Array) and out.dtype == kjit.bfloat16
    back = out.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back.view(np.uint16), a.view(np.uint16))


def test_array_protocol_copy_argument():
    a = kjit.zeros((3,), dtype=kjit.float32, device="cpu")
    assert np.shares_memory(np.asarray(a), a.numpy())
    assert not np.shares_memory(np.asarray(a, copy=True), a.numpy())
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(a, dtype=np.float64, copy=False)
    assert np.shares_memory(np.asarray(a, dtype=np.float32, copy=False), a.numpy())
