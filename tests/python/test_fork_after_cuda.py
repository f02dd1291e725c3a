"""A process forked after its parent initialised CUDA cannot use CUDA (the driver's contexts do
not survive fork): kjit says so, naming the way out, before any driver call, and the CPU
backend keeps working there. Shown with a stand-in driver library (any machine) and with the
real driver where a GPU works."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import kjit
from conftest import library_path_first

REPO = pathlib.Path(__file__).resolve().parents[2]

CHILD = r"""
import multiprocessing, os, sys
import numpy as np
import kjit

def exp_kernel():
    return kjit.metal_kernel(name="fork_exp", input_names=["inp"], output_names=["out"],
                             source="uint i = thread_position_in_grid.x; out[i] = exp(inp[i]);")

def in_child(queue, use_gpu):
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    out = exp_kernel()(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                       grid=(64, 1, 1), threadgroup=(32, 1, 1), device="cpu")[0]
    cpu_error = float(np.max(np.abs(np.asarray(out) - np.exp(x.astype(np.float64)))))
    try:
        exp_kernel()(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                     grid=(64, 1, 1), threadgroup=(32, 1, 1), device="cuda")
        refusal = None
    except Exception as e:
        refusal = (type(e).__name__, str(e))
    queue.put((cpu_error, refusal, kjit._kjit.cuda_status()["unavailable"], os.getppid()))

if __name__ == "__main__":
    use_gpu = sys.argv[1] == "gpu"
    if use_gpu:
        x = np.ones(64, np.float32)
        exp_kernel()(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                     grid=(64, 1, 1), threadgroup=(32, 1, 1), device="cuda")
    else:
        kjit._kjit.cuda_status()  # loads and initialises the stand-in driver
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=in_child, args=(queue, use_gpu))
    child.start()
    result = queue.get(timeout=120)
    child.join(timeout=60)
    print(repr((result, os.getpid(), child.exitcode)))
"""


def driver_functions() -> list[str]:
    header = (REPO / "src/backend/cuda/cuda_api.h").read_text()
    block = header.split("#define KJIT_CUDA_DRIVER_FUNCTIONS(X)", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"X\((cu\w+),", block)


def run_parent(tmp_path, mode, env_changes):
    script = tmp_path / "parent.py"
    script.write_text(CHILD)
    env = dict(os.environ, KJIT_CACHE_DIR=str(tmp_path / "cache"), **env_changes)
    done = subprocess.run([sys.executable, str(script), mode], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (cpu_error, refusal, unavailable, parent_seen), parent, exitcode = eval(done.stdout)
    assert exitcode == 0
    assert parent_seen == parent
    return cpu_error, refusal, unavailable, parent


def check_refusal(refusal, unavailable, parent):
    assert refusal is not None, "the forked child launched on CUDA"
    kind, message = refusal
    expected = f"it was forked from process {parent} after that process had initialised CUDA"
    assert expected in message, message
    assert "'spawn' or 'forkserver'" in message, message
    assert expected in unavailable, unavailable


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to build a stand-in")
def test_a_child_forked_after_cuda_init_is_refused_cuda_and_keeps_the_cpu(tmp_path):
    # A driver library that initialises and has no device: enough for kjit to count CUDA as
    # initialised in the parent, on any machine.
    functions = driver_functions()
    assert "cuInit" in functions and "cuLaunchKernel" in functions, functions
    source = "\n".join(f"int {name}(void) {{ return 0; }}" for name in functions
                       if name != "cuDeviceGetCount")
    source += "\nint cuDeviceGetCount(int* n) { *n = 0; return 0; }\n"
    (tmp_path / "driver.c").write_text(source)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"),
                    str(tmp_path / "driver.c")], check=True)
    cpu_error, refusal, unavailable, parent = run_parent(
        tmp_path, "stand-in", {"LD_LIBRARY_PATH": library_path_first(tmp_path)})
    assert cpu_error < 1e-6
    check_refusal(refusal, unavailable, parent)


@pytest.mark.skipif(bool(kjit._kjit.cuda_status()["unavailable"]), reason="needs a CUDA GPU")
def test_a_child_forked_after_gpu_launches_is_refused_cuda(tmp_path):
    cpu_error, refusal, unavailable, parent = run_parent(tmp_path, "gpu", {})
    assert cpu_error < 1e-6
    check_refusal(refusal, unavailable, parent)
