"""Faults in kernels on the CPU raise instead of ending the process: integer division traps,
bad memory accesses (also in forked children), and a fault outside kernels still ends the
process as it would."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kjit
from error_cases import twice


# ---------------------------------------------------------------------------------------------
# Integer division traps on the CPU


@pytest.mark.parametrize("n", [4, 1 << 16])  # on the calling thread, and on the worker pool
@pytest.mark.parametrize("op,a_value,b_value", [("/", 7, 0), ("%", 7, 0), ("/", -(2**31), -1)])
def test_integer_division_traps_raise_on_the_cpu(n, op, a_value, b_value, rng):
    kernel = kjit.metal_kernel(name="divide_ints", input_names=["a", "b"], output_names=["out"],
                               source=f"uint i = thread_position_in_grid.x; out[i] = a[i] {op} b[i];")
    a = rng.integers(0, 1000, n).astype(np.int32)
    b = rng.integers(1, 50, n).astype(np.int32)
    at = int(rng.integers(0, n))
    a[at], b[at] = a_value, b_value
    call = dict(output_shapes=[(n,)], output_dtypes=[np.int32], grid=(n, 1, 1),
                threadgroup=(64, 1, 1), device="cpu")
    with pytest.raises(kjit.LaunchError,
                       match=r"kernel 'divide_ints': an integer division by zero .* stopped the "
                             r"kernel on the CPU"):
        kernel(inputs=[a, b], **call)
    b[at], a[at] = 3, 5  # the kernel, and division, keep working
    (out,) = kernel(inputs=[a, b], **call)
    np.testing.assert_array_equal(out, a // b if op == "/" else a % b)


# Memory the process does not have: a pointer near null, an index far past an array, the
# kernel's stack overflowing; also after a barrier (cooperative mode on the CPU).
BAD_ACCESSES = {
    "near-null": "reinterpret_cast<device volatile float*>(64)[i] = 1.0f;",
    "far-index": "out[i + (1ul << 46)] = 1.0f;",
    "stack": "volatile char big[64 << 20]; big[i] = 1; big[(64 << 20) - 1 - i] = 2;",
    "after-barrier": "threadgroup float s[64]; s[i % 64] = inp[i];\n"
                     "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                     "reinterpret_cast<device volatile float*>(64)[i] = s[63 - i % 64];",
}


# The stack case runs in a fresh process with an 8 MiB stack limit: libraries loaded by other
# tests of a process (jaxlib, torch's compilers) may leave it with stacks 64 MiB do not overflow.
STACK_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_STACK, (8 << 20, resource.getrlimit(resource.RLIMIT_STACK)[1]))
sys.path.insert(0, sys.argv[1])
import numpy as np
import test_errors_cpu_faults as t
t.check_bad_access("stack", int(sys.argv[2]), np.random.default_rng())
print("checked")
"""


@pytest.mark.parametrize("n", [8, 1 << 14])  # on the calling thread, and on the worker pool
@pytest.mark.parametrize("access", BAD_ACCESSES)
def test_bad_memory_accesses_raise_on_the_cpu(access, n, rng):
    if access != "stack":
        check_bad_access(access, n, rng)
        return
    done = subprocess.run([sys.executable, "-c", STACK_CHILD, os.path.dirname(__file__), str(n)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "checked", done.stderr


def check_bad_access(access, n, rng):
    """The kernel making the bad access |access| in one of |n| threads raises, and the threads
    and the process keep working."""
    bad = kjit.metal_kernel(name="bad_access", input_names=["inp", "which"], output_names=["out"],
                            source="uint i = thread_position_in_grid.x;\n"
                                   "if (i == which[0]) {\n" + BAD_ACCESSES[access] + "\n}\n"
                                   "out[i] = inp[i] * 2;")
    x = rng.standard_normal(n).astype(np.float32)
    call = dict(output_shapes=[(n,)], output_dtypes=[np.float32], grid=(n, 1, 1),
                threadgroup=(min(n, 64), 1, 1), device="cpu")
    with pytest.raises(kjit.LaunchError, match=r"kernel 'bad_access': the kernel accessed memory "
                                               r"the process does not have"):
        bad(inputs=[x, np.array([rng.integers(0, n)], np.uint32)], **call)
    # The threads and the process keep working. (A 64 MiB frame overflows a stack whichever
    # thread makes the access, so that kernel runs only as the error.)
    if access != "stack":
        (out,) = bad(inputs=[x, np.array([n], np.uint32)], **call)  # no thread does it
        np.testing.assert_array_equal(out, x * 2)
    (out,) = twice("after_bad_access")(inputs=[x], **call)
    np.testing.assert_array_equal(out, x * 2)


@pytest.mark.parametrize("sigint", ["handled", "ignored"])
def test_a_bad_access_in_a_child_forked_after_kernels_ran_raises(sigint):
    # In the child, the forking thread lives on with a new id, whether or not kjit watches SIGINT
    # (it does not where SIGINT is ignored); the child makes a pool of its own.
    program = textwrap.dedent("""
        import os, signal, sys, numpy as np, kjit
        if sys.argv[1] == "ignored":
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        bad = kjit.metal_kernel(
            name="bad_access", input_names=["inp", "which"], output_names=["out"],
            source="uint i = thread_position_in_grid.x;\\n"
                   "if (i == which[0]) reinterpret_cast<device volatile float*>(64)[i] = 1;\\n"
                   "out[i] = inp[i] * 2;")
        def run(n, which):
            x = np.arange(n, dtype=np.float32)
            (out,) = bad(inputs=[x, np.array([which], np.uint32)], output_shapes=[(n,)],
                         output_dtypes=[np.float32], grid=(n, 1, 1), threadgroup=(64, 1, 1),
                         device="cpu")
            return np.array_equal(out, 2 * x)
        assert run(1 << 14, 1 << 14)  # no thread makes the bad access
        child = os.fork()
        if child == 0:
            seen = []
            for n in (8, 1 << 14):  # the forking thread alone, then the child's pool
                try:
                    run(n, n // 2)
                    seen.append("ran")
                except kjit.LaunchError:
                    seen.append("raised")
            print(*seen, run(1 << 14, 1 << 14), flush=True)
            os._exit(0)
        print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
    """)
    done = subprocess.run([sys.executable, "-c", program, sigint], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == ["raised", "raised", "True", "0"], (done.stdout,
                                                                     done.stderr[-2000:])


def test_a_child_forked_after_many_threads_ran_kernels_watches_its_own():
    # The parent's pool of 700 threads all ran kernel code before the fork; in the child they
    # are gone, and their places are free for the child's own pool of 700. The bad accesses lie in the second half of the grid, which
    # the pool's threads reach together, watched ones and (were the places not free) others.
    program = textwrap.dedent("""
        import os, numpy as np, kjit
        k = kjit.metal_kernel(
            name="spin_then_bad_access", input_names=["inp", "bad"], output_names=["out"],
            source="uint i = thread_position_in_grid.x;\\n"
                   "float acc = inp[i];\\n"
                   "for (uint k = 0; k < 400; ++k) acc = acc * 0.5f + 1.0f;\\n"
                   "if (bad[0] && i >= bad[0])\\n"
                   "    reinterpret_cast<device volatile float*>(64)[i] = 1;\\n"
                   "out[i] = acc;")
        n = 700 * 8 * 4 * 64  # chunks enough for every pool thread to take some
        def run(bad):
            x = np.ones(n, dtype=np.float32)
            (out,) = k(inputs=[x, np.array([bad], np.uint32)], output_shapes=[(n,)],
                       output_dtypes=[np.float32], grid=(n, 1, 1), threadgroup=(64, 1, 1),
                       device="cpu")
            return bool(np.all(out == 2.0))
        assert run(0)
        child = os.fork()
        if child == 0:
            seen = [run(0)]
            for _ in range(3):
                try:
                    run(n // 2)
                    seen.append("ran")
                except kjit.LaunchError:
                    seen.append("raised")
            print(*seen, flush=True)
            os._exit(0)
        print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, KJIT_NUM_THREADS="700"))
    assert done.stdout.split() == ["True", "raised", "raised", "raised", "0"], (
        done.stdout, done.stderr[-2000:])


def test_a_fault_raises_on_any_of_more_than_a_thousand_threads_that_ran_kernels():
    # 1,100 Python threads, all alive at once, each run a kernel, then one that faults: each
    # fault raises on its own thread (a fixed table of watched threads would leave the last
    # ones unwatched, and their faults would end the process). Then the threads end, and as
    # many new ones (reusing their places) do the same.
    program = textwrap.dedent("""
        import threading, numpy as np, kjit
        N = 1100
        ok = kjit.metal_kernel(name="add_one", input_names=["x"], output_names=["out"],
                               source="uint i = thread_position_in_grid.x; out[i] = x[i] + 1;")
        # A write to the first pages, which are never mapped (far past an output could land
        # in one of the threads' stacks).
        bad = kjit.metal_kernel(name="far_out", input_names=["x"], output_names=["out"],
                                source="uint i = thread_position_in_grid.x;\\n"
                                       "*(device float*)(4096ul + 4ul * i) = x[i] + out[0] * 0;")
        x = np.arange(64, dtype=np.float32)
        def call(kernel):
            return kernel(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32],
                          grid=(64, 1, 1), threadgroup=(64, 1, 1), device="cpu")[0]
        call(ok)
        def round_of_threads():
            barrier = threading.Barrier(N)
            seen = [None] * N
            def run(i):
                right = np.array_equal(call(ok), x + 1)
                barrier.wait()
                try:
                    call(bad)
                    seen[i] = "returned"
                except kjit.LaunchError:
                    seen[i] = "raised" if right else "wrong result"
            threads = [threading.Thread(target=run, args=(i,)) for i in range(N)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return sorted(set(seen))
        print(*round_of_threads(), *round_of_threads())
        try:
            call(bad)
        except kjit.LaunchError:
            print("main raised")
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.splitlines() == ["raised raised", "main raised"], (
        done.returncode, done.stdout, done.stderr[-2000:])


@pytest.mark.parametrize("while_running", [False, True], ids=["after", "while a kernel runs"])
def test_a_fault_outside_kernels_still_ends_the_process_as_it_would(while_running):
    # Once kernels have run (and kjit watches for their faults), a fault elsewhere is not kjit's,
    # also while a kernel runs on another thread.
    program = textwrap.dedent("""
        import ctypes, sys, threading, numpy as np, kjit
        k = kjit.metal_kernel(name="k", input_names=["a"], output_names=["o"],
                              source="o[thread_position_in_grid.x] = a[thread_position_in_grid.x];")
        k(inputs=[np.ones(4, np.float32)], output_shapes=[(4,)], output_dtypes=[np.float32],
          grid=(4, 1, 1), threadgroup=(4, 1, 1), device="cpu")
        if sys.argv[1] == "True":
            forever = kjit.metal_kernel(
                name="forever", input_names=["a"], output_names=["o"],
                source="volatile device float* v = o; for (;;) v[0] += a[0];")
            out = kjit.zeros((1,), kjit.float32, "cpu")  # written in place, unlike NumPy's
            threading.Thread(target=forever, daemon=True, kwargs=dict(
                inputs=[np.ones(1, np.float32)], output_shapes=[(1,)], output_dtypes=[np.float32],
                grid=(1, 1, 1), threadgroup=(1, 1, 1), device="cpu", outputs=[out])).start()
            seen = np.from_dlpack(out)
            while seen[0] == 0:
                pass
        ctypes.string_at(0)
    """)
    done = subprocess.run([sys.executable, "-c", program, str(while_running)], capture_output=True,
                          timeout=120)
    assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stderr[-2000:])
