"""Settings given as functions of the inputs: evaluated once per signature, with an ArraySpec per
array and the value of each scalar, and checked as the values they return would be."""

import numpy as np
import pytest

import kjit

SCALE = """
uint i = thread_position_in_grid.x;
if (i < x_shape[0] * x_shape[1]) y[i] = x[i] * a;
"""


def scale_kernel():
    return kjit.metal_kernel(name="shape_fn_scale", input_names=["x", "a"],
                             output_names=["y"], source=SCALE)


class Counted:
    """A function that counts its calls."""

    def __init__(self, function):
        self.function = function
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.function(*args)


def test_every_setting_may_be_a_function_of_the_inputs(rng):
    k = scale_kernel()
    seen = []

    def shapes(x, a):
        seen.append((x, a))
        return [x.shape]

    for rows, cols in [(3, 5), (7, 2)]:
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        a = float(rng.standard_normal())
        y = k(inputs=[x, a], output_shapes=shapes, output_dtypes=lambda x, a: [x.dtype],
              grid=lambda x, a: (x.size, 1, 1), threadgroup=lambda x, a: (min(32, x.size), 1, 1),
              template=lambda x, a: [("T", x.dtype)])[0]
        np.testing.assert_allclose(y, x.astype(np.float64) * np.float32(a), rtol=1e-6)
        assert y.shape == (rows, cols) and y.dtype == np.float32
    spec, scalar = seen[0]
    assert isinstance(spec, kjit.ArraySpec)
    assert spec.shape == (3, 5) and spec.dtype == kjit.float32
    assert spec.ndim == 2 and spec.size == 15
    assert isinstance(scalar, float)


def test_a_function_runs_once_per_signature(rng):
    k = scale_kernel()
    shapes = Counted(lambda x, a: [x.shape])
    grid = Counted(lambda x, a: (x.size, 1, 1))

    def run(x, a):
        return k(inputs=[x, a], output_shapes=shapes, output_dtypes=[np.float32], grid=grid,
                 threadgroup=(8, 1, 1))[0]

    x = rng.standard_normal((4, 4)).astype(np.float32)
    for _ in range(5):
        np.testing.assert_allclose(run(x, 2.0), x * 2, rtol=1e-6)
    assert shapes.calls == 1 and grid.calls == 1
    # A new shape, a new scalar value: each a new signature.
    run(rng.standard_normal((2, 8)).astype(np.float32), 2.0)
    run(x, 3.0)
    assert shapes.calls == 3 and grid.calls == 3


def test_a_scalar_input_reaches_the_function_as_its_value(rng):
    k = kjit.metal_kernel(name="shape_fn_fill", input_names=["n"], output_names=["y"],
                          source="uint i = thread_position_in_grid.x; if (i < n) y[i] = i;")
    for n in (3, 11):
        y = k(inputs=[n], output_shapes=lambda n: [(n,)], output_dtypes=[np.int32],
              grid=lambda n: (n, 1, 1), threadgroup=(4, 1, 1))[0]
        np.testing.assert_array_equal(y, np.arange(n))


@pytest.mark.parametrize("setting, returned, expected", [
    ("output_shapes", 5, "expected a list of shapes"),
    ("output_shapes", [5], "expected a list of shapes (each a tuple of ints)"),
    ("output_dtypes", np.float32, "expected a list of dtypes"),
    ("grid", (4, 1), "expected a tuple of 3 ints"),
    ("threadgroup", "abc", "expected a tuple of 3 ints"),
    ("template", 3, "expected a list of (name, value) pairs"),
])
def test_a_function_returning_the_wrong_type_is_a_type_error_naming_it(setting, returned,
                                                                       expected):
    k = scale_kernel()
    settings = {"output_shapes": [(2, 2)], "output_dtypes": [np.float32], "grid": (4, 1, 1),
                "threadgroup": (4, 1, 1), "template": None}
    settings[setting] = lambda x, a: returned
    with pytest.raises(TypeError) as e:
        k(inputs=[np.zeros((2, 2), np.float32), 1.0], **settings)
    assert f"{setting}: the {setting} function returned" in str(e.value)
    assert expected in str(e.value)
    assert "shape_fn_scale" in str(e.value)


def test_a_returned_value_is_checked_as_a_given_one():
    k = scale_kernel()
    with pytest.raises(ValueError, match="output_shapes"):
        k(inputs=[np.zeros((2, 2), np.float32), 1.0], output_shapes=lambda x, a: [(-1, 2)],
          output_dtypes=[np.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))


def test_an_error_in_the_function_reaches_the_caller():
    k = scale_kernel()

    def broken(x, a):
        raise KeyError("no such size")

    with pytest.raises(KeyError, match="no such size"):
        k(inputs=[np.zeros((2, 2), np.float32), 1.0], output_shapes=broken,
          output_dtypes=[np.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))


def test_bind_refuses_functions():
    with pytest.raises(TypeError, match="cannot be a function of the inputs"):
        scale_kernel().bind(output_shapes=lambda x, a: [x.shape], output_dtypes=[np.float32],
                            grid=(4, 1, 1), threadgroup=(4, 1, 1))
