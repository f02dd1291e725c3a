"""A CPU kernel that writes just outside an output kjit allocated raises LaunchError naming the
output and how far outside it wrote, and the process goes on working: the guard space there is
put back. Outputs kjit makes (small ones, and pooled ones of 1 MiB or more), kjit arrays given
in outputs=, and NumPy arrays under 1 MiB given in outputs= (which the kernel writes through a
guarded copy). Each bad launch runs in a child process: such kernels used to crash the
interpreter, or damage malloc's records so that a later free aborted. Kernels that stay in
bounds raise nothing, NumPy outputs included."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kjit

# Each thread (x, y) writes flat index y * p[0] + x + p[1] of out with that index's value, so
# what lands inside the output is known whichever thread wrote it; ok is written in bounds.
SOURCE = """
uint x = thread_position_in_grid.x, y = thread_position_in_grid.y;
ok[y * threads_per_grid.x + x] = 1.0f;
int k = int(y) * p[0] + int(x) + p[1];
out[k] = float(k);
"""
# What the child's reference holds where the kernel does not write.
SENTINEL = 0.1

# name: (what the output's size gives: output shape, grid, p, bytes written before its start and
# past its end).
PATTERNS = {
    # One element past the end.
    "one-element": lambda n: ((n,), (n + 1, 1), (0, 0), 0, 4),
    # A grid rounded up to groups of 1024 threads over 1024 * k - 24 elements: 96 bytes past.
    "rounded-up-grid": lambda n: ((n - 24,), (n, 1), (0, 0), 0, 96),
    # A 2-D grid whose rows are rounded up to 64 (small) or 1024 (large): the last row runs on.
    "2d-row": lambda n: (((20, 50), (64, 20), (50, 0), 0, 56) if n < 1 << 18 else
                         ((400, 1000), (1024, 400), (1000, 0), 0, 96)),
    # Three elements before the start.
    "before-start": lambda n: ((n,), (n, 1), (0, -3), 12, 0),
}
# Under 1 MiB of float32 (in malloc's heap, and, for medium, near its threshold for mapping a
# block of its own), and over it.
SIZES = {"small": 1024, "medium": 200 * 1024, "large": 300 * 1024}

# The child: sets up the outputs of its kind, runs the bad launch, checks what landed inside the
# output, and that memory and calls go on working; prints the error's message.
CHILD = textwrap.dedent("""
    import gc, json, sys
    import numpy as np
    import kjit

    kind, size, shape, grid, p, sentinel = json.loads(sys.argv[1])
    shape, grid = tuple(shape), (*grid, 1)
    kernel = kjit.metal_kernel(name="overrun", input_names=["p"], output_names=["ok", "out"],
                               source=sys.argv[2])
    size = int(np.prod(shape))

    if kind == "made":
        given = None
    elif kind == "numpy":
        given = [np.empty(grid[1::-1], np.float32), np.full(shape, sentinel, np.float32)]
    else:
        given = [kjit.empty(grid[1::-1], kjit.float32, "cpu"),
                 kjit.empty(shape, kjit.float32, "cpu")]
    call = dict(inputs=[np.array(p, np.int32)], output_shapes=[grid[1::-1], shape],
                output_dtypes=[np.float32, np.float32], grid=grid, threadgroup=(64, 1, 1),
                device="cpu")
    try:
        kernel(**call, outputs=given)
        message = None
    except kjit.LaunchError as e:
        message = str(e)

    # The output holds what the kernel wrote inside it; around it nothing changed.
    expected = np.full(size, sentinel, np.float32)
    written = np.arange(p[1], p[1] + size)
    written = written[(written >= 0) & (written < size)]
    expected[written] = written
    if given is not None:
        got = np.asarray(given[1]).reshape(-1)
        assert np.array_equal(got[written], expected[written])
    if kind == "numpy":  # a NumPy output is also unchanged where the kernel did not write
        assert np.array_equal(got, expected)

    # Memory and kernels keep working: many arrays made and freed, and a launch in bounds.
    del given
    gc.collect()
    for n in [1, 100, 1000, 1024, 1 << 16, 1 << 18]:
        junk = [np.ones(n, np.float32) for _ in range(20)]
        junk += [kjit.zeros((n,), kjit.float32, "cpu") for _ in range(5)]
        del junk
    inside = dict(call, grid=(shape[-1], size // shape[-1], 1),
                  inputs=[np.array([shape[-1], 0], np.int32)])
    ok, out = kernel(**inside)
    assert np.array_equal(np.asarray(out).reshape(-1), np.arange(size, dtype=np.float32))
    print(json.dumps(message))
""")

KINDS = [("made", "small"), ("made", "large"), ("kjit.empty", "small"), ("kjit.empty", "large"),
         ("numpy", "small"), ("numpy", "medium")]


def run_child(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, json.dumps(args[:-1]), args[-1]],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("kind,size", KINDS)
def test_a_write_just_outside_an_output_raises_naming_it(kind, size, pattern):
    shape, grid, p, before, after = PATTERNS[pattern](SIZES[size])
    done = run_child(kind, size, shape, grid, p, SENTINEL, SOURCE)
    assert done.returncode == 0, done.stderr[-3000:]
    message = json.loads(done.stdout.splitlines()[-1])
    assert message is not None, "no error was raised"
    where = f"{before} bytes before its start" if before else f"{after} bytes past its end"
    assert f"kernel 'overrun': outputs[1] ('out') was written {where}." in message or \
        f"kernel 'overrun': outputs[1] ('out') was written {where} (" in message, message
    assert "kernel wrote out of its outputs' bounds" in message
    assert "outputs[0]" not in message and "may be damaged" not in message


@pytest.mark.parametrize("kind,size", KINDS + [("numpy-view", "small")])
def test_a_kernel_in_bounds_raises_nothing(kind, size):
    n = SIZES[size]
    kernel = kjit.metal_kernel(name="in_bounds", input_names=["p"], output_names=["ok", "out"],
                               source=SOURCE)
    given = {"made": None,
             "kjit.empty": [kjit.empty((1, n), kjit.float32, "cpu"),
                            kjit.empty((n,), kjit.float32, "cpu")],
             "numpy": [np.empty((1, n), np.float32), np.empty(n, np.float32)]}
    # Outputs that are slices of one array, next to each other: each is written right up to the
    # other's edge.
    both = np.empty(2 * n, np.float32)
    given["numpy-view"] = [both[:n].reshape(1, n), both[n:]]
    call = dict(inputs=[np.array([0, 0], np.int32)], output_shapes=[(1, n), (n,)],
                output_dtypes=[np.float32, np.float32], grid=(n, 1, 1), threadgroup=(64, 1, 1),
                device="cpu")
    for _ in range(2):  # the second call runs its recorded launch again
        ok, out = kernel(**call, outputs=given[kind])
        np.testing.assert_array_equal(np.asarray(ok), np.ones((1, n), np.float32))
        np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.float32))


def test_a_write_far_past_a_large_output_stops_at_a_page_no_access_may_touch():
    # One thread writes on and on past a pooled output: through its guard, to the page after
    # the block, where it faults; the error also says how far it wrote into the guard.
    source = ("if (thread_position_in_grid.x == 0) {\n"
              "    for (int j = 0; j < p[1]; ++j) out[p[0] + j] = 1.0f;\n"
              "}\n"
              "ok[thread_position_in_grid.x] = 1.0f;")
    program = textwrap.dedent("""
        import sys, numpy as np, kjit
        kernel = kjit.metal_kernel(name="runs_on", input_names=["p"], output_names=["ok", "out"],
                                   source=sys.argv[1])
        n = 300 * 1024
        def run(p):
            return kernel(inputs=[np.array(p, np.int32)], output_shapes=[(64,), (n,)],
                          output_dtypes=[np.float32, np.float32], grid=(64, 1, 1),
                          threadgroup=(64, 1, 1), device="cpu")
        try:
            run([n, 1 << 20])
            print("no error")
        except kjit.LaunchError as e:
            print(e)
        ok, out = run([0, n])
        print(bool(np.all(np.asarray(out) == 1)))
    """)
    done = subprocess.run([sys.executable, "-c", program, source], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    message, survived = done.stdout.splitlines()[-2:]
    assert message.startswith("[kjit.metal_kernel] kernel 'runs_on': the kernel accessed memory the process does not "
                              "have"), message
    assert "outputs[1] ('out') was written at least 16384 bytes past its end" in message
    assert "memory beyond the guard may be damaged" in message
    assert survived == "True"


def test_a_tiny_numpy_output_overrun_by_a_large_threadgroup_is_held_by_its_copy():
    # 16 floats, a grid rounded up to 256 threads: 960 bytes past the end, far more than a
    # quarter of the output. The copy's guard holds them all.
    program = textwrap.dedent("""
        import numpy as np, kjit
        kernel = kjit.metal_kernel(name="tiny", input_names=["x"], output_names=["out"],
                                   source="out[thread_position_in_grid.x] = x[0];")
        for _ in range(3):  # the copy is kept for the next call, its guards put back
            out = np.zeros(16, np.float32)
            try:
                kernel(inputs=[np.ones(1, np.float32)], output_shapes=[(16,)],
                       output_dtypes=[np.float32], grid=(256, 1, 1), threadgroup=(256, 1, 1),
                       device="cpu", outputs=[out])
            except kjit.LaunchError as e:
                print(e)
            print(bool(np.all(out == 1)))
        junk = [np.ones(n, np.float32) for n in range(1, 2000)]
        del junk
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 6, done.stdout
    for message, written in zip(lines[::2], lines[1::2]):
        assert "outputs[0] ('out') was written 960 bytes past its end." in message, message
        assert "may be damaged" not in message
        assert written == "True"
