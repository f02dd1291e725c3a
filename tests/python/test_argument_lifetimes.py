"""Arguments that change, or go away, while a call uses them: lists emptied while read,
sequences whose own methods raise or lie, inputs dropped by another thread,
conversions that call the kernel again, and capsules that own their memory."""

import collections.abc
import os
import subprocess
import sys

import numpy as np
import pytest

import kjit
from conftest import poisoned


ADD = "uint i = thread_position_in_grid.x; out[i] = a[i] + b[i];"


class EmptiesOnExport:
    """An array whose export empties the list it was passed in."""

    def __init__(self, array: np.ndarray, passed_in: list):
        self.array, self.passed_in = array, passed_in

    def __dlpack__(self, **kwargs):
        self.passed_in.clear()
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class EmptiesOnIndex:
    """A size whose conversion to an int empties a list."""

    def __init__(self, value: int, target: list):
        self.value, self.target = value, target

    def __index__(self) -> int:
        self.target.clear()
        return self.value


@pytest.mark.usefixtures("real_factories")  # the suite's kernels read the arguments again
def test_argument_lists_emptied_while_they_are_read(rng):
    kernel = kjit.metal_kernel(name="add_emptied", input_names=["a", "b"],
                               output_names=["out"], source=ADD)
    a, b = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    inputs: list = []
    inputs += [EmptiesOnExport(a, inputs), b]
    shapes: list = []
    shapes.append((EmptiesOnIndex(64, shapes),))
    out = poisoned((64,), np.float32)
    outputs: list = []
    outputs.append(EmptiesOnExport(out, outputs))
    (returned,) = kernel(inputs=inputs, output_shapes=shapes, output_dtypes=[np.float32],
                         grid=(64, 1, 1), threadgroup=(32, 1, 1), outputs=outputs)
    np.testing.assert_array_equal(out, a + b)
    assert returned.array is out
    assert inputs == [] and shapes == [] and outputs == []


def emptied_on_index(values: list) -> list:
    """|values| as a list whose first item empties it as it is converted to an int."""
    out = list(values)
    out[0] = EmptiesOnIndex(values[0], out)
    return out


@pytest.mark.usefixtures("real_factories")  # the suite's kernels read the arguments again
def test_size_lists_emptied_while_they_are_read_keep_their_values(rng):
    kernel = kjit.metal_kernel(name="add_sizes_emptied", input_names=["a", "b"],
                               output_names=["out"], source=ADD)
    a, b = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    grid, threadgroup = emptied_on_index([64, 1, 1]), emptied_on_index([32, 1, 1])
    shape = emptied_on_index([8, 8])
    (out,) = kernel(inputs=[a.reshape(8, 8), b.reshape(8, 8)], output_shapes=[shape],
                    output_dtypes=[np.float32], grid=grid, threadgroup=threadgroup)
    assert out.shape == (8, 8)
    np.testing.assert_array_equal(out, (a + b).reshape(8, 8))
    assert grid == [] and threadgroup == [] and shape == []
    bound = kernel.bind(output_shapes=[emptied_on_index([64])], output_dtypes=[np.float32],
                        grid=emptied_on_index([64, 1, 1]), threadgroup=(32, 1, 1))
    np.testing.assert_array_equal(bound(a, b)[0], a + b)
    assert kjit.empty(emptied_on_index([3, 5])).shape == (3, 5)
    assert kjit.zeros(emptied_on_index([2, 4]), dtype=np.int32).shape == (2, 4)
    # Kernel.build's (dtype, ndim) pairs.
    pair: list = [np.float32, 1]
    pair[1] = EmptiesOnIndex(1, pair)
    kernel.build(inputs=[pair, (np.float32, 1)], output_dtypes=[np.float32])
    assert pair == []


class Huge(collections.abc.Sequence):
    """A sequence whose __len__ says 2**62."""

    def __len__(self) -> int:
        return 2**62

    def __getitem__(self, i):
        return 1


class LengthRaises(collections.abc.Sequence):
    def __len__(self) -> int:
        raise ValueError("no length today")

    def __getitem__(self, i):
        return 1


class ItemRaises(collections.abc.Sequence):
    def __len__(self) -> int:
        return 3

    def __getitem__(self, i):
        raise ValueError("no items today")


class ShortOfItsLength(collections.abc.Sequence):
    """A sequence whose __len__ says 3 and that has 2 items."""

    def __len__(self) -> int:
        return 3

    def __getitem__(self, i):
        if i < 2:
            return 4
        raise IndexError(i)


class EmptiedByGetitem(list):
    """A list whose second item, when read, empties it."""

    def __getitem__(self, i):
        value = list.__getitem__(self, i)
        if i == 1:
            self.clear()
        return value


class IndexRaises:
    """A size whose __index__ raises |error|."""

    def __init__(self, error: BaseException):
        self.error = error

    def __index__(self) -> int:
        raise self.error


T = r"^\[kjit\.metal_kernel\] kernel 'copy_sequences': "
# Each case's change is made afresh for each call: some sequences change as they are read.
SEQUENCE_CASES = [
    ("huge-grid", lambda: dict(grid=Huge()), ValueError,
     T + r"grid: expected 3 sizes \(x, y, z\), got 4611686018427387904$"),
    ("huge-shape", lambda: dict(output_shapes=[Huge()]), ValueError,
     T + r"output_shapes\[0\] has 4611686018427387904 dimensions; at most 10 are supported$"),
    ("length-raises", lambda: dict(grid=LengthRaises()), TypeError,
     T + r"grid: reading its length raised ValueError: no length today$"),
    ("item-raises", lambda: dict(threadgroup=ItemRaises()), TypeError,
     T + r"threadgroup: reading the sequence raised ValueError: no items today$"),
    ("shape-item-raises", lambda: dict(output_shapes=[ItemRaises()]), TypeError,
     T + r"output_shapes\[0\]: reading the sequence raised ValueError: no items today$"),
    ("short-grid", lambda: dict(grid=ShortOfItsLength()), TypeError,
     T + r"grid: reading the sequence raised IndexError: 2$"),
    ("emptied-by-getitem", lambda: dict(grid=EmptiedByGetitem([4, 1, 1])), TypeError,
     T + r"grid: reading the sequence raised IndexError: list index out of range$"),
    ("index-raises", lambda: dict(grid=(IndexRaises(ValueError("not a size")), 1, 1)), TypeError,
     T + r"grid: reading its __index__ raised ValueError: not a size$"),
    ("shape-index-raises", lambda: dict(output_shapes=[(IndexRaises(ArithmeticError("odd")),)]),
     TypeError, T + r"output_shapes\[0\]: reading its __index__ raised ArithmeticError: odd$"),
    ("index-interrupted", lambda: dict(grid=(IndexRaises(KeyboardInterrupt()), 1, 1)),
     KeyboardInterrupt, r"^$"),
]


@pytest.mark.usefixtures("real_factories")  # the suite's kernels read the arguments again
@pytest.mark.parametrize("label,change,error,pattern", SEQUENCE_CASES,
                         ids=[c[0] for c in SEQUENCE_CASES])
def test_sequences_whose_methods_raise_or_lie(label, change, error, pattern):
    kernel = kjit.metal_kernel(name="copy_sequences", input_names=["x"], output_names=["out"],
                               source="out[thread_position_in_grid.x] = x[0];")
    args = dict(inputs=[np.ones(1, np.float32)], output_shapes=[(4,)],
                output_dtypes=[np.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    with pytest.raises(error, match=pattern):
        kernel(**dict(args, **change()))
    settings = {k: v for k, v in dict(args, **change()).items() if k != "inputs"}
    with pytest.raises(error, match=pattern):
        kernel.bind(**settings)


def test_array_shapes_whose_methods_raise_or_lie():
    with pytest.raises(ValueError, match=r"^shape has 4611686018427387904 dimensions"):
        kjit.empty(Huge())
    with pytest.raises(TypeError, match=r"^shape: reading the sequence raised ValueError"):
        kjit.zeros(ItemRaises())
    assert kjit.zeros(range(2, 5)).shape == (2, 3, 4)
    assert kjit.empty(np.array([3, 2])).shape == (3, 2)


def test_an_option_whose_repr_changes_the_options_is_refused():
    options: dict = {}

    class ChangesTheOptions:
        def __repr__(self) -> str:
            options.clear()
            return "'math_mode'"

    options[ChangesTheOptions()] = "fast"
    with pytest.raises(ValueError, match=r"compile_options: unknown option 'math_mode'"):
        kjit.metal_kernel(name="k", input_names=["a"], output_names=["o"], source="o[0] = a[0];",
                          compile_options=options)


REPLACED_BY_ANOTHER_THREAD = """
import threading, time, numpy as np, kjit
kernel = kjit.metal_kernel(name="slow_sum", input_names=["x"], output_names=["y"], source='''
    uint i = thread_position_in_grid.x;
    float acc = 0.0f;
    for (int r = 0; r < 400; ++r) acc += x[i];
    y[i] = acc;
''')
x = np.random.default_rng().integers(0, 8, 1 << 22).astype(np.float32)
expected = x * 400
inputs = [x.copy()]
kernel(inputs=[x[:64]], output_shapes=[(64,)], output_dtypes=[np.float32], grid=(64, 1, 1),
       threadgroup=(64, 1, 1))  # compiled before the call that is raced

def replace():
    time.sleep(0.05)
    inputs[0] = None  # the caller's last reference to the array the kernel is reading
    junk = [np.full(1 << 22, 9, np.float32) for _ in range(4)]

t = threading.Thread(target=replace)
t.start()
(y,) = kernel(inputs=inputs, output_shapes=[(1 << 22,)], output_dtypes=[np.float32],
              grid=(1 << 22, 1, 1), threadgroup=(256, 1, 1))
t.join()
print("same" if np.array_equal(y, expected) else "different")
"""


def test_inputs_dropped_by_another_thread_while_the_kernel_runs():
    run = subprocess.run([sys.executable, "-c", REPLACED_BY_ANOTHER_THREAD], capture_output=True,
                         text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "same"


@pytest.mark.usefixtures("real_factories")  # the suite's kernels read the arguments again
def test_a_conversion_that_calls_the_kernel_again_keeps_each_calls_arguments():
    kernel = kjit.cuda_kernel(name="reentrant_copy", input_names=["x"], output_names=["out"],
                              source="out[threadIdx.x + blockIdx.x * blockDim.x] = x[0];")
    x = np.ones(1, np.float32)

    def call(shape, n):
        return kernel(inputs=[x], output_shapes=[shape], output_dtypes=[np.float32],
                      grid=(n, 1, 1), threadgroup=(n, 1, 1), device="cpu")[0]

    class CallsAgain:
        def __index__(self) -> int:
            assert call((16,), 16).shape == (16,)
            return 4

    assert call((CallsAgain(),), 4).shape == (4,)
    assert call((16,), 16).shape == (16,)  # its own shape, not the one converted around it


class ExportsATemporary:
    """A producer whose DLPack capsule alone owns the memory it exports."""

    def __init__(self, values: np.ndarray):
        self.values = values

    def __dlpack__(self, **kwargs):
        return self.values.copy().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)


def test_an_input_whose_capsule_owns_its_memory(rng):
    kernel = kjit.metal_kernel(name="add_capsule", input_names=["a", "b"], output_names=["out"],
                               source=ADD)
    a, b = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    for _ in range(3):
        (out,) = kernel(inputs=[ExportsATemporary(a), b], output_shapes=[(1000,)],
                        output_dtypes=[np.float32], grid=(1000, 1, 1), threadgroup=(64, 1, 1))
        np.testing.assert_array_equal(out, a + b)
    view = kjit.array(ExportsATemporary(a))
    junk = [np.full(1000, 9, np.float32) for _ in range(16)]
    np.testing.assert_array_equal(np.asarray(view), a)
    del junk
