"""A call's outputs are arrays of its first array input's library, read and made by that
library's adapter: NumPy (with ml_dtypes' bfloat16), kjit.Array, and any other DLPack producer."""

import ml_dtypes
import numpy as np
import pytest

from kjit import _kjit

# The tests' own factory, without the conftest wrapper, so that the outputs are the call's.
TWICE = _kjit.metal_kernel(name="frameworks_twice", input_names=["a", "b"], output_names=["y"],
                           source="uint i = thread_position_in_grid.x; y[i] = a[i] * b;")


def twice(a: object, b: object, dtype: object = np.float32) -> object:
    (y,) = TWICE(inputs=[a, b], output_shapes=[(8,)], output_dtypes=[dtype], grid=(8, 1, 1),
                 threadgroup=(8, 1, 1), template=[("T", dtype)], device="cpu")
    return y


class Producer:
    """An array of a library kjit has no adapter for: it offers DLPack only."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __dlpack__(self, **kwargs: object) -> object:
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.array.__dlpack_device__()


@pytest.fixture
def x(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(8).astype(np.float32)


def test_numpy_inputs_give_numpy_outputs(x: np.ndarray) -> None:
    y = twice(x, 2.0)
    assert type(y) is np.ndarray
    np.testing.assert_array_equal(y, x * 2)


def test_kjit_inputs_give_kjit_arrays(x: np.ndarray) -> None:
    y = twice(_kjit.array(x), 3.0)
    assert type(y) is _kjit.Array
    np.testing.assert_array_equal(np.asarray(y), x * 3)


def test_other_libraries_give_kjit_arrays(x: np.ndarray) -> None:
    y = twice(Producer(x), 0.5)
    assert type(y) is _kjit.Array
    np.testing.assert_array_equal(np.asarray(y), x * 0.5)


def test_a_library_scalar_decides_only_without_an_array(x: np.ndarray) -> None:
    # NumPy's scalar comes first, kjit's array decides.
    scaled = _kjit.metal_kernel(name="frameworks_scaled", input_names=["s", "a"],
                                output_names=["y"],
                                source="uint i = thread_position_in_grid.x; y[i] = a[i] * s;")
    (y,) = scaled(inputs=[np.float32(2), _kjit.array(x)], output_shapes=[(8,)],
                  output_dtypes=[np.float32], grid=(8, 1, 1), threadgroup=(8, 1, 1),
                  device="cpu")
    assert type(y) is _kjit.Array
    np.testing.assert_array_equal(np.asarray(y), x * 2)
    scale = _kjit.metal_kernel(name="frameworks_fill", input_names=["s"], output_names=["y"],
                               source="y[thread_position_in_grid.x] = s;")
    (filled,) = scale(inputs=[np.float32(4)], output_shapes=[(3,)], output_dtypes=[np.float32],
                      grid=(3, 1, 1), threadgroup=(3, 1, 1), device="cpu")
    assert type(filled) is np.ndarray
    np.testing.assert_array_equal(filled, np.full(3, 4, np.float32))
    (plain,) = scale(inputs=[4.0], output_shapes=[(3,)], output_dtypes=[np.float32],
                     grid=(3, 1, 1), threadgroup=(3, 1, 1), device="cpu")
    assert type(plain) is _kjit.Array


def test_numpy_bfloat16_goes_both_ways(x: np.ndarray) -> None:
    a = x.astype(ml_dtypes.bfloat16)
    y = twice(a, 2.0, dtype=_kjit.bfloat16)
    assert type(y) is np.ndarray and y.dtype == ml_dtypes.bfloat16
    # Doubling is exact in bfloat16.
    np.testing.assert_array_equal(y.astype(np.float32), a.astype(np.float32) * 2)


def test_read_only_arrays_are_refused_as_outputs(x: np.ndarray) -> None:
    out = np.zeros(8, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match=r"outputs\[0\]: the array is read-only"):
        TWICE(inputs=[x, 2.0], output_shapes=[(8,)], output_dtypes=[np.float32], grid=(8, 1, 1),
              threadgroup=(8, 1, 1), template=[("T", np.float32)], device="cpu", outputs=[out])
    writable = np.zeros(8, np.float32)
    (written,) = TWICE(inputs=[Producer(x), 2.0], output_shapes=[(8,)],
                       output_dtypes=[np.float32], grid=(8, 1, 1), threadgroup=(8, 1, 1),
                       template=[("T", np.float32)], device="cpu", outputs=[writable])
    assert written is writable
    np.testing.assert_array_equal(writable, x * 2)
