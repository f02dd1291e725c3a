"""Arguments that change, or go away, while a call uses them: lists emptied while read,
inputs dropped by another thread, conversions that call the kernel again, and capsules
that own their memory."""

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
