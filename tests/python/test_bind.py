"""Bound kernels (Kernel.bind): a call's settings fixed and checked once, then calls that pass
only arrays, with the same results, errors and output types as the keyword call."""

import gc
import threading
import weakref

import numpy as np
import pytest

import kjit
from conftest import DEVICES, exp_kernel, needs_gpu, poisoned

AXPY = """
    uint i = thread_position_in_grid.x;
    out[i] = T(alpha) * x[i] + y[i];
"""


def axpy_kernel():
    return kjit.metal_kernel(name="bound_axpy", input_names=["alpha", "x", "y"],
                             output_names=["out"], source=AXPY)


def unwrapped(kernel):
    """The kjit.Kernel itself, which the test suite wraps to compile each call for the GPU too."""
    return getattr(kernel, "_kernel", kernel)


def bind_axpy(n, device, dtype=np.float32, **kw):
    return axpy_kernel().bind(output_shapes=[(n,)], output_dtypes=[dtype], grid=(n, 1, 1),
                              threadgroup=(128, 1, 1), template=[("T", dtype)], device=device,
                              **kw)


def bound_kernel_call(alpha, x, y):
    """The keyword call bind_axpy's kernel stands for."""
    n = x.shape[0]
    return axpy_kernel()(inputs=[alpha, x, y], output_shapes=[(n,)], output_dtypes=[np.float32],
                         grid=(n, 1, 1), threadgroup=(128, 1, 1), template=[("T", np.float32)])


def axpy_data(n, rng):
    """alpha, x and y for a call on n elements: fresh random float32."""
    return (np.float32(rng.uniform(-2, 2)),
            *(rng.standard_normal(n).astype(np.float32) for _ in range(2)))


def axpy_reference(alpha, x, y):
    return alpha * x.astype(np.float64) + y.astype(np.float64)


@pytest.mark.parametrize("device", DEVICES)
def test_bound_calls_match_the_reference(device, rng):
    n = 1000  # groups of 128: the last one partial
    bound = bind_axpy(n, device)
    for _ in range(3):  # the same bound kernel, fresh data each call
        alpha, x, y = axpy_data(n, rng)
        result = bound(alpha, x, y)
        assert isinstance(result, list) and len(result) == 1
        assert isinstance(result[0], np.ndarray) and result[0].dtype == np.float32
        np.testing.assert_allclose(result[0], axpy_reference(alpha, x, y), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_bound_calls_write_given_outputs(device, rng):
    n = 777
    bound = bind_axpy(n, device)
    alpha, x, y = axpy_data(n, rng)
    out = poisoned((n,), np.float32)
    result = bound(alpha, x, y, out)
    assert len(result) == 1 and result[0] is out
    np.testing.assert_allclose(out, axpy_reference(alpha, x, y), rtol=1e-6, atol=1e-6)


def test_bound_calls_take_each_calls_dtypes_and_ndims(rng):
    twice = kjit.metal_kernel(name="bound_twice", input_names=["a"], output_names=["out"],
                              source="uint i = thread_position_in_grid.x; "
                                     "out[i] = 2.0f * float(a[i]);")
    bound = twice.bind(output_shapes=[(12,)], output_dtypes=[np.float32], grid=(12, 1, 1),
                       threadgroup=(4, 1, 1))
    for a in (rng.integers(-50, 50, 12, dtype=np.int32),
              rng.standard_normal(12),  # float64
              rng.standard_normal((3, 4)).astype(np.float16)):  # 2-D, row-contiguous
        (out,) = bound(a)
        np.testing.assert_allclose(out, 2.0 * a.astype(np.float32).ravel(), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_bound_init_value_and_template(device, rng):
    evens = kjit.metal_kernel(
        name="bound_evens", input_names=["a"], output_names=["out"],
        source="uint i = thread_position_in_grid.x; if (i % 2 == 0) out[i] = a[i] * SCALE;")
    n = 301
    bound = evens.bind(output_shapes=[(n,)], output_dtypes=[np.float32], grid=(n, 1, 1),
                       threadgroup=(64, 1, 1), template=[("SCALE", 3)], init_value=-3.5,
                       device=device)
    a = rng.standard_normal(n).astype(np.float32)
    for out in (bound(a)[0], bound(a, poisoned((n,), np.float32))[0]):
        np.testing.assert_allclose(out[::2], 3.0 * a[::2].astype(np.float64), rtol=1e-6)
        assert np.all(out[1::2] == -3.5)


@pytest.mark.parametrize("device", DEVICES)
def test_bound_calls_check_each_calls_arrays_after_ones_that_passed(device, rng):
    n = 64
    bound = bind_axpy(n, device)
    alpha, x, y = axpy_data(n, rng)
    for _ in range(2):
        out = poisoned((n,), np.float32)
        bound(alpha, x, y, out)
        np.testing.assert_allclose(out, axpy_reference(alpha, x, y), rtol=1e-6, atol=1e-6)
        # Outputs laid out otherwise, after calls that passed: refused as in a first call.
        read_only = np.zeros(n, np.float32)
        read_only.flags.writeable = False
        for bad, words in [(np.zeros(2 * n, np.float32)[::2], "row-contiguous"),
                           (read_only, "read-only"), (np.zeros(n, np.float64), "dtype float64"),
                           (np.zeros(n + 1, np.float32), "does not have the shape")]:
            with pytest.raises(ValueError, match=words):
                bound(alpha, x, y, bad)
        # Inputs laid out otherwise run as a first call would: strided ones copied, another
        # dtype compiled for, a longer one read where the grid reads.
        wide = rng.standard_normal(3 * n)
        for xs in (wide.astype(np.float32)[::3], wide[:n], wide.astype(np.float32)):
            (got,) = bound(alpha, xs, y)
            np.testing.assert_allclose(got, axpy_reference(alpha, xs[:n], y), rtol=1e-6,
                                       atol=1e-6)


def test_bound_verbose_prints_the_source(capsys, rng):
    bound = bind_axpy(8, "cpu", verbose=True)
    bound(np.float32(1), rng.standard_normal(8).astype(np.float32),
          rng.standard_normal(8).astype(np.float32))
    printed = capsys.readouterr().out
    assert "Generated source code for `bound_axpy`" in printed and "T(alpha)" in printed


def test_bound_calls_from_many_threads(rng):
    n = 4096
    bound = bind_axpy(n, "cpu")
    cases = [(np.float32(rng.uniform(-2, 2)), rng.standard_normal(n).astype(np.float32),
              rng.standard_normal(n).astype(np.float32)) for _ in range(8)]
    results = [None] * len(cases)

    def work(k):
        for _ in range(20):
            results[k] = bound(*cases[k])[0]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (alpha, x, y), out in zip(cases, results):
        np.testing.assert_allclose(out, axpy_reference(alpha, x, y), rtol=1e-6, atol=1e-6)


@pytest.mark.usefixtures("real_factories")  # the suite's kernels wrap what they make
def test_bind_gives_a_bound_kernel():
    k = kjit.metal_kernel(name="bound_axpy", input_names=["alpha", "x", "y"],
                          output_names=["out"], source=AXPY)
    bound = k.bind(output_shapes=[(8,)], output_dtypes=[np.float32], grid=(8, 1, 1),
                   threadgroup=(8, 1, 1), template=[("T", np.float32)])
    assert type(bound) is kjit.BoundKernel
    (out,) = bound(np.float32(2), np.arange(8, dtype=np.float32), np.ones(8, np.float32))
    np.testing.assert_array_equal(out, 2 * np.arange(8) + 1)


# --- bad input ------------------------------------------------------------------------------

def test_bind_checks_its_settings():
    k = axpy_kernel()
    good = dict(output_shapes=[(8,)], output_dtypes=[np.float32], grid=(8, 1, 1),
                threadgroup=(8, 1, 1), template=[("T", np.float32)])
    for change, error, words in [
        (dict(grid=(8, 1)), ValueError, "grid: expected 3 sizes"),
        (dict(threadgroup=(0, 1, 1)), ValueError, "threadgroup: each size must be in [1, 1024]"),
        (dict(output_shapes=[(8,), (8,)]), ValueError, "output_shapes: expected 1 (out), got 2"),
        (dict(output_dtypes=["float33"]), TypeError, "output_dtypes[0]"),
        (dict(template=[("x", 1)]), ValueError, "'x' is also the name of an input or output"),
        (dict(init_value="zero"), TypeError, "init_value"),
        (dict(stream="s"), TypeError, "stream"),
        (dict(device="gpu"), ValueError, "device"),
        (dict(verbose=1), TypeError, "verbose"),
    ]:
        with pytest.raises(error) as e:
            k.bind(**{**good, **change})
        assert words in str(e.value) and "kernel 'bound_axpy'" in str(e.value), str(e.value)
    # The first bad argument, in the order of the parameters, is the one reported.
    with pytest.raises(TypeError, match="output_shapes"):
        k.bind(**{**good, "output_shapes": 5, "verbose": 1, "stream": "s"})
    with pytest.raises(TypeError, match="verbose"):
        k.bind(**{**good, "verbose": 1, "stream": "s"})
    # Arguments that are not bind's are named, as Python names them.
    with pytest.raises(TypeError, match=r"^kjit\.Kernel\.bind\(\) got an unexpected keyword "
                                        r"argument 'outputs'$"):
        k.bind(**good, outputs=[np.zeros(8, np.float32)])
    with pytest.raises(TypeError, match=r"^kjit\.Kernel\.bind\(\) missing keyword argument "
                                        r"'grid'$"):
        k.bind(output_shapes=[(8,)], output_dtypes=[np.float32], threadgroup=(8, 1, 1))
    with pytest.raises(TypeError, match=r"^kjit\.Kernel\.bind\(\) takes keyword arguments only"):
        unwrapped(k).bind([(8,)], **{key: v for key, v in good.items() if key != "output_shapes"})


def test_build_and_call_name_arguments_that_are_not_theirs():
    k = axpy_kernel()
    with pytest.raises(TypeError, match=r"^kjit\.Kernel\.build\(\) missing keyword argument "
                                        r"'output_dtypes'$"):
        k.build(inputs=[(np.float32, 0)] * 3)
    with pytest.raises(TypeError, match=r"^kjit\.Kernel\.build\(\) got an unexpected keyword "
                                        r"argument 'device'$"):
        k.build(inputs=[(np.float32, 0)] * 3, output_dtypes=[np.float32], device="cpu")
    with pytest.raises(TypeError, match=r"^kjit\.Kernel\.build\(\) takes keyword arguments only"):
        unwrapped(k).build([(np.float32, 0)] * 3, [np.float32])
    with pytest.raises(TypeError, match=r"^kjit\.Kernel\.__call__\(\) missing keyword argument "
                                        r"'output_shapes'$"):
        k(inputs=[])
    with pytest.raises(TypeError, match=r"^kjit\.Kernel\.__call__\(\) got an unexpected keyword "
                                        r"argument 'input'$"):
        k(input=[])
    # A keyword with no UTF-8 form is written with escapes.
    with pytest.raises(TypeError, match=r"^kjit\.Kernel\.bind\(\) got an unexpected keyword "
                                        r"argument '\\ud800'$"):
        k.bind(**{"\ud800": 1})


def test_bound_calls_check_their_arrays(rng):
    bound = bind_axpy(8, "cpu")
    alpha, x, y = np.float32(2), np.ones(8, np.float32), np.ones(8, np.float32)
    for args in [(alpha, x), (alpha, x, y, np.zeros(8, np.float32), np.zeros(8, np.float32)), ()]:
        with pytest.raises(TypeError) as e:
            bound(*args)
        message = str(e.value)
        assert "3 input(s) (alpha, x, y)" in message and "1 output(s) (out)" in message
        assert f"got {len(args)}" in message
    with pytest.raises(TypeError, match="positional arguments only"):
        bound(alpha, x, y, out=np.zeros(8, np.float32))
    with pytest.raises(TypeError, match=r"inputs\[2\] \('y'\)"):
        bound(alpha, x, "not an array")
    with pytest.raises(ValueError, match=r"outputs\[0\] \('out'\) does not have the shape"):
        bound(alpha, x, y, np.zeros(9, np.float32))
    with pytest.raises(ValueError, match=r"outputs\[0\] \('out'\) has dtype float64"):
        bound(alpha, x, y, np.zeros(8, np.float64))
    with pytest.raises(TypeError, match="use Kernel.bind"):
        kjit.BoundKernel.__new__(kjit.BoundKernel)


@pytest.mark.usefixtures("real_factories")  # the suite's kernels keep bind's arguments
def test_a_bound_kernel_keeps_its_stream_object():
    # A CuPy stream destroys its handle when it goes: the bound kernel holds the object.
    class Stream:
        cuda_stream = 0  # the legacy stream's handle

    k = kjit.metal_kernel(name="bound_axpy", input_names=["alpha", "x", "y"],
                          output_names=["out"], source=AXPY)
    stream = Stream()
    alive = weakref.ref(stream)
    bound = k.bind(output_shapes=[(8,)], output_dtypes=[np.float32], grid=(8, 1, 1),
                   threadgroup=(8, 1, 1), template=[("T", np.float32)], stream=stream)
    del stream
    gc.collect()
    assert alive() is not None
    # Explicit __call__ refuses keywords as the call does.
    with pytest.raises(TypeError, match="positional arguments only"):
        bound.__call__(np.float32(1), np.ones(8, np.float32), y=np.ones(8, np.float32))
    del bound
    gc.collect()
    assert alive() is None
    # A stream object that refers back to its bound kernel: the collector frees the pair.
    stream = Stream()
    stream.bound = k.bind(output_shapes=[(8,)], output_dtypes=[np.float32], grid=(8, 1, 1),
                          threadgroup=(8, 1, 1), template=[("T", np.float32)], stream=stream)
    alive = weakref.ref(stream)
    del stream
    gc.collect()
    assert alive() is None


# --- frameworks -----------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_bound_torch_in_torch_out(device, rng):
    torch = pytest.importorskip("torch")
    n = 500
    bound = bind_axpy(n, device=device)
    x, y = (torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(device)
            for _ in range(2))
    (out,) = bound(np.float32(1.5), x, y)
    assert isinstance(out, torch.Tensor) and out.device == x.device
    expected = axpy_reference(1.5, x.cpu().numpy(), y.cpu().numpy())
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-6, atol=1e-6)
    # The keyword call too: a NumPy scalar first does not make the outputs NumPy arrays.
    (kw_out,) = bound_kernel_call(np.float32(1.5), x, y)
    assert isinstance(kw_out, torch.Tensor)
    np.testing.assert_allclose(kw_out.cpu().numpy(), expected, rtol=1e-6, atol=1e-6)
    given = torch.full_like(x, float("nan"))
    (res,) = bound(np.float32(1.5), x, y, given)
    assert res is given
    np.testing.assert_allclose(given.cpu().numpy(), expected, rtol=1e-6, atol=1e-6)


@needs_gpu
def test_bound_calls_follow_torchs_current_stream(rng):
    torch = pytest.importorskip("torch")
    n = 1 << 22
    bound = bind_axpy(n, device=None)
    host = rng.standard_normal(n).astype(np.float32)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.from_numpy(host).cuda()
        x.mul_(0.5)  # queued on the side stream just before the kernel
        (y,) = bound(np.float32(2), x, x)  # the current stream, read at each call
        z = y + 1.0  # torch's next op on that stream sees the output
    side.synchronize()
    # 2 * (x / 2) + x / 2, then + 1
    np.testing.assert_allclose(z.cpu().numpy(), 1.5 * host.astype(np.float64) + 1.0, rtol=1e-6,
                               atol=1e-6)  # near -2/3 the sum cancels: float32's error is absolute
    # A stream given to bind is used by every call, whatever the current stream.
    fixed = bind_axpy(n, device=None, stream=side)
    with torch.cuda.stream(side):
        x2 = torch.from_numpy(host).cuda()
        x2.add_(1.0)
    out = torch.empty_like(x2)
    fixed(np.float32(1), x2, x2, out)  # on side: after add_
    side.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), 2.0 * (host.astype(np.float64) + 1.0),
                               rtol=1e-6, atol=1e-6)


SCALED_STRIDED = """
    uint i = thread_position_in_grid.x;
    out[i] = s * x[elem_to_loc(i, x_shape, x_strides, x_ndim)];
"""


def launches_again():
    return kjit.cache_info()["launches_again"]


def bind_scaled(n, torch):
    """out = s * x for a 0-d s and an x read through its strides, bound for n float32s."""
    k = kjit.metal_kernel(name="bound_scaled", input_names=["s", "x"], output_names=["out"],
                          source=SCALED_STRIDED, ensure_row_contiguous=False)
    return k.bind(output_shapes=[(n,)], output_dtypes=[torch.float32], grid=(n, 1, 1),
                  threadgroup=(64, 1, 1))


@needs_gpu
def test_bound_gpu_calls_on_arrays_laid_out_alike_launch_again(rng):
    torch = pytest.importorskip("torch")
    n = 300
    bound = bind_scaled(n, torch)

    def case(step, scale):
        """A scale (a 0-d tensor on the GPU, or a Python float) and an input of n elements read
        with a step: fresh random data."""
        s = rng.uniform(-2, 2)
        if scale == "tensor":
            s = torch.tensor(s, dtype=torch.float32, device="cuda")
        big = torch.from_numpy(rng.standard_normal(n * step).astype(np.float32)).cuda()
        return s, big[::step]

    def expected(s, x):
        scale = s.item() if isinstance(s, torch.Tensor) else float(np.float32(s))
        return scale * x.cpu().numpy().astype(np.float64)

    # Each layout's first call makes the launch; the next ones on arrays laid out alike launch
    # it again, each with its own arrays' addresses and its own scale. Every call's arrays are
    # kept, so that no two calls share an address, and checked at the end.
    calls = []
    for step, scale in [(1, "tensor"), (3, "tensor"), (1, "tensor"), (1, "float"), (2, "float")]:
        for i in range(4):
            s, x = case(step, scale)
            before = launches_again()
            out = torch.full((n,), float("nan"), device="cuda")
            assert bound(s, x, out)[0] is out
            (made,) = bound(s, x)
            assert launches_again() - before == (2 if i > 0 else 0), (step, scale, i)
            calls.append((s, x, out, made))
    for s, x, out, made in calls:
        for got in (out, made):
            np.testing.assert_allclose(got.cpu().numpy(), expected(s, x), rtol=1e-6)


@needs_gpu
def test_a_bound_launch_made_again_still_refuses_what_a_first_call_would(rng):
    torch = pytest.importorskip("torch")
    n = 64
    bound = bind_scaled(n, torch)
    s = torch.tensor(1.5, device="cuda")
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    out = torch.empty(n, device="cuda")
    for _ in range(2):
        bound(s, x, out)
    with pytest.raises(ValueError, match="requires grad"):
        bound(s, x, torch.empty(n, device="cuda", requires_grad=True))
    with pytest.raises(ValueError, match="dtype float64"):
        bound(s, x, torch.empty(n, device="cuda", dtype=torch.float64))
    with pytest.raises(ValueError, match="row-contiguous"):
        bound(s, x, torch.empty(2 * n, device="cuda")[::2])
    # Arrays elsewhere run as in a first call: a CPU input is copied over.
    x_cpu = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    bound(s, x_cpu, out)
    np.testing.assert_allclose(out.cpu().numpy(), 1.5 * x_cpu.numpy().astype(np.float64),
                               rtol=1e-6)


@needs_gpu
def test_a_bound_launch_made_again_runs_on_the_current_stream(rng):
    torch = pytest.importorskip("torch")
    n = 1 << 20
    bound = exp_kernel().bind(output_shapes=[(n,)], output_dtypes=[torch.float32],
                              grid=(n, 1, 1), threadgroup=(256, 1, 1))
    x = torch.from_numpy(rng.uniform(-1, 1, n).astype(np.float32)).cuda()
    out = torch.empty_like(x)
    bound(x, out)  # the launch made, on the default stream
    side = torch.cuda.Stream()
    before = launches_again()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        x.mul_(0.5)  # queued on the side stream, behind a long wait, just before the kernel
        bound(x, out)
        result = out + 1.0  # torch's next op on that stream sees the output
    assert launches_again() - before == 1
    side.synchronize()
    np.testing.assert_allclose(result.cpu().numpy(),
                               np.exp(x.cpu().numpy().astype(np.float64)) + 1.0, rtol=1e-6)


@needs_gpu
def test_a_bound_launch_made_again_holds_blocks_used_on_another_stream(rng):
    torch = pytest.importorskip("torch")
    a, b = torch.cuda.Stream(), torch.cuda.Stream()
    n = 1 << 16
    bound = exp_kernel().bind(output_shapes=[(n,)], output_dtypes=[torch.float32],
                              grid=(n, 1, 1), threadgroup=(256, 1, 1))
    x0, x1, x2 = (torch.from_numpy(rng.uniform(-1, 1, n).astype(np.float32)).cuda()
                  for _ in range(3))
    bound(x0)  # the launch made
    torch.cuda.synchronize()
    before = launches_again()
    with torch.cuda.stream(a):
        (y,) = bound(x1)  # a block kjit lent to stream a
    a.synchronize()
    with torch.cuda.stream(b):
        torch.cuda._sleep(100_000_000)
        (z,) = bound(y)  # that block read on stream b
    del y
    with torch.cuda.stream(a):
        (w,) = bound(x2)  # may take the block only after stream b's kernel
    assert launches_again() - before == 3
    torch.cuda.synchronize()
    np.testing.assert_allclose(z.cpu().numpy(), np.exp(np.exp(x1.cpu().numpy().astype(np.float64))),
                               rtol=1e-6)
    np.testing.assert_allclose(w.cpu().numpy(), np.exp(x2.cpu().numpy().astype(np.float64)),
                               rtol=2e-7)


@needs_gpu
def test_outputs_made_by_a_launch_made_again_hold_their_blocks_until_freed(rng):
    torch = pytest.importorskip("torch")
    rows, cols = 7, 33
    k = kjit.metal_kernel(name="bound_two_outputs", input_names=["a"], output_names=["lo", "hi"],
                          source="uint i = thread_position_in_grid.x; "
                                 "lo[i] = a[i] - 1.0f; hi[i] = int(a[i] * 100.0f);")
    bound = k.bind(output_shapes=[(rows, cols), (rows, cols)],
                   output_dtypes=[torch.float32, torch.int32], grid=(rows * cols, 1, 1),
                   threadgroup=(64, 1, 1))

    def data():
        return torch.from_numpy(rng.uniform(-3, 3, (rows, cols)).astype(np.float32)).cuda()

    def check(a, lo, hi):
        for t, dtype in [(lo, torch.float32), (hi, torch.int32)]:
            assert (t.shape, t.stride(), t.dtype, t.device) == ((rows, cols), (cols, 1), dtype,
                                                                a.device)
        np.testing.assert_allclose(lo.cpu().numpy(), a.cpu().numpy().astype(np.float64) - 1.0,
                                   rtol=1e-6)
        np.testing.assert_array_equal(hi.cpu().numpy(),
                                      (a.cpu().numpy() * np.float32(100)).astype(np.int32))

    bound(data())  # the launch made
    before = launches_again()
    calls = []
    for _ in range(3):
        a = data()
        calls.append((a, *bound(a)))
    assert launches_again() - before == 3
    # Outputs alive hold their own blocks.
    assert len({t.data_ptr() for _, lo, hi in calls for t in (lo, hi)}) == 6
    for i in range(len(calls)):  # no loop variable left holding a call's outputs
        check(*calls[i])
    # Freed outputs' blocks are the next outputs' on the same stream.
    _, lo, hi = calls.pop()
    freed = {lo.data_ptr(), hi.data_ptr()}
    del lo, hi
    a = data()
    lo, hi = bound(a)
    assert {lo.data_ptr(), hi.data_ptr()} == freed
    check(a, lo, hi)


def scale_kernel():
    return kjit.metal_kernel(name="keyword_scale", input_names=["s", "x"], output_names=["out"],
                             source="uint i = thread_position_in_grid.x; out[i] = s * x[i];")


def test_keyword_calls_with_equal_settings_launch_again_on_the_cpu(rng, real_factories):
    k = scale_kernel()
    n = 200

    def call(x, s, **kw):
        return k(inputs=[np.float32(s), x], output_shapes=[(n,)], output_dtypes=[np.float32],
                 grid=(n, 1, 1), threadgroup=(64, 1, 1), device="cpu", **kw)

    for i in range(4):
        x = rng.standard_normal(n).astype(np.float32)
        s = rng.uniform(-2, 2)
        out = poisoned((n,), np.float32)
        before = launches_again()
        assert call(x, s, outputs=[out])[0] is out
        (made,) = call(x, s)
        # Settings are recorded from their second call (the first that makes its outputs), then
        # each kind of call launches again.
        assert launches_again() - before == min(i, 2), i
        expected = np.float32(s).astype(np.float64) * x
        np.testing.assert_allclose(out, expected, rtol=1e-6)
        np.testing.assert_allclose(made, expected, rtol=1e-6)
    # Other settings are checked and run afresh; a wrong count is still refused.
    x = rng.standard_normal(n).astype(np.float32)
    (half,) = k(inputs=[np.float32(3), x], output_shapes=[(n,)], output_dtypes=[np.float32],
                grid=(n // 2, 1, 1), threadgroup=(64, 1, 1), init_value=-1, device="cpu")
    np.testing.assert_allclose(half[: n // 2], 3 * x[: n // 2].astype(np.float64), rtol=1e-6)
    assert (half[n // 2:] == -1).all()
    call(x, 1)  # the loop's settings again, then a call of theirs with an input short
    with pytest.raises(ValueError, match=r"inputs: expected 2 \(s, x\), got 1"):
        k(inputs=[x], output_shapes=[(n,)], output_dtypes=[np.float32], grid=(n, 1, 1),
          threadgroup=(64, 1, 1), device="cpu")


@needs_gpu
def test_keyword_calls_on_torch_tensors_with_equal_settings_launch_again(rng):
    torch = pytest.importorskip("torch")
    k = scale_kernel()
    n = 300
    calls = []
    for i in range(5):
        s = torch.tensor(rng.uniform(-2, 2), dtype=torch.float32, device="cuda")
        x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
        out = torch.full((n,), float("nan"), device="cuda")
        before = launches_again()
        settings = dict(output_shapes=[(n,)], output_dtypes=[torch.float32], grid=(n, 1, 1),
                        threadgroup=(64, 1, 1))
        assert k(inputs=[s, x], outputs=[out], **settings)[0] is out
        (made,) = k(inputs=[s, x], **settings)
        assert isinstance(made, torch.Tensor) and made.device.type == "cuda"
        assert launches_again() - before == min(i, 2), i
        calls.append((s, x, out, made))
    # A call with other settings in between runs as they say.
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    (half,) = k(inputs=[torch.tensor(2.0, device="cuda"), x], output_shapes=[(n,)],
                output_dtypes=[torch.float32], grid=(n // 2, 1, 1), threadgroup=(64, 1, 1),
                init_value=7)
    torch.cuda.synchronize()
    np.testing.assert_allclose(half[: n // 2].cpu().numpy(),
                               2 * x[: n // 2].cpu().numpy().astype(np.float64), rtol=1e-6)
    assert (half[n // 2:].cpu().numpy() == 7).all()
    for s, x, out, made in calls:
        expected = s.item() * x.cpu().numpy().astype(np.float64)
        for got in (out, made):
            np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-6)
