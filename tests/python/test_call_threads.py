"""Calls and threads: one kernel called from two threads, other Python threads running while
a call compiles and runs, a warning raised in the calling thread, and a forked child."""

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

import kjit


def test_one_kernel_called_from_two_threads_with_different_arguments(rng):
    # Each call's converted arguments must stay its own while the kernel runs without the GIL.
    kernel = kjit.metal_kernel(name="threads_scale", input_names=["x"], output_names=["y"],
                               source="""
        uint i = thread_position_in_grid.x;
        y[i] = x[i] * S;
    """)
    inputs = {n: rng.standard_normal(n).astype(np.float32) for n in (1000, 3000)}
    failures = []

    def work(n, scale):
        x = inputs[n]
        kw = dict(inputs=[x], output_shapes=[(n,)], output_dtypes=[np.float32],
                  grid=(n, 1, 1), threadgroup=(64, 1, 1), template=[("S", scale)])
        for _ in range(200):
            (y,) = kernel(**kw)
            if y.shape != (n,) or not np.array_equal(y, x * scale):
                failures.append((n, y.shape))
                return

    threads = [threading.Thread(target=work, args=a) for a in ((1000, 2), (3000, 3))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_other_python_threads_run_while_a_call_compiles_and_runs_on_the_cpu(rng):
    # The GIL is released while a call compiles, and while its kernel runs on the CPU.
    offset = int(rng.integers(1, 2**31))  # a source of its own: compiled by the call
    kernel = kjit.metal_kernel(name="gil_spin", input_names=["n", "x"], output_names=["out"],
                               source=f"""
        uint acc = x[0];
        for (uint k = 0; k < n; ++k) acc = acc * 1664525u + 1013904223u;
        out[0] = acc + {offset}u;
    """)
    x = rng.integers(0, 2**32, 1, dtype=np.uint32)
    call_kw = dict(output_shapes=[(1,)], output_dtypes=[np.uint32], grid=(1, 1, 1),
                   threadgroup=(1, 1, 1), device="cpu")
    # Timed without the suite's wrapper, which also builds each kernel for a GPU in the call.
    unwrapped = getattr(kernel, "_kernel", kernel)

    def reference(n):  # n steps of the generator, in closed form, modulo 2^32
        a, c, m = 1664525, 1013904223, 2**32
        return (pow(a, n, m) * int(x[0]) + c * (pow(a, n, (a - 1) * m) - 1) // (a - 1)
                + offset) % m

    def ticks_while_called(n):
        window = {}

        def call():
            window["start"] = time.perf_counter()
            window["out"] = unwrapped(inputs=[np.uint32(n), x], **call_kw)[0]
            window["end"] = time.perf_counter()

        thread = threading.Thread(target=call)
        ticks = []
        thread.start()
        while thread.is_alive():
            ticks.append(time.perf_counter())
        thread.join()
        start, end = window["start"], window["end"]
        assert end - start > 0.03, "the call was too short to tell"
        assert int(window["out"][0]) == reference(n), n
        # The threads take turns at most every millisecond in Python code: beyond its first and
        # last ones, the call's time is the kernel's.
        return sum(start + 0.01 < t < end - 0.01 for t in ticks)

    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-3)
    try:
        compiling = ticks_while_called(10)
        running = ticks_while_called(300_000_000)  # a plan already built: the kernel alone
    finally:
        sys.setswitchinterval(switch_interval)
    assert compiling > 100 and running > 100, (compiling, running)
    assert int(kernel(inputs=[np.uint32(5), x], **call_kw)[0][0]) == reference(5)


WARNING_IN_A_THREAD = """
import json, threading, warnings, numpy as np, kjit
warnings.simplefilter("error", RuntimeWarning)
kernel = kjit.metal_kernel(name="fill_in_thread", input_names=["x"], output_names=["y"],
                           source="y[thread_position_in_grid.x] = x[0];")
caught = {}

def call():
    try:
        kernel(inputs=[np.ones(1, np.float32)], output_shapes=[(1 << 20,)],
               output_dtypes=[np.float32], grid=(1 << 20, 1, 1), threadgroup=(256, 1, 1))
    except RuntimeWarning as e:
        caught["warning"] = str(e)

t = threading.Thread(target=call)
t.start()
t.join()
print(json.dumps(caught))
"""


def test_a_warning_from_a_call_in_another_thread_raises_there():
    run = subprocess.run([sys.executable, "-c", WARNING_IN_A_THREAD], capture_output=True,
                         text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path),
                                  KJIT_CPU_POOL_BYTES="lots"))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "KJIT_CPU_POOL_BYTES='lots' is not a number of bytes" in json.loads(run.stdout)["warning"]


FORKED_CHILD = """
import os, numpy as np, kjit
k = kjit.metal_kernel(name="fork_twice", input_names=["x"], output_names=["y"],
                      source="uint i = thread_position_in_grid.x; y[i] = x[i] * 2;")
x = np.arange(1 << 16, dtype=np.float32)  # enough threads for the worker pool

def run():
    (y,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
             grid=(x.size, 1, 1), threadgroup=(64, 1, 1), device="cpu")
    return np.array_equal(y, 2 * x)

assert run()  # the parent's worker threads are running now
pid = os.fork()
if pid == 0:
    os._exit(0 if run() else 3)
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_a_forked_child_runs_kernels():
    run = subprocess.run([sys.executable, "-c", FORKED_CHILD], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path),
                                               KJIT_NUM_THREADS="4"))
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "0"
