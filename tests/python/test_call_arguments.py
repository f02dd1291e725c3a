"""How calls pass their arguments: argument objects reused or rebuilt call after call, every
way Python calls a kernel, list subclasses, NumPy scalars, and outputs written in place."""

import functools

import numpy as np
import pytest

import kjit
from conftest import poisoned


def scaled_copy():
    """y = T(x * S), for template arguments T (a type) and S (a number)."""
    return kjit.metal_kernel(name="scaled_copy", input_names=["x"], output_names=["y"], source="""
        uint i = thread_position_in_grid.x;
        y[i] = T(x[i] * S);
    """)


def test_reused_argument_objects_follow_their_changes(rng):
    # Loops pass the same argument objects call after call; what they hold now is what counts.
    kernel = scaled_copy()
    x = rng.standard_normal(64).astype(np.float32)
    shapes, dtypes = [(64,)], [np.float32]
    grid, group = [64, 1, 1], [16, 1, 1]
    template = [("T", np.float32), ("S", 2)]
    kw = dict(inputs=[x], output_shapes=shapes, output_dtypes=dtypes, grid=grid,
              threadgroup=group, template=template)
    for _ in range(2):
        (y,) = kernel(**kw)
        np.testing.assert_array_equal(y, x * 2)
    template[1] = ("S", 3)  # an item replaced
    (y,) = kernel(**kw)
    np.testing.assert_array_equal(y, x * 3)
    grid[0] = 32  # a list of sizes changed in place: half the threads
    shapes[0] = (32,)
    (y,) = kernel(**kw)
    np.testing.assert_array_equal(y, x[:32] * 3)
    dtypes[0] = np.float64
    template[0] = ("T", np.float64)
    (y,) = kernel(**kw)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, (x[:32] * 3).astype(np.float64))
    shape = [32]  # a mutable shape inside the list: changing it counts too
    shapes[0] = shape
    (y,) = kernel(**kw)
    assert y.shape == (32,)
    shape.append(1)
    (y,) = kernel(**kw)
    assert y.shape == (32, 1)
    np.testing.assert_array_equal(y[:, 0], (x[:32] * 3).astype(np.float64))
    shapes.append((1,))  # one output too many: still an error
    with pytest.raises(ValueError, match="output_shapes"):
        kernel(**kw)


def test_new_argument_lists_convert_to_what_they_hold(rng):
    # Calls written out build new lists and tuples each time; equal contents may be new objects
    # (ints over 256, strs made at run time), and changed contents must be seen.
    kernel = scaled_copy()
    x = rng.standard_normal(1000).astype(np.float32)
    calls = [(300, "T", 2, np.float32), (int("300"), "".join(["T"]), 2, np.float32),
             (int("299"), "T", 2, np.float32), (299, "T", 3, np.float32),
             (299, "T", 3, np.float64), (299, "T", True, np.float64)]
    for n, name, scale, dtype in calls:
        (y,) = kernel(inputs=[x[:n]], output_shapes=[(n,)], output_dtypes=[dtype],
                      grid=(n, 1, 1), threadgroup=(16, 1, 1),
                      template=[(name, dtype), ("S", scale)])
        assert y.shape == (n,) and y.dtype == dtype
        np.testing.assert_array_equal(y, (x[:n] * float(scale)).astype(dtype))


@pytest.mark.usefixtures("real_factories")  # kjit.Kernel itself, its type included
def test_every_way_python_calls_a_kernel(rng):
    kernel = kjit.metal_kernel(name="twice", input_names=["x"], output_names=["y"],
                               source="y[thread_position_in_grid.x] = "
                                      "2 * x[thread_position_in_grid.x];")
    x = rng.standard_normal(40).astype(np.float32)
    kw = dict(inputs=[x], output_shapes=[(40,)], output_dtypes=[np.float32], grid=(40, 1, 1),
              threadgroup=(8, 1, 1))
    calls = {
        "keywords": lambda: kernel(inputs=[x], output_shapes=[(40,)],
                                   output_dtypes=[np.float32], grid=(40, 1, 1),
                                   threadgroup=(8, 1, 1)),
        "a dict": lambda: kernel(**kw),
        "partial": functools.partial(kernel, **kw),
        "__call__": lambda: kernel.__call__(**kw),
        "Kernel.__call__": lambda: type(kernel).__call__(kernel, **kw),
        "map": lambda: list(map(lambda k: k(**kw), [kernel]))[0],
    }
    for what, call in calls.items():
        (y,) = call()
        np.testing.assert_array_equal(y, 2 * x, err_msg=what)
    with pytest.raises(TypeError):
        kernel([x], [(40,)], [np.float32], (40, 1, 1), (8, 1, 1))  # keywords only
    with pytest.raises(TypeError):
        kernel(inputs=[x], output_shapes=[(40,)], output_dtypes=[np.float32], grid=(40, 1, 1))
    with pytest.raises(TypeError):
        kernel(**kw, threads=(8, 1, 1))
    with pytest.raises(TypeError):
        type("Sub", (type(kernel),), {})  # kernels are not subclassed
    with pytest.raises(TypeError, match="kjit.metal_kernel"):
        type(kernel).__new__(type(kernel))  # nor made empty
    for call in (kernel, type(kernel).__call__.__get__(kernel)):  # both ways, the same errors
        with pytest.raises(ValueError, match=r"output_shapes\[0\] has 4611686018427387904 dim"):
            call(**dict(kw, output_shapes=[range(2**62)]))


class ScaledGrid(list):
    """A list subclass whose items are read through its own __getitem__."""

    scale = 1

    def __getitem__(self, i):
        return list.__getitem__(self, i) * ScaledGrid.scale


def test_list_subclasses_are_read_afresh_each_call(rng):
    kernel = kjit.metal_kernel(name="copy_scaled", input_names=["x"], output_names=["y"],
                               source="uint i = thread_position_in_grid.x; y[i] = x[i];")
    x = rng.standard_normal(8).astype(np.float32)
    grid = ScaledGrid([2, 1, 1])
    for scale in (1, 4):
        ScaledGrid.scale = scale
        out = poisoned((8,), np.float32)
        kernel(inputs=[x], output_shapes=[(8,)], output_dtypes=[np.float32], grid=grid,
               threadgroup=(1, 1, 1), outputs=[out])
        np.testing.assert_array_equal(out[:2 * scale], x[:2 * scale])
        assert np.isnan(out[2 * scale:]).all()


def test_numpy_scalars_as_init_value_and_template_values(rng):
    kernel = kjit.metal_kernel(name="scaled_evens", input_names=["x"], output_names=["y"],
                               source="""
        uint i = thread_position_in_grid.x;
        if (i % 2 == 0) y[i] = ON ? x[i] * N : 0.0f;
    """)
    x = rng.standard_normal(10).astype(np.float32)
    expected = np.full(10, 2.5, np.float32)
    expected[::2] = x[::2] * 3
    for n, on, init in [(np.int64(3), np.True_, np.float32(2.5)),
                        (np.uint8(3), np.bool_(True), np.float64(2.5)), (3, True, 2.5)]:
        (y,) = kernel(inputs=[x], output_shapes=[(10,)], output_dtypes=[np.float32],
                      grid=(10, 1, 1), threadgroup=(10, 1, 1),
                      template=[("N", n), ("ON", on)], init_value=init)
        np.testing.assert_array_equal(y, expected)
    with pytest.raises(ValueError, match="does not fit in a 32-bit int"):
        kernel(inputs=[x], output_shapes=[(10,)], output_dtypes=[np.float32], grid=(10, 1, 1),
               threadgroup=(10, 1, 1), template=[("N", np.int64(2**40)), ("ON", True)])


def test_outputs_in_place(rng):
    kernel = kjit.metal_kernel(name="in_place", input_names=["x", "y"],
                               output_names=["s", "p"], source="""
        uint i = thread_position_in_grid.x;
        s[i] = x[i] + y[i];
        p[i] = x[i] * y[i];
    """)
    x = rng.standard_normal((7, 9)).astype(np.float32)
    y = rng.standard_normal((7, 9)).astype(np.float32)
    s = poisoned(x.shape, np.float32)
    p = poisoned(x.shape, np.float32)
    s_ptr, p_ptr = s.ctypes.data, p.ctypes.data
    res = kernel(inputs=[x, y], grid=(x.size, 1, 1), threadgroup=(32, 1, 1),
                 output_shapes=[x.shape, x.shape], output_dtypes=[np.float32, np.float32],
                 outputs=[s, p])
    assert isinstance(res, list) and len(res) == 2
    assert res[0] is s and res[1] is p
    assert s.ctypes.data == s_ptr and p.ctypes.data == p_ptr
    np.testing.assert_array_equal(s, x + y)
    np.testing.assert_array_equal(p, x * y)
    # kjit.Array outputs are written in place too.
    ks = kjit.array(poisoned(x.shape, np.float32))
    kp = kjit.array(poisoned(x.shape, np.float32))
    res = kernel(inputs=[x, y], grid=(x.size, 1, 1), threadgroup=(32, 1, 1),
                 output_shapes=[x.shape, x.shape], output_dtypes=[np.float32, np.float32],
                 outputs=[ks, kp])
    assert res[0] is ks and res[1] is kp
    np.testing.assert_array_equal(np.asarray(ks), x + y)
    np.testing.assert_array_equal(np.asarray(kp), x * y)
    # A read-only array is refused as an output and left as it was.
    frozen = poisoned(x.shape, np.float32)
    frozen.flags.writeable = False
    with pytest.raises((ValueError, TypeError), match="outputs"):
        kernel(inputs=[x, y], grid=(x.size, 1, 1), threadgroup=(32, 1, 1),
               output_shapes=[x.shape, x.shape], output_dtypes=[np.float32, np.float32],
               outputs=[poisoned(x.shape, np.float32), frozen])
    assert np.all(np.isnan(frozen))
