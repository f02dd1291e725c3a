"""The interpreter's exit says nothing of kjit's objects that are still held: by a daemon thread
that runs a kernel when an uncaught exception ends the program, or by a cycle through a DLPack
capsule's owner, which Python's collector cannot see."""

import os
import subprocess
import sys

import pytest

HELD_AT_EXIT = {
    "daemon-thread-and-uncaught-exception": """
import threading, time, numpy as np, kjit
kernel = kjit.metal_kernel(name="held_by_a_thread", input_names=["x"], output_names=["y"],
                           source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1;")
started = threading.Event()

def loop():
    bound = kernel.bind(output_shapes=[(4,)], output_dtypes=[np.float32], grid=(4, 1, 1),
                        threadgroup=(4, 1, 1))
    x = np.zeros(4, np.float32)
    while True:
        assert (bound(x)[0] == 1).all()
        started.set()
        time.sleep(0.001)

threading.Thread(target=loop, daemon=True).start()
started.wait()
raise RuntimeError("the program's own error")
""",
    "cycle-through-a-dlpack-owner": """
import numpy as np, kjit

class Tagged(np.ndarray):
    pass

a = np.arange(4, dtype=np.float32).view(Tagged)
# The view keeps the array through the DLPack capsule's owner, which the collector cannot see;
# the array keeps the view, and a kernel.
a.view_of_itself = kjit.array(a)
a.kernel = kjit.metal_kernel(name="in_a_cycle", input_names=["x"], output_names=["y"],
                             source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1;")
(y,) = a.kernel(inputs=[a.view_of_itself], output_shapes=[(4,)], output_dtypes=[np.float32],
                grid=(4, 1, 1), threadgroup=(4, 1, 1))
assert (np.asarray(y) == np.arange(1, 5)).all()
del a
raise RuntimeError("the program's own error")
""",
}


def run_program(program: str, timeout: float) -> subprocess.CompletedProcess:
    """|program| in a fresh interpreter that imports this suite's kjit."""
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


@pytest.mark.parametrize("program", HELD_AT_EXIT.values(), ids=HELD_AT_EXIT.keys())
def test_exit_says_nothing_of_objects_still_held(program):
    run = run_program(program, timeout=300)
    assert run.returncode == 1, run.stderr[-2000:]
    last_line = run.stderr.strip().splitlines()[-1]
    assert last_line == "RuntimeError: the program's own error", run.stderr[-2000:]
    assert "nanobind" not in run.stderr and "leak" not in run.stderr, run.stderr[-2000:]


# Daemon threads in CPU kernels while the interpreter finalizes: a finalizer holds it there
# (sleeping, so without the GIL) while their kernels end.
KERNELS_ENDING_DURING_FINALIZATION = """
import threading, time, numpy as np, kjit
kernel = kjit.metal_kernel(name="ends_at_exit", input_names=["x"], output_names=["y"], source='''
    uint i = thread_position_in_grid.x;
    float a = x[i];
    for (int k = 0; k < 4000000; ++k) a = a * 0.999999f + 1e-7f;
    y[i] = a;''')
x = np.zeros(1, np.float32)

def run():
    return kernel(inputs=[x], output_shapes=[(1,)], output_dtypes=[np.float32], grid=(1, 1, 1),
                  threadgroup=(1, 1, 1))[0]

run()
running = threading.Barrier(5)

def loop():
    running.wait()
    while True:
        run()

for _ in range(4):
    threading.Thread(target=loop, daemon=True).start()
running.wait()

class SlowTeardown:
    def __del__(self):
        time.sleep(0.5)

held_until_teardown = SlowTeardown()
print("exiting", flush=True)
"""


def test_daemon_threads_whose_kernels_end_during_finalization_let_the_process_exit():
    for _ in range(3):
        run = run_program(KERNELS_ENDING_DURING_FINALIZATION, timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout == "exiting\n"
        assert run.stderr == "", run.stderr[-2000:]


# A kernel called by the finalizing thread itself, from a finalizer at teardown.
KERNEL_IN_A_FINALIZER = """
import sys, numpy as np, kjit
kernel = kjit.metal_kernel(name="in_a_finalizer", input_names=["x"], output_names=["y"],
                           source="uint i = thread_position_in_grid.x; y[i] = x[i] * 2;")

class RunsAKernelWhenCollected:
    # What the finalizer uses is held here: modules are torn down around it.
    def __init__(self):
        self.kernel, self.write = kernel, sys.stdout.write
        self.x = kjit.array(np.arange(4, dtype=np.float32))
        self.y = kjit.zeros([4], device="cpu")
        self.y_seen = np.asarray(self.y)  # a view of y's memory

    def __del__(self):
        self.kernel(inputs=[self.x], output_shapes=[(4,)], output_dtypes=["float32"],
                    grid=(4, 1, 1), threadgroup=(4, 1, 1), outputs=[self.y])
        self.write(f"{self.y_seen.tolist()}\\n")

held_until_teardown = RunsAKernelWhenCollected()
"""


def test_a_kernel_called_while_the_interpreter_finalizes_runs():
    run = run_program(KERNEL_IN_A_FINALIZER, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout == "[0.0, 2.0, 4.0, 6.0]\n", (run.stdout, run.stderr[-2000:])
