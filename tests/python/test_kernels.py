"""Kernels run on the CPU: the seed examples, launch geometry, outputs, inputs of every kind and
dtype, return types, verbose output, and the dialects' arithmetic and math against NumPy."""

import functools
import json
import math
import os
import subprocess
import sys
import threading
import time

import ml_dtypes
import numpy as np
import pytest

import kjit
from conftest import needs_gpu, poisoned
from seed_kernels import INVERT_3X3, MYEXP

DIALECTS = ["metal", "cuda"]


def make_kernel(dialect, **kwargs):
    factory = kjit.metal_kernel if dialect == "metal" else kjit.cuda_kernel
    return factory(**kwargs)


def ulp_error(out, ref):
    """|out - ref| in units of the float32 spacing at ref (ref in float64)."""
    ref = np.asarray(ref, dtype=np.float64)
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    spacing = np.maximum(spacing, 2.0 ** -149)
    return np.abs(np.asarray(out, dtype=np.float64) - ref) / spacing


# --- the seed examples ---------------------------------------------------------------------

def test_myexp(rng):
    kernel = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                               source=MYEXP)
    a = rng.standard_normal((4, 16)).astype(np.float16)
    out = poisoned(a.shape, np.float16)
    (res,) = kernel(inputs=[a], template=[("T", kjit.float32)], grid=(a.size, 1, 1),
                    threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype],
                    outputs=[out])
    assert res is out
    ref = np.exp(a.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2 ** -11, atol=0)
    # Computed in float32 (T) and rounded once to half: within half a float16 ulp, give or take
    # the float32 error.
    half_ulp = np.spacing(ref.astype(np.float16)).astype(np.float64) / 2
    assert np.all(np.abs(out.astype(np.float64) - ref) <= half_ulp + 4 * ref * 2.0 ** -24)


INVERT_3X3_SOURCE = INVERT_3X3


def test_invert_3x3(rng):
    invert = kjit.metal_kernel(name="invert_3x3", input_names=["a"], output_names=["out"],
                               source=INVERT_3X3_SOURCE)
    n = 100_003  # not a multiple of the group: the last group is partial
    a = (np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    out = poisoned(a.shape, np.float32)
    invert(inputs=[a], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape],
           output_dtypes=[a.dtype], outputs=[out])
    a64 = a.astype(np.float64)
    ref = np.linalg.inv(a64)
    assert np.all(np.isfinite(out))
    # Per matrix: error relative to the inverse's size, scaled by the condition number.
    err = np.abs(out - ref).max(axis=(1, 2)) / np.abs(ref).max(axis=(1, 2))
    cond = np.linalg.cond(a64)
    assert np.all(err <= 2e-6 * cond), float((err / cond).max())
    assert err.max() < 1e-4
    # And the product with the matrix is the identity.
    np.testing.assert_allclose(a64 @ out.astype(np.float64), np.broadcast_to(np.eye(3), a.shape),
                               atol=1e-4)


# --- partial edge groups ---------------------------------------------------------------------

PARTIAL_SOURCE = {
    "metal": """
        uint3 p = thread_position_in_grid;
        uint3 n = threads_per_grid;
        if (p.x >= uint(gx) || p.y >= uint(gy) || p.z >= uint(gz)) {
            escaped[0] = escaped[0] + 1;
            return;
        }
        uint i = p.x + n.x * (p.y + n.y * p.z);
        count[i] = count[i] + 1;
        device uint* r = info + 6 * i;
        r[0] = threads_per_threadgroup.x;
        r[1] = threads_per_threadgroup.y;
        r[2] = threads_per_threadgroup.z;
        r[3] = threadgroup_position_in_grid.x;
        r[4] = threadgroup_position_in_grid.y;
        r[5] = threadgroup_position_in_grid.z;
    """,
    "cuda": """
        unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
        unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
        if (x >= unsigned(gx[0]) || y >= unsigned(gy[0]) || z >= unsigned(gz[0])) {
            escaped[0] = escaped[0] + 1;
            return;
        }
        unsigned i = x + unsigned(gx[0]) * (y + unsigned(gy[0]) * z);
        count[i] = count[i] + 1;
        unsigned* r = info + 6 * i;
        r[0] = threads_per_threadgroup.x;
        r[1] = threads_per_threadgroup.y;
        r[2] = threads_per_threadgroup.z;
        r[3] = blockIdx.x;
        r[4] = blockIdx.y;
        r[5] = blockIdx.z;
    """,
}


@pytest.fixture(scope="module")
def partial_kernels():
    return {d: make_kernel(d, name="partial_groups", input_names=["gx", "gy", "gz"],
                           output_names=["count", "info", "escaped"], source=PARTIAL_SOURCE[d])
            for d in DIALECTS}


@pytest.mark.parametrize(
    "grid,threadgroup",
    [
        ((37, 1, 1), (8, 1, 1)),
        ((13, 7, 1), (4, 3, 1)),
        ((5, 6, 7), (2, 4, 3)),
        ((3, 2, 2), (8, 8, 8)),  # the group is larger than the grid in every dimension
    ],
)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_partial_edge_groups(partial_kernels, dialect, grid, threadgroup):
    gx, gy, gz = grid
    shape = (gz, gy, gx)  # exactly the grid: x is the fastest dimension
    count = np.zeros(shape, np.int32)
    info = poisoned(shape + (6,), np.uint32)
    escaped = np.zeros((1,), np.int32)
    partial_kernels[dialect](
        inputs=[gx, gy, gz], grid=grid, threadgroup=threadgroup,
        output_shapes=[shape, shape + (6,), (1,)],
        output_dtypes=[np.int32, np.uint32, np.int32], outputs=[count, info, escaped])
    assert escaped[0] == 0
    np.testing.assert_array_equal(count, np.ones(shape, np.int32))
    G = np.array(grid)
    T = np.minimum(np.array(threadgroup), G)
    z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    pos = np.stack([x, y, z], axis=-1)
    gid = pos // T
    part = np.minimum(T, G - gid * T)
    np.testing.assert_array_equal(info[..., 0:3], part)
    np.testing.assert_array_equal(info[..., 3:6], gid)
    # Every partial size occurs where expected: full groups inside, the remainder at the edge.
    for d in range(3):
        sizes = set(np.unique(info[..., d]).tolist())
        assert sizes == {int(T[d])} | ({int(G[d] % T[d])} if G[d] % T[d] else set())


# --- zero-sized grids and init_value ---------------------------------------------------------

ONE_PER_THREAD = """
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] * 3;
    flag[i] = 5;
"""


@pytest.fixture(scope="module")
def one_per_thread():
    return kjit.metal_kernel(name="one_per_thread", input_names=["inp"],
                             output_names=["out", "flag"], source=ONE_PER_THREAD)


@pytest.mark.parametrize("grid", [(0, 1, 1), (16, 0, 1), (16, 4, 0), (0, 0, 0)])
def test_zero_grid_launches_nothing(one_per_thread, grid, rng):
    a = rng.standard_normal(16).astype(np.float32)
    init = float(rng.uniform(-50, 50))
    out, flag = one_per_thread(inputs=[a], grid=grid, threadgroup=(8, 1, 1),
                               output_shapes=[(16,), (4, 4)],
                               output_dtypes=[np.float32, np.int32], init_value=init)
    assert out.shape == (16,) and out.dtype == np.float32
    assert flag.shape == (4, 4) and flag.dtype == np.int32
    np.testing.assert_array_equal(out, np.full(16, np.float32(init)))
    np.testing.assert_array_equal(flag, np.full((4, 4), int(init), np.int32))
    # Without init_value, preallocated outputs stay as they were: no thread ran.
    outs = [poisoned((16,), np.float32), poisoned((4, 4), np.int32)]
    one_per_thread(inputs=[a], grid=grid, threadgroup=(8, 1, 1), output_shapes=[(16,), (4, 4)],
                   output_dtypes=[np.float32, np.int32], outputs=outs)
    assert np.all(np.isnan(outs[0]))
    np.testing.assert_array_equal(outs[1], np.full((4, 4), -7, np.int32))


def test_zero_grid_with_empty_outputs(one_per_thread):
    out, flag = one_per_thread(inputs=[np.zeros(0, np.float32)], grid=(0, 1, 1),
                               threadgroup=(8, 1, 1), output_shapes=[(0,), (0, 3)],
                               output_dtypes=[np.float32, np.int32], init_value=1.0)
    assert out.shape == (0,) and flag.shape == (0, 3)


EVERY_OTHER = """
    uint i = thread_position_in_grid.x;
    if (i % 2 == 0) {
        out[i] = inp[i];
    }
"""


@pytest.fixture(scope="module")
def every_other():
    return kjit.metal_kernel(name="every_other", input_names=["inp"],
                             output_names=["out", "untouched"], source=EVERY_OTHER)


@pytest.mark.parametrize("preallocated", [False, True])
def test_init_value_fills_before_launch(every_other, preallocated, rng):
    n = 101
    a = rng.standard_normal(n).astype(np.float32)
    init = float(np.round(rng.uniform(-100, 100), 2))
    kwargs = dict(inputs=[a], grid=(n, 1, 1), threadgroup=(16, 1, 1),
                  output_shapes=[(n,), (3, 5)], output_dtypes=[np.float32, np.int64],
                  init_value=init)
    if preallocated:
        outs = [poisoned((n,), np.float32), poisoned((3, 5), np.int64)]
        res = every_other(**kwargs, outputs=outs)
        assert res[0] is outs[0] and res[1] is outs[1]
    else:
        res = every_other(**kwargs)
    out, untouched = res
    expected = np.full(n, np.float32(init))
    expected[::2] = a[::2]
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(untouched, np.full((3, 5), int(init), np.int64))


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


def test_every_way_python_calls_a_kernel(rng):
    kernel = kjit._kjit.metal_kernel(name="twice", input_names=["x"], output_names=["y"],
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


# --- arguments that change, or go away, while a call uses them ------------------------------

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


def test_argument_lists_emptied_while_they_are_read(rng):
    # Unwrapped (conftest's wrapper reads the arguments again after the call).
    kernel = kjit._kjit.metal_kernel(name="add_emptied", input_names=["a", "b"],
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


def test_a_conversion_that_calls_the_kernel_again_keeps_each_calls_arguments():
    kernel = kjit._kjit.cuda_kernel(name="reentrant_copy", input_names=["x"], output_names=["out"],
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


def test_array_protocol_copy_argument():
    a = kjit.zeros((3,), dtype=kjit.float32, device="cpu")
    assert np.shares_memory(np.asarray(a), a.numpy())
    assert not np.shares_memory(np.asarray(a, copy=True), a.numpy())
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(a, dtype=np.float64, copy=False)
    assert np.shares_memory(np.asarray(a, dtype=np.float32, copy=False), a.numpy())


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


# --- scalar inputs -----------------------------------------------------------------------------

SCALAR_SOURCE = {
    "metal": """
        uint i = thread_position_in_grid.x;
        vals[i] = inp[i] * x;
        if (i == 0) {
            big_out[0] = big;
            big_out[1] = big / 3;
            n_out[0] = n;
            n_out[1] = n / 7;
            b_out[0] = flag;
            b_out[1] = !flag;
            f_out[0] = x;
            f_out[1] = x / 3;
            sizes[0] = sizeof(flag);
            sizes[1] = sizeof(n);
            sizes[2] = sizeof(big);
            sizes[3] = sizeof(x);
            sizes[4] = decltype(n)(-1) < 0;
            sizes[5] = decltype(big)(-1) < 0;
            sizes[6] = decltype(x)(1) / decltype(x)(2) > 0;
            sizes[7] = decltype(n)(1) / decltype(n)(2) > 0;
        }
    """,
    "cuda": """
        auto i = cooperative_groups::this_grid().thread_rank();
        vals[i] = inp[i] * x[0];
        if (i == 0) {
            big_out[0] = big[0];
            big_out[1] = big[0] / 3;
            n_out[0] = n[0];
            n_out[1] = n[0] / 7;
            b_out[0] = flag[0];
            b_out[1] = !flag[0];
            f_out[0] = *x;
            f_out[1] = x[0] / 3;
            sizes[0] = sizeof(flag[0]);
            sizes[1] = sizeof(n[0]);
            sizes[2] = sizeof(big[0]);
            sizes[3] = sizeof(x[0]);
            sizes[4] = static_cast<decltype(n[0] + 0)>(-1) < 0;
            sizes[5] = static_cast<decltype(big[0] + 0)>(-1) < 0;
            sizes[6] = static_cast<decltype(x[0] + 0)>(1) / 2 > 0;
            sizes[7] = static_cast<decltype(n[0] + 0)>(1) / 2 > 0;
        }
    """,
}


def trunc_div(a, b):
    """Integer division truncating toward zero, as in C++."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@pytest.mark.parametrize("dialect", DIALECTS)
def test_scalar_inputs(dialect, rng):
    kernel = make_kernel(dialect, name="scalars", input_names=["inp", "flag", "n", "big", "x"],
                         output_names=["vals", "big_out", "n_out", "b_out", "f_out", "sizes"],
                         source=SCALAR_SOURCE[dialect])
    inp = rng.standard_normal(50).astype(np.float32)
    for _ in range(2):
        flag = bool(rng.integers(0, 2))
        n = int(rng.integers(-2 ** 31, 2 ** 31))
        big = int(rng.integers(2 ** 31, 2 ** 62)) * int(rng.choice([-1, 1]))
        x = float(rng.standard_normal() * 10)
        outs = [poisoned((50,), np.float32), poisoned((2,), np.int64), poisoned((2,), np.int32),
                np.array([not flag, flag]), poisoned((2,), np.float32), poisoned((8,), np.int32)]
        kernel(inputs=[inp, flag, n, big, x], grid=(50, 1, 1), threadgroup=(16, 1, 1),
               output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
               outputs=outs)
        vals, big_out, n_out, b_out, f_out, sizes = outs
        x32 = np.float32(x)
        np.testing.assert_array_equal(vals, inp * x32)
        # C++ division truncates toward zero.
        assert big_out.tolist() == [big, trunc_div(big, 3)]
        assert n_out.tolist() == [n, trunc_div(n, 7)]
        assert b_out.tolist() == [flag, not flag]
        assert f_out[0] == x32
        assert f_out[1] == x32 / np.float32(3)
        # bool (1 byte), int32, int64 (beyond 2^31), float32; signedness and integer division.
        assert sizes.tolist() == [1, 4, 8, 4, 1, 1, 1, 0]


# --- every dtype through a copy kernel ---------------------------------------------------------

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64"]


def numpy_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def random_data(rng, name, n):
    dt = numpy_dtype(name)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    if name == "complex64":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    a = (rng.standard_normal(n) * 100).astype(dt)
    a[:4] = np.array([np.inf, -np.inf, -0.0, np.nan]).astype(dt)
    return a


def same_bits(a, b):
    """Element-wise identical, NaNs and signed zeros included."""
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype == np.bool_:
        return np.array_equal(a, b)
    return np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.fixture(scope="module")
def copy_kernel():
    return kjit.metal_kernel(name="copy", input_names=["inp"], output_names=["out"], source="""
        uint i = thread_position_in_grid.x;
        out[i] = inp[i];
    """)


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_copy(copy_kernel, name, rng):
    n = 257
    a = random_data(rng, name, n)
    assert a.dtype == numpy_dtype(name)
    kjit_dtype = getattr(kjit, "bool_" if name == "bool" else name)
    for spelled in (kjit_dtype, numpy_dtype(name), name):
        (out,) = copy_kernel(inputs=[a], grid=(n, 1, 1), threadgroup=(64, 1, 1),
                             output_shapes=[(n,)], output_dtypes=[spelled])
        assert isinstance(out, np.ndarray)
        assert out.dtype == a.dtype, (spelled, out.dtype)
        assert same_bits(out, a)
    # Preallocated outputs: poisoned, then holding the complement of every element's bits, so
    # that an element left unwritten differs from the input in one of the two runs.
    if a.dtype == np.bool_:
        complement = ~a
    else:
        bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize // (
            2 if name == "complex64" else 1)]
        complement = (~a.view(bits)).view(a.dtype)
    for out in (poisoned((n,), a.dtype), complement.copy()):
        copy_kernel(inputs=[a], grid=(n, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(n,)],
                    output_dtypes=[kjit_dtype], outputs=[out])
        assert same_bits(out, a)


@pytest.mark.parametrize("name", DTYPES)
def test_init_value_every_dtype(copy_kernel, name, rng):
    """init_value converts like NumPy's astype: rounded for floats, truncated for integers."""
    dt = numpy_dtype(name)
    a = random_data(rng, name, 8)
    if name == "bool":
        values = [0.0, float(rng.uniform(0.1, 5))]
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
        values = [float(rng.integers(lo, hi)) + 0.75, float(rng.integers(0, hi)) + 0.25]
    else:
        values = [float(rng.standard_normal() * 100), -float(rng.uniform(0, 1e-3))]
    for v in values:
        # A grid with no threads: the outputs hold init_value and nothing else.
        (out,) = copy_kernel(inputs=[a], grid=(0, 1, 1), threadgroup=(64, 1, 1),
                             output_shapes=[(5, 3)], output_dtypes=[dt], init_value=v)
        assert out.dtype == dt and out.shape == (5, 3)
        assert same_bits(out, np.full((5, 3), np.array(v).astype(dt))), (v, out)


def test_init_value_out_of_an_outputs_range_is_an_error(copy_kernel):
    a = np.arange(8, dtype=np.float32)

    def fill(dtype, value):
        return copy_kernel(inputs=[a], grid=(0, 1, 1), threadgroup=(64, 1, 1),
                           output_shapes=[(4,)], output_dtypes=[dtype], init_value=value)[0]

    for dtype, value in [(np.int8, 300), (np.uint8, -1), (np.uint64, float(2**64)),
                         (np.int32, 1e10), (np.int32, float("nan")), (np.int16, float("-inf"))]:
        with pytest.raises(ValueError, match=r"init_value \(for outputs\[0\] \('out'\)\): "
                           r"\S+ is out of the range of " + np.dtype(dtype).name):
            fill(dtype, value)
    # Integers a double would round are refused before anything runs.
    for value in (2**53 + 1, np.int64(2**62 + 1), -(2**63) + 1):
        with pytest.raises(ValueError, match=r"init_value: -?\d+ is not exactly a double"):
            fill(np.int64, value)
    np.testing.assert_array_equal(fill(np.int64, -(2**63)), np.full(4, -(2**63), np.int64))
    np.testing.assert_array_equal(fill(np.uint64, 2**63), np.full(4, 2**63, np.uint64))
    np.testing.assert_array_equal(fill(np.uint8, 255.9), np.full(4, 255, np.uint8))


def test_dtype_names_and_sizes():
    for name in DTYPES:
        d = getattr(kjit, "bool_" if name == "bool" else name)
        assert d.itemsize == numpy_dtype(name).itemsize, name


# --- return types ----------------------------------------------------------------------------

def test_return_types(copy_kernel, rng):
    a = rng.standard_normal((6, 5)).astype(np.float32)
    kwargs = dict(grid=(a.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[a.shape],
                  output_dtypes=[np.float32])
    (out_np,) = copy_kernel(inputs=[a], **kwargs)
    assert type(out_np) is np.ndarray
    np.testing.assert_array_equal(out_np, a)

    ka = kjit.array(a)
    assert isinstance(ka, kjit.Array)
    assert tuple(ka.shape) == a.shape and ka.dtype == kjit.float32
    (out_k,) = copy_kernel(inputs=[ka], **kwargs)
    assert isinstance(out_k, kjit.Array)
    assert tuple(out_k.shape) == a.shape and out_k.dtype == kjit.float32
    # NumPy imports host memory only; a kjit.Array on a GPU converts through a copy.
    on_host = out_k.device == "cpu"
    for converted in (np.asarray(out_k), out_k.numpy()) + ((np.from_dlpack(out_k),) if on_host else ()):
        assert isinstance(converted, np.ndarray) and converted.dtype == np.float32
        np.testing.assert_array_equal(converted, a)

    # A kjit.Array output can be fed back in as an input.
    (again,) = copy_kernel(inputs=[out_k], **kwargs)
    assert isinstance(again, kjit.Array)
    np.testing.assert_array_equal(np.asarray(again), a)


def test_return_type_bfloat16_kjit_array(copy_kernel, rng):
    a = rng.standard_normal(40).astype(ml_dtypes.bfloat16)
    (out,) = copy_kernel(inputs=[kjit.array(a)], grid=(40, 1, 1), threadgroup=(32, 1, 1),
                         output_shapes=[(40,)], output_dtypes=[kjit.bfloat16])
    assert isinstance(out, kjit.Array) and out.dtype == kjit.bfloat16
    back = out.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back.view(np.uint16), a.view(np.uint16))


# --- verbose ------------------------------------------------------------------------------------

def test_verbose_prints_generated_source(capsys, rng):
    source = """
        uint i = thread_position_in_grid.x;
        // scale by seven
        out[i] = inp[i] * 7;
    """
    kernel = kjit.metal_kernel(name="verbose_probe", input_names=["inp"], output_names=["out"],
                               source=source)
    a = rng.standard_normal(10).astype(np.float32)
    (out,) = kernel(inputs=[a], grid=(10, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(10,)],
                    output_dtypes=[np.float32], verbose=True)
    printed = capsys.readouterr().out
    assert "Generated source code for `verbose_probe`" in printed
    for line in source.strip().splitlines():
        assert line.strip() in printed
    np.testing.assert_array_equal(out, a * np.float32(7))
    # Not verbose: nothing printed.
    kernel(inputs=[a], grid=(10, 1, 1), threadgroup=(16, 1, 1), output_shapes=[(10,)],
           output_dtypes=[np.float32])
    assert capsys.readouterr().out == ""


def test_verbose_without_a_stdout_prints_nowhere(monkeypatch, rng):
    # As print() does when sys.stdout is None (pythonw, a closed console).
    monkeypatch.setattr(sys, "stdout", None)
    kernel = kjit.metal_kernel(name="verbose_nowhere", input_names=["inp"], output_names=["out"],
                               source="uint i = thread_position_in_grid.x; out[i] = inp[i];")
    a = rng.standard_normal(4).astype(np.float32)
    (out,) = kernel(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                    output_dtypes=[np.float32], verbose=True)
    np.testing.assert_array_equal(out, a)


# --- half and bfloat arithmetic ---------------------------------------------------------------

HALF_SOURCE = """
    uint i = thread_position_in_grid.x;
    half x = inp[i];
    T t = x * 2;
    out_h[i] = t / 3;
    out_f[i] = (x + 1.0f) / 3;
    out_hh[i] = x * 2;
    if (i == 0) {
        sizes[0] = sizeof(x * 2);
        sizes[1] = sizeof(x + 1.0f);
        sizes[2] = sizeof(x + x);
        sizes[3] = sizeof(x * 2.0);
        sizes[4] = sizeof(bfloat(x) * 2);
        sizes[5] = sizeof(bfloat(x) + x);
    }
"""


def test_half_arithmetic_follows_metal_promotion(rng):
    kernel = kjit.metal_kernel(name="half_promotion", input_names=["inp"],
                               output_names=["out_h", "out_f", "out_hh", "sizes"],
                               source=HALF_SOURCE)
    n = 2000
    a = (rng.standard_normal(n) * 30).astype(np.float16)
    outs = [poisoned((n,), np.float32), poisoned((n,), np.float32), poisoned((n,), np.float16),
            poisoned((6,), np.int32)]
    kernel(inputs=[a], template=[("T", kjit.float16)], grid=(n, 1, 1), threadgroup=(128, 1, 1),
           output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
           outputs=outs)
    out_h, out_f, out_hh, sizes = outs
    # half * int -> half, half / int -> half: each result rounded to float16.
    f32 = a.astype(np.float32)
    doubled = (f32 * 2).astype(np.float16)
    ref_h = (doubled.astype(np.float32) / np.float32(3)).astype(np.float16)
    np.testing.assert_array_equal(out_hh, doubled)
    np.testing.assert_array_equal(out_h, ref_h.astype(np.float32))
    exact = a.astype(np.float64) * 2 / 3
    assert np.all(np.abs(out_h - exact) <= np.spacing(ref_h).astype(np.float64) / 2 * 1.001)
    # half + float -> float: NumPy float32 arithmetic.
    ref_f = (a.astype(np.float32) + np.float32(1)) / np.float32(3)
    np.testing.assert_array_equal(out_f, ref_f)
    # The two precisions really differ on this data.
    assert np.mean(out_h != (a.astype(np.float32) * 2 / 3)) > 0.5
    assert np.mean(out_f != ((a + np.float16(1)) / np.float16(3)).astype(np.float32)) > 0.5
    # 2.0 is a float literal in Metal, so half * 2.0 is a float; bfloat op half is a float.
    assert sizes.tolist() == [2, 4, 2, 4, 2, 4]


# --- Metal math against NumPy in float64 ----------------------------------------------------

MATH_FUNCTIONS = [
    # name, expression, reference, tolerance in float32 ulp (0.501: correctly rounded, give or
    # take the float64 reference's own rounding)
    ("exp", "metal::exp(e[i])", lambda e, p, s, t, u: np.exp(e), 2.0),
    ("fast_exp", "metal::fast::exp(e[i])", lambda e, p, s, t, u: np.exp(e), 2.0),
    ("precise_exp", "metal::precise::exp(e[i])", lambda e, p, s, t, u: np.exp(e), 2.0),
    ("exp2", "exp2(e[i])", lambda e, p, s, t, u: np.exp2(e), 1.0),
    ("log", "log(p[i])", lambda e, p, s, t, u: np.log(p), 1.0),
    ("log2", "metal::log2(p[i])", lambda e, p, s, t, u: np.log2(p), 1.0),
    ("sqrt", "sqrt(p[i])", lambda e, p, s, t, u: np.sqrt(p), 0.501),
    ("rsqrt", "rsqrt(p[i])", lambda e, p, s, t, u: 1 / np.sqrt(p), 1.5),
    ("tanh", "tanh(s[i])", lambda e, p, s, t, u: np.tanh(s), 3.0),
    ("sin", "sin(s[i])", lambda e, p, s, t, u: np.sin(s), 2.0),
    ("cos", "metal::cos(s[i])", lambda e, p, s, t, u: np.cos(s), 2.0),
    ("fabs", "fabs(s[i])", lambda e, p, s, t, u: np.abs(s), 0.0),
    ("floor", "floor(s[i])", lambda e, p, s, t, u: np.floor(s), 0.0),
    ("ceil", "ceil(s[i])", lambda e, p, s, t, u: np.ceil(s), 0.0),
    # Metal's round: halfway cases away from zero.
    ("round", "round(s[i])", lambda e, p, s, t, u: np.sign(s) * np.floor(np.abs(s) + 0.5), 0.0),
    ("fmax", "fmax(s[i], t[i])", lambda e, p, s, t, u: np.fmax(s, t), 0.0),
    ("fmin", "fmin(s[i], t[i])", lambda e, p, s, t, u: np.fmin(s, t), 0.0),
    ("max", "max(s[i], t[i])", lambda e, p, s, t, u: np.fmax(s, t), 0.0),
    ("min", "metal::min(s[i], t[i])", lambda e, p, s, t, u: np.fmin(s, t), 0.0),
    ("clamp", "clamp(s[i], -1.5f, 2.25f)", lambda e, p, s, t, u: np.clip(s, -1.5, 2.25), 0.0),
    ("fma", "fma(s[i], u[i], p[i])", lambda e, p, s, t, u: s * u + p, 0.501),
    ("abs", "abs(s[i])", lambda e, p, s, t, u: np.abs(s), 0.0),
]

MATH_SOURCE = "uint i = thread_position_in_grid.x;\n" + "\n".join(
    f"o_{name}[i] = {expr};" for name, expr, _, _ in MATH_FUNCTIONS)


@pytest.fixture(scope="module")
def math_kernel():
    return kjit.metal_kernel(name="math_suite", input_names=["e", "p", "s", "t", "u"],
                             output_names=[f"o_{name}" for name, _, _, _ in MATH_FUNCTIONS],
                             source=MATH_SOURCE)


def run_math(math_kernel, e, p, s, t, u):
    n = e.size
    outs = [poisoned((n,), np.float32) for _ in MATH_FUNCTIONS]
    math_kernel(inputs=[e, p, s, t, u], grid=(n, 1, 1), threadgroup=(256, 1, 1),
                output_shapes=[(n,)] * len(outs), output_dtypes=[np.float32] * len(outs),
                outputs=outs)
    return dict(zip((name for name, _, _, _ in MATH_FUNCTIONS), outs))


def test_metal_math_against_float64(math_kernel, rng):
    n = 100_000
    e = rng.uniform(-87, 88, n).astype(np.float32)
    p = np.exp(rng.uniform(-20, 20, n)).astype(np.float32)
    s = rng.uniform(-20, 20, n).astype(np.float32)
    s[:200] = np.round(s[:200]) + 0.5  # halfway cases for round
    s[200:210] = -0.0
    t = rng.uniform(-20, 20, n).astype(np.float32)
    t[::97] = np.nan  # fmax/fmin/max/min return the other operand
    u = rng.standard_normal(n).astype(np.float32)
    outs = run_math(math_kernel, e, p, s, t, u)
    args = [x.astype(np.float64) for x in (e, p, s, t, u)]
    for name, _, ref_fn, tol in MATH_FUNCTIONS:
        ref = ref_fn(*args)
        out = outs[name]
        assert not np.any(np.isnan(out) & ~np.isnan(ref)), name
        assert np.array_equal(np.isnan(out), np.isnan(ref)), name
        ok = ~np.isnan(ref)
        err = ulp_error(out[ok], ref[ok])
        assert err.max() <= tol, (name, float(err.max()), out[ok][err.argmax()],
                                  ref[ok][err.argmax()])
    # exp of values in [-87, 88] within 2 ulp, as a relative error.
    exp_ref = np.exp(args[0])
    rel = np.abs(outs["exp"].astype(np.float64) - exp_ref) / exp_ref
    assert rel.max() <= 2.5e-7, float(rel.max())
    # Signed zeros and exact halfway rounding.
    assert np.all(np.signbit(outs["fabs"][200:210]) == 0)
    np.testing.assert_array_equal(outs["round"][:200],
                                  np.sign(s[:200]) * np.floor(np.abs(s[:200]) + np.float32(0.5)))


EXP_EDGES = [
    (np.inf, np.inf),
    (-np.inf, 0.0),
    (np.nan, np.nan),
    (88.7, None),    # finite, near the largest float
    (88.72, None),
    (89.0, np.inf),
    (100.0, np.inf),
    (-87.0, None),
    (-88.0, None),   # subnormal results from here on
    (-90.0, None),
    (-95.5, None),
    (-100.0, None),
    (-103.9, None),
    (-110.0, 0.0),
    (-1000.0, 0.0),
    (0.0, 1.0),
    (-0.0, 1.0),
    (1e-30, 1.0),
]


def test_exp_edge_cases(math_kernel, rng):
    x = np.array([v for v, _ in EXP_EDGES], dtype=np.float32)
    n = x.size
    filler = [rng.uniform(1, 2, n).astype(np.float32) for _ in range(4)]
    outs = run_math(math_kernel, x, *filler)
    ref = np.exp(x.astype(np.float64))
    for name in ("exp", "precise_exp", "fast_exp"):
        out = outs[name]
        for k, (v, expected) in enumerate(EXP_EDGES):
            if expected is not None:
                if np.isnan(expected):
                    assert np.isnan(out[k]), (name, v)
                else:
                    assert out[k] == expected, (name, v, out[k])
            else:
                assert np.isfinite(out[k]) and out[k] > 0, (name, v, out[k])
                if ref[k] < 2.0 ** -126:
                    # Subnormal: within one unit of the smallest subnormal.
                    assert abs(float(out[k]) - ref[k]) <= 2.0 ** -149, (name, v, out[k], ref[k])
                else:
                    assert ulp_error(out[k], ref[k]) <= 2, (name, v, out[k], ref[k])
    assert 0 < outs["exp"][x.tolist().index(np.float32(-103.9))] < 2.0 ** -126


MAD_SOURCE = {
    "metal": "uint i = thread_position_in_grid.x;\nout[i] = a[i] * b[i] + c[i];",
    "cuda": "unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\nout[i] = a[i] * b[i] + c[i];",
}


@pytest.mark.parametrize("options", [None, {"math_mode": "safe"}])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_safe_math_rounds_every_operation(dialect, options, rng):
    """In the default (safe, IEEE) math mode a * b + c is a product rounded to float, then a sum
    rounded to float: never contracted into one fused multiply-add, which rounds once (the
    relaxed and fast modes allow that)."""
    kernel = make_kernel(dialect, name="mad", input_names=["a", "b", "c"], output_names=["out"],
                         source=MAD_SOURCE[dialect], compile_options=options)
    n = 20_000
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    out = poisoned((n,), np.float32)
    kernel(inputs=[a, b, c], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(n,)],
           output_dtypes=[np.float32], outputs=[out])
    separate = a * b + c
    fused = (a.astype(np.float64) * b + c).astype(np.float32)
    assert np.sum(separate != fused) > 100  # the data tells the two apart
    mismatched = int(np.sum(out != separate))
    assert mismatched == 0, f"{mismatched} of {n} results are rounded once, as by an FMA"


# --- CUDA math names on the CPU ---------------------------------------------------------------

CUDA_MATH_SOURCE = """
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    o_exp[i] = expf(s[i]);
    o_fexp[i] = __expf(s[i]);
    o_sqrt[i] = sqrtf(p[i]);
    o_rsqrt[i] = rsqrtf(p[i]);
    o_fmax[i] = fmaxf(s[i], t[i]);
    o_fminf[i] = fminf(s[i], t[i]);
    o_h2f[i] = __half2float(h[i]) * 2.0f;
    o_f2h[i] = __float2half(s[i]);
    o_logf[i] = logf(p[i]);
"""


def test_cuda_math_names(rng):
    names = ["o_exp", "o_fexp", "o_sqrt", "o_rsqrt", "o_fmax", "o_fminf", "o_h2f", "o_f2h",
             "o_logf"]
    kernel = kjit.cuda_kernel(name="cuda_math", input_names=["s", "t", "p", "h"],
                              output_names=names, source=CUDA_MATH_SOURCE)
    n = 3000
    s = rng.uniform(-30, 30, n).astype(np.float32)
    t = rng.uniform(-30, 30, n).astype(np.float32)
    t[::31] = np.nan
    p = np.exp(rng.uniform(-10, 10, n)).astype(np.float32)
    h = (rng.standard_normal(n) * 10).astype(np.float16)
    dtypes = [np.float32] * 7 + [np.float16, np.float32]
    outs = [poisoned((n,), d) for d in dtypes]
    kernel(inputs=[s, t, p, h], grid=(n, 1, 1), threadgroup=(128, 1, 1),
           output_shapes=[(n,)] * len(names), output_dtypes=dtypes, outputs=outs)
    o = dict(zip(names, outs))
    s64, p64 = s.astype(np.float64), p.astype(np.float64)
    assert ulp_error(o["o_exp"], np.exp(s64)).max() <= 1
    assert ulp_error(o["o_fexp"], np.exp(s64)).max() <= 2
    assert ulp_error(o["o_sqrt"], np.sqrt(p64)).max() <= 0.501
    assert ulp_error(o["o_rsqrt"], 1 / np.sqrt(p64)).max() <= 1.5
    assert ulp_error(o["o_logf"], np.log(p64)).max() <= 1
    np.testing.assert_array_equal(o["o_fmax"], np.fmax(s, t))
    np.testing.assert_array_equal(o["o_fminf"], np.fmin(s, t))
    np.testing.assert_array_equal(o["o_h2f"], h.astype(np.float32) * 2)
    # __float2half rounds to nearest even, as NumPy's float16 conversion does.
    np.testing.assert_array_equal(o["o_f2h"], s.astype(np.float16))


def test_cuda_half_and_bfloat_inputs(rng):
    kernel = kjit.cuda_kernel(name="cuda_low_float", input_names=["h", "b"],
                              output_names=["oh", "ob", "of"], source="""
        auto i = cooperative_groups::this_grid().thread_rank();
        float hf = __half2float(h[i]);
        float bf = __bfloat162float(b[i]);
        oh[i] = __float2half(hf * 3.0f);
        ob[i] = __float2bfloat16(bf * 3.0f);
        of[i] = hf + bf;
    """)
    n = 500
    h = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    outs = [poisoned((n,), np.float16), poisoned((n,), ml_dtypes.bfloat16),
            poisoned((n,), np.float32)]
    kernel(inputs=[h, b], grid=(n, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(n,)] * 3,
           output_dtypes=[np.float16, kjit.bfloat16, np.float32], outputs=outs)
    oh, ob, of = outs
    np.testing.assert_array_equal(oh, (h.astype(np.float32) * np.float32(3)).astype(np.float16))
    np.testing.assert_array_equal(
        ob.view(np.uint16),
        (b.astype(np.float32) * np.float32(3)).astype(ml_dtypes.bfloat16).view(np.uint16))
    np.testing.assert_array_equal(of, h.astype(np.float32) + b.astype(np.float32))


# --- float vectors in the Metal dialect -------------------------------------------------------

VECTOR_SOURCE = """
    uint i = thread_position_in_grid.x;
    float4 v = ((const device float4*)a)[i];
    float4 w = ((const device float4*)b)[i];
    float4 r = v * w + 2.0f;
    r = r - v / 4;
    ((device float4*)comp)[i] = r;
    dots[i] = dot(v, w);
    float3 v3 = ((const device float3*)a)[i];
    float3 w3 = float3(w.x, w.y, w.z);
    dots3[i] = dot(v3, w3);
    lens[i] = length(v);
    maxes[i] = max(max(v.x, v.y), max(v.z, v.w));
    if (i == 0) {
        sizes[0] = sizeof(float2);
        sizes[1] = sizeof(float3);
        sizes[2] = sizeof(float4);
        sizes[3] = sizeof(half4);
        sizes[4] = alignof(float3);
        sizes[5] = sizeof(int3);
    }
"""


def test_float_vectors(rng):
    kernel = kjit.metal_kernel(name="vectors", input_names=["a", "b"],
                               output_names=["comp", "dots", "dots3", "lens", "maxes", "sizes"],
                               source=VECTOR_SOURCE)
    n = 333
    a = rng.standard_normal((n, 4)).astype(np.float32)
    b = rng.standard_normal((n, 4)).astype(np.float32)
    outs = [poisoned((n, 4), np.float32), poisoned((n,), np.float32),
            poisoned((n,), np.float32), poisoned((n,), np.float32), poisoned((n,), np.float32),
            poisoned((6,), np.int32)]
    kernel(inputs=[a, b], grid=(n, 1, 1), threadgroup=(64, 1, 1),
           output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
           outputs=outs)
    comp, dots, dots3, lens, maxes, sizes = outs
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(comp, a64 * b64 + 2 - a64 / 4, rtol=1e-6, atol=1e-6)
    scale = np.abs(a64 * b64).sum(axis=1)
    assert np.all(np.abs(dots - (a64 * b64).sum(axis=1)) <= 4e-7 * scale + 1e-30)
    # float3 is 16 bytes: element i of a float3 pointer starts at float 4*i.
    scale3 = np.abs(a64[:, :3] * b64[:, :3]).sum(axis=1)
    assert np.all(np.abs(dots3 - (a64[:, :3] * b64[:, :3]).sum(axis=1)) <= 4e-7 * scale3 + 1e-30)
    np.testing.assert_allclose(lens, np.linalg.norm(a64, axis=1), rtol=5e-7)
    np.testing.assert_array_equal(maxes, a.max(axis=1))
    assert sizes.tolist() == [8, 16, 16, 8, 16, 16]


VECTOR_OPERATIONS = """
    const uint i = thread_position_in_grid.x;
    const float4 v = float4(a[i * 4], a[i * 4 + 1], a[i * 4 + 2], a[i * 4 + 3]);
    const float4 w = float4(b[i * 4], b[i * 4 + 1], b[i * 4 + 2], b[i * 4 + 3]);
    const bool4 above = v > 0.25f;             // vector against scalar
    const bool4 below = 0.25f > v;
    const float4 picked = select(w, v, above);  // v where above, else w
    float4 math = fma(v, w, float4(1.0f)) + pow(abs(v), 2.0f) + fmod(w, 0.75f) +
                  tan(v * 0.5f) + trunc(w * 3.0f) + fract(w) + sign(v) + step(0.0f, w);
    float4 counted = v;
    counted++;
    ++counted;
    const uint4 bits = ~uint4(i, i + 1, i + 2, i + 3);
    const float4 built = float4(v.xy, 1.0f, 2.0f) + float4(1.0f, w.xy, 2.0f) +
                         float4(3.0f, 4.0f, v.zw);
    for (int k = 0; k < 4; ++k) {
        out[i * 24 + k] = picked[k];
        out[i * 24 + 4 + k] = math[k];
        out[i * 24 + 8 + k] = counted[k];
        out[i * 24 + 12 + k] = float(bits[k] & 0xffffu);
        out[i * 24 + 16 + k] = built[k];
        out[i * 24 + 20 + k] = float(below[k]) + 2.0f * float((!above)[k]) +
                               4.0f * float(isnan(v / w)[k]);
    }
"""


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_vector_operations_element_by_element(device, rng):
    kernel = kjit.metal_kernel(name="vector_operations", input_names=["a", "b"],
                               output_names=["out"], source=VECTOR_OPERATIONS)
    n = 100
    a = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    a[0, 0], b[0, 0] = 0.0, 0.0  # 0 / 0: a NaN
    (out,) = kernel(inputs=[a, b], output_shapes=[(n, 24)], output_dtypes=[np.float32],
                    grid=(n, 1, 1), threadgroup=(32, 1, 1), device=device,
                    outputs=[poisoned((n, 24), np.float32)])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(out[:, 0:4], np.where(a > 0.25, a, b))
    math = (a64 * b64 + 1 + np.abs(a64) ** 2 + np.fmod(b64, 0.75) + np.tan(a64 * 0.5) +
            np.trunc(b64 * 3) + (b64 - np.floor(b64)) + np.sign(a64) + (b64 >= 0))
    np.testing.assert_allclose(out[:, 4:8], math, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(out[:, 8:12], a64 + 2, rtol=1e-6, atol=1e-7)
    i = np.arange(n)[:, None] + np.arange(4)
    np.testing.assert_array_equal(out[:, 12:16], (~i.astype(np.uint32)) & 0xffff)
    built = (np.stack([a64[:, 0], a64[:, 1], np.ones(n), np.full(n, 2.0)], 1) +
             np.stack([np.ones(n), b64[:, 0], b64[:, 1], np.full(n, 2.0)], 1) +
             np.stack([np.full(n, 3.0), np.full(n, 4.0), a64[:, 2], a64[:, 3]], 1))
    np.testing.assert_allclose(out[:, 16:20], built, rtol=1e-6, atol=1e-6)
    with np.errstate(invalid="ignore", divide="ignore"):
        flags = (0.25 > a) + 2.0 * ~(a > 0.25) + 4.0 * np.isnan(a / b)
    np.testing.assert_array_equal(out[:, 20:24], flags)


# --- elem_to_loc on broadcast inputs ----------------------------------------------------------

BROADCAST_SOURCE = {
    "metal": """
        uint elem = thread_position_in_grid.x;
        int64_t loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        out[elem] = inp[loc] * 3;
        locs[elem] = loc;
        if (elem < uint(inp_ndim)) {
            st[elem] = inp_strides[elem];
        }
    """,
    "cuda": """
        auto elem = cooperative_groups::this_grid().thread_rank();
        auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
        out[elem] = inp[loc] * 3;
        locs[elem] = loc;
        if (elem < inp_ndim) {
            st[elem] = inp_strides[elem];
        }
    """,
}


def writable_broadcast(base, shape):
    """np.broadcast_to's view (stride 0 along broadcast dimensions), left writable."""
    ro = np.broadcast_to(base, shape)
    return np.lib.stride_tricks.as_strided(base, shape=ro.shape, strides=ro.strides,
                                           writeable=True)


@pytest.mark.parametrize(
    "base_shape,shape",
    [((1, 5), (4, 5)), ((4, 1), (4, 5)), ((3, 1, 5), (3, 4, 5)), ((1,), (37,)),
     ((2, 1, 1, 3), (2, 3, 4, 3))],
)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_elem_to_loc_broadcast(dialect, base_shape, shape, rng):
    kernel = make_kernel(dialect, name="broadcast", input_names=["inp"],
                         output_names=["out", "locs", "st"], source=BROADCAST_SOURCE[dialect],
                         ensure_row_contiguous=False)
    base = rng.standard_normal(base_shape).astype(np.float32)
    inp = writable_broadcast(base, shape)
    np.testing.assert_array_equal(inp, np.broadcast_to(base, shape))
    size = math.prod(shape)
    outs = [poisoned(shape, np.float32), poisoned(shape, np.int64),
            poisoned((len(shape),), np.int64)]
    kernel(inputs=[inp], grid=(size, 1, 1), threadgroup=(16, 1, 1),
           output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
           outputs=outs)
    out, locs, st = outs
    strides = np.array(inp.strides) // inp.itemsize
    np.testing.assert_array_equal(st, strides)
    assert 0 in st.tolist()
    expected_locs = np.stack(np.indices(shape), axis=-1) @ strides
    np.testing.assert_array_equal(locs, expected_locs)
    np.testing.assert_array_equal(out, inp * np.float32(3))


# --- read-only inputs ------------------------------------------------------------------------

def read_only_input(rng, kind):
    base = rng.standard_normal((3, 1, 5)).astype(np.float32)
    if kind == "broadcast_to":
        return np.broadcast_to(base, (3, 4, 5))
    a = np.ascontiguousarray(np.broadcast_to(base, (3, 4, 5)))
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("kind", ["broadcast_to", "read_only_contiguous"])
@pytest.mark.parametrize("contig", [False, True])
def test_read_only_inputs(kind, contig, rng):
    """Inputs are only read: NumPy's read-only arrays, such as np.broadcast_to's views, are
    accepted like any other."""
    kernel = kjit.metal_kernel(name="broadcast", input_names=["inp"],
                               output_names=["out", "locs", "st"],
                               source=BROADCAST_SOURCE["metal"], ensure_row_contiguous=contig)
    inp = read_only_input(rng, kind)
    assert not inp.flags.writeable
    outs = [poisoned(inp.shape, np.float32), poisoned(inp.shape, np.int64),
            poisoned((3,), np.int64)]
    kernel(inputs=[inp], grid=(inp.size, 1, 1), threadgroup=(16, 1, 1),
           output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
           outputs=outs)
    np.testing.assert_array_equal(outs[0], inp * np.float32(3))
    seen = inp.strides if not contig else np.ascontiguousarray(inp).strides
    np.testing.assert_array_equal(outs[2], np.array(seen) // inp.itemsize)
    ka = kjit.array(inp)
    np.testing.assert_array_equal(np.asarray(ka), inp)
