"""The CUDA backend on a GPU: GPU inputs to CPU kernels, the caller's context, the module and disk
caches, init_value, memory errors, inputs on two devices and faults. GPU cases are skipped where
no CUDA device works."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kjit
from conftest import EXP, needs_gpu


@needs_gpu
def test_a_0d_gpu_input_to_a_cpu_kernel(rng):
    torch = pytest.importorskip("torch")
    kernel = kjit.metal_kernel(name="scale_by_gpu_scalar", input_names=["x", "s"],
                               output_names=["y"],
                               source="uint i = thread_position_in_grid.x; y[i] = x[i] * s;")
    x = rng.standard_normal(100).astype(np.float32)
    s = torch.tensor(2.5, device="cuda") * 2  # queued on torch's stream
    (y,) = kernel(inputs=[x, s], output_shapes=[x.shape], output_dtypes=[np.float32],
                  grid=(100, 1, 1), threadgroup=(32, 1, 1))
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, x * np.float32(5))


KEEPS_THE_CALLERS_CONTEXT = r"""
import ctypes, json, numpy as np, kjit
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
device, mine, current = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
assert cuda.cuCtxCreate_v2(ctypes.byref(mine), 0, device) == 0  # now current, not the primary
k = kjit.metal_kernel(name="ctx_copy", input_names=["x"], output_names=["y"],
                      source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1;")
x = np.arange(64, dtype=np.float32)
(y,) = k(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32], grid=(64, 1, 1),
         threadgroup=(64, 1, 1), device="cuda")
del y
cuda.cuCtxGetCurrent(ctypes.byref(current))
print(json.dumps({"kept": current.value == mine.value}))
"""


@needs_gpu
def test_the_callers_current_context_is_kept():
    run = subprocess.run([sys.executable, "-c", KEEPS_THE_CALLERS_CONTEXT], capture_output=True,
                         text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout) == {"kept": True}


GPU_MEMORY_CACHE = r"""
import json, numpy as np, kjit
source = "uint i = thread_position_in_grid.x; y[i] = x[i] + 1;"
x = np.arange(64, dtype=np.float32)

def run():
    k = kjit.metal_kernel(name="cleared_gpu", input_names=["x"], output_names=["y"],
                          source=source)
    (y,) = k(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32], grid=(64, 1, 1),
             threadgroup=(64, 1, 1), device="cuda")
    assert np.array_equal(y, x + 1)

run()
before = kjit.cache_info()
kjit.clear_cache()
cleared = kjit.cache_info()
run()
print(json.dumps({"before": before, "cleared": cleared, "after": kjit.cache_info()}))
"""


@needs_gpu
def test_clear_cache_keeps_the_gpu_modules_loaded(tmp_path):
    run = subprocess.run([sys.executable, "-c", GPU_MEMORY_CACHE], capture_output=True,
                         text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path),
                                  KJIT_CACHE_DIR=str(tmp_path / "cache")))
    assert run.returncode == 0, run.stderr[-2000:]
    info = json.loads(run.stdout)
    assert info["before"]["memory_entries"] >= 1 and info["before"]["compiles"] == 1
    assert info["cleared"]["disk_entries"] == 0
    # Loaded modules cannot be unloaded while launches may be queued: they stay, and counted.
    assert info["cleared"]["memory_entries"] == info["before"]["memory_entries"]
    assert info["after"]["compiles"] == 1


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.complex64, np.float16, np.uint8])
def test_init_value_on_the_gpu(dtype):
    kernel = kjit.metal_kernel(name="every_other_gpu", input_names=["inp"], output_names=["out"],
                               source="""
        uint i = thread_position_in_grid.x;
        if (i % 2 == 0) out[i] = inp[i];
    """)
    x = (np.arange(1001) % 7).astype(dtype)
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                    grid=(x.size, 1, 1), threadgroup=(128, 1, 1), init_value=3,
                    device="cuda")
    expected = np.full_like(x, 3)
    expected[::2] = x[::2]
    np.testing.assert_array_equal(out, expected)


@needs_gpu
def test_an_output_too_large_for_the_gpu_is_a_memory_error_naming_it():
    kernel = kjit.metal_kernel(name="huge_out", input_names=["inp"], output_names=["out"],
                               source="out[0] = inp[0];")
    with pytest.raises(MemoryError, match=r"kernel 'huge_out': output_shapes\[0\] \('out'\): "
                                          r"cuMemAllocAsync failed: CUDA_ERROR_OUT_OF_MEMORY"):
        kernel(inputs=[np.ones(1, np.float32)], output_shapes=[(2**52,)],
               output_dtypes=[np.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1), device="cuda")
    with pytest.raises(MemoryError, match=r"CUDA_ERROR_OUT_OF_MEMORY"):
        kjit.empty((2**52,), device="cuda")
    # The device keeps working.
    (out,) = kernel(inputs=[np.full(1, 3, np.float32)], output_shapes=[(1,)],
                    output_dtypes=[np.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                    device="cuda")
    np.testing.assert_array_equal(np.asarray(out), [3])


@needs_gpu
def test_inputs_on_two_devices_are_an_error(rng):
    torch = pytest.importorskip("torch")
    a = torch.ones(8, device="cuda")
    b = np.ones(8, np.float32)
    k = kjit.metal_kernel(name="add2", input_names=["a", "b"], output_names=["o"],
                          source="uint i = thread_position_in_grid.x; o[i] = a[i] + b[i];")
    with pytest.raises(ValueError, match="arrays on different devices"):
        k(inputs=[a, b], output_shapes=[(8,)], output_dtypes=[np.float32], grid=(8, 1, 1),
          threadgroup=(8, 1, 1))


CHILD = r"""
import json, sys, numpy as np, kjit
k = kjit.metal_kernel(name="gpu_exp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
x = np.linspace(-3, 3, 4096, dtype=np.float32)
out, = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
         threadgroup=(256, 1, 1), device="cuda")
print(json.dumps({"err": float(np.max(np.abs(out - np.exp(x)) / np.exp(x))),
                  "info": kjit.cache_info()}))
"""


@needs_gpu
def test_a_fresh_process_loads_the_cubin_from_disk(tmp_path):
    env = dict(os.environ, KJIT_CACHE_DIR=str(tmp_path))
    first = json.loads(subprocess.run([sys.executable, "-c", CHILD, EXP], env=env, check=True,
                                      capture_output=True, text=True).stdout)
    assert first["info"]["compiles"] == 1 and first["err"] < 3e-7
    env["KJIT_ASSERT_NO_COMPILE"] = "1"
    second = json.loads(subprocess.run([sys.executable, "-c", CHILD, EXP], env=env, check=True,
                                       capture_output=True, text=True).stdout)
    assert second["info"]["compiles"] == 0 and second["info"]["disk_hits"] == 1
    assert second["err"] < 3e-7


FAULT = r"""
import numpy as np, kjit
k = kjit.cuda_kernel(name="wild_write", input_names=["inp"], output_names=["out"],
                     source="out[(1ull << 40) + threadIdx.x] = inp[threadIdx.x];")
x = np.ones(32, np.float32)
try:
    k(inputs=[x], output_shapes=[(32,)], output_dtypes=[np.float32], grid=(32, 1, 1),
      threadgroup=(32, 1, 1), device="cuda")
    print("no error")
except kjit.LaunchError as e:
    print("LaunchError:", e)
"""


@needs_gpu
def test_an_out_of_bounds_write_raises_instead_of_crashing():
    # In a subprocess: after a fault the process's CUDA context is unusable.
    run = subprocess.run([sys.executable, "-c", FAULT], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "LaunchError:" in run.stdout and "no longer usable" in run.stdout, run.stdout
