"""kjit's Python package and its stubs pass mypy --strict, as its users' code is checked."""

import os
import subprocess
import sys

import pytest

import kjit

pytest.importorskip("mypy")


def test_the_package_passes_mypy_strict(tmp_path):
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(kjit.__file__)))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), "-p", "kjit"],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, MYPYPATH=package_parent), cwd=package_parent)
    assert done.returncode == 0, done.stdout + done.stderr


# A program as its users write it: results assigned to annotations of the inputs' library,
# then used as such. The checks at its end run it and compare the types with those stated.
RESULTS_PROGRAM = '''
import numpy as np
import numpy.typing as npt
import torch

import kjit

twice = kjit.metal_kernel(name="twice", input_names=["x"], output_names=["y"],
                          source="uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
fill = kjit.metal_kernel(name="fill", input_names=["v"], output_names=["y"],
                         source="y[thread_position_in_grid.x] = v;")
a = np.arange(4, dtype=np.float32)
t = torch.arange(4, dtype=torch.float32)

(ints,) = twice(inputs=[a], output_shapes=[(4,)], output_dtypes=[np.int32], grid=(4, 1, 1),
                threadgroup=(4, 1, 1))
as_ints: npt.NDArray[np.int32] = ints
(tensor,) = twice(inputs=(t,), output_shapes=[t.shape], output_dtypes=[t.dtype],
                  grid=[4, 1, 1], threadgroup=[4, 1, 1])
doubled: torch.Tensor = tensor.add(tensor)
bound = twice.bind(output_shapes=[(4,)], output_dtypes=[kjit.float32], grid=(4, 1, 1),
                   threadgroup=(4, 1, 1))
(again,) = bound(t)
again_tensor: torch.Tensor = again
(from_numpy,) = bound(a)
from_numpy_array: npt.NDArray[np.float32] = from_numpy
(filled,) = fill(inputs=[2.5], output_shapes=[(4,)], output_dtypes=[kjit.float32],
                 grid=(4, 1, 1), threadgroup=(4, 1, 1))
filled_array: kjit.Array = filled
'''

RESULTS_AT_RUN_TIME = '''
assert isinstance(ints, np.ndarray) and ints.dtype == np.int32
assert ints.tolist() == [0, 2, 4, 6]
assert isinstance(tensor, torch.Tensor) and isinstance(doubled, torch.Tensor)
assert isinstance(again, torch.Tensor) and isinstance(from_numpy, np.ndarray)
assert isinstance(filled, kjit.Array) and filled.numpy().tolist() == [2.5] * 4
'''


def mypy_strict(tmp_path, code):
    """mypy --strict's run on |code| as a user's module, against the kjit under test."""
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(kjit.__file__)))
    program = tmp_path / "user_program.py"
    program.write_text(code)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
         str(program)],
        capture_output=True, text=True, timeout=600,
        env=dict(os.environ, MYPYPATH=package_parent), cwd=tmp_path)


def test_results_are_typed_as_arrays_of_the_inputs_library(tmp_path):
    pytest.importorskip("torch")
    done = mypy_strict(tmp_path, RESULTS_PROGRAM)
    assert done.returncode == 0, done.stdout + done.stderr
    # Results typed as Any would let this through.
    done = mypy_strict(tmp_path, RESULTS_PROGRAM + "wrong: torch.Tensor = ints\n")
    assert done.returncode == 1
    assert 'Incompatible types in assignment (expression has type "ndarray' in done.stdout
    assert 'variable has type "Tensor")' in done.stdout


def test_the_typed_results_are_what_the_calls_return():
    pytest.importorskip("torch")
    exec(RESULTS_PROGRAM + RESULTS_AT_RUN_TIME, {})
