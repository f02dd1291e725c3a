"""MLX arrays and dtypes in kernel calls: mx dtypes wherever a dtype goes, mx.array inputs, mx.array
outputs, MLX's streams and devices as stream=; against MLX's own operations and NumPy in float64.

MLX's arrays are values: a kernel never writes one in place, so outputs here are poisoned through
init_value (NaN, or -7 for integers) where a test checks every element is written."""

import gc
import os
import pickle
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kjit
from conftest import CUDA_STATUS, poisoned
from seed_kernels import MYEXP

mx = pytest.importorskip("mlx.core")

T = re.escape("[kjit.metal_kernel] kernel 'copy_cast': ")

# Every MLX dtype and kjit's counterpart.
MLX_DTYPES = [
    (mx.bool_, kjit.Dtype.bool), (mx.int8, kjit.int8), (mx.int16, kjit.int16), (mx.int32, kjit.int32),
    (mx.int64, kjit.int64), (mx.uint8, kjit.uint8), (mx.uint16, kjit.uint16),
    (mx.uint32, kjit.uint32), (mx.uint64, kjit.uint64), (mx.float16, kjit.float16),
    (mx.bfloat16, kjit.bfloat16), (mx.float32, kjit.float32), (mx.float64, kjit.float64),
    (mx.complex64, kjit.complex64),
]

# out = (U)inp, element by element, for any pair of dtypes given as T (input) and U (output).
COPY_CAST = """
    uint i = thread_position_in_grid.x;
    out[i] = static_cast<U>(inp[i]);
"""


def copy_cast():
    return kjit.metal_kernel(name="copy_cast", input_names=["inp"], output_names=["out"],
                             source=COPY_CAST)


def myexp():
    return kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                             source=MYEXP)


def random_mx(rng, shape, dtype):
    """Fresh random values of MLX dtype |dtype| (for bool, about half true)."""
    values = rng.standard_normal(shape) * 40
    if dtype == mx.bool_:
        return mx.array(values > 0)
    if dtype == mx.complex64:
        return mx.array((values + 1j * rng.standard_normal(shape)).astype(np.complex64))
    return mx.array(values.astype(np.float32)).astype(dtype)


def test_every_mlx_dtype_maps_to_kjits():
    # The list above is MLX's whole set of dtypes: a new one would need a look here.
    assert {name for name in dir(mx) if isinstance(getattr(mx, name), mx.Dtype)} == {
        str(d).removeprefix("mlx.core.").replace("bool", "bool_") for d, _ in MLX_DTYPES}
    for mlx_dtype, kjit_dtype in MLX_DTYPES:
        assert kjit.empty([2], dtype=mlx_dtype).dtype == kjit_dtype
        assert kjit.array(np.zeros(3), dtype=mlx_dtype).dtype == kjit_dtype
        # An array's dtype object is a new one at each access: read by value, not by address.
        assert kjit.zeros([1], dtype=mx.zeros((1,), dtype=mlx_dtype).dtype).dtype == kjit_dtype


@pytest.mark.parametrize("mlx_dtype", [d for d, _ in MLX_DTYPES], ids=str)
def test_mx_array_in_mx_array_out_of_every_dtype(rng, mlx_dtype):
    a = random_mx(rng, (3, 37), mlx_dtype)
    (out,) = copy_cast()(inputs=[a], template=[("T", mlx_dtype), ("U", mlx_dtype)],
                         grid=(a.size, 1, 1), threadgroup=(64, 1, 1), output_shapes=[a.shape],
                         output_dtypes=[mlx_dtype], init_value=7)
    assert isinstance(out, mx.array)
    assert out.dtype == mlx_dtype and out.shape == a.shape
    # Bit for bit: bfloat16 compared through float32, which holds every value.
    if mlx_dtype == mx.bfloat16:
        out, a = out.astype(mx.float32), a.astype(mx.float32)
    assert mx.array_equal(out, a).item()
    np.testing.assert_array_equal(np.array(out), np.array(a))


@pytest.mark.parametrize("out_dtype", [mx.float16, mx.bfloat16, mx.int32, mx.bool_,
                                       mx.complex64, mx.uint8, mx.float64], ids=str)
def test_output_dtypes_of_mlx(rng, out_dtype):
    a = mx.array((rng.standard_normal(500) * 50).astype(np.float32))
    (out,) = copy_cast()(inputs=[a], template=[("T", mx.float32), ("U", out_dtype)],
                         grid=(a.size, 1, 1), threadgroup=(128, 1, 1), output_shapes=[a.shape],
                         output_dtypes=[out_dtype])
    assert isinstance(out, mx.array) and out.dtype == out_dtype
    # MLX's own conversion; uint8 from a value it cannot hold is undefined in C++: those are
    # left out.
    expected = a.astype(out_dtype)
    if out_dtype == mx.uint8:
        keep = (np.array(a) >= 0) & (np.array(a) < 256)
        np.testing.assert_array_equal(np.array(out)[keep], np.array(expected)[keep])
    elif out_dtype == mx.bfloat16:
        np.testing.assert_array_equal(np.array(out.astype(mx.float32)),
                                      np.array(expected.astype(mx.float32)))
    else:
        np.testing.assert_array_equal(np.array(out), np.array(expected))


def test_myexp_with_mlx_arrays_in_the_current_form(rng):
    # MLX's documented example, unchanged but for the module.
    a = mx.array(rng.standard_normal((4, 16)).astype(np.float32)).astype(mx.float16)
    kernel = myexp()
    outputs = kernel(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1),
                     threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype],
                     init_value=float("nan"))
    out = outputs[0]
    assert isinstance(out, mx.array) and out.dtype == mx.float16 and out.shape == (4, 16)
    # MLX's exp in float32, rounded once to half, as the kernel computes it.
    mlx_ref = mx.exp(a.astype(mx.float32)).astype(mx.float16)
    ref = np.exp(np.array(a).astype(np.float64))
    got = np.array(out).astype(np.float64)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, np.array(mlx_ref).astype(np.float64), rtol=2 ** -10, atol=0)
    half_ulp = np.spacing(ref.astype(np.float16)).astype(np.float64) / 2
    assert np.all(np.abs(got - ref) <= half_ulp + 4 * ref * 2.0 ** -24)


def test_myexp_with_mlx_arrays_in_the_dict_form(rng):
    # MLX 0.17's form: names in dicts, template a dict, the result a dict.
    a = mx.array(rng.standard_normal((8, 33)).astype(np.float32))
    kernel = kjit.metal_kernel(name="myexp", source=MYEXP)
    result = kernel(inputs={"inp": a}, template={"T": mx.float32}, grid=(a.size, 1, 1),
                    threadgroup=(256, 1, 1), output_shapes={"out": a.shape},
                    output_dtypes={"out": mx.float32}, init_value=float("nan"))
    assert list(result) == ["out"]
    out = result["out"]
    assert isinstance(out, mx.array) and out.dtype == mx.float32
    np.testing.assert_allclose(np.array(out), np.array(mx.exp(a)), rtol=2e-6, atol=0)
    np.testing.assert_allclose(np.array(out), np.exp(np.array(a).astype(np.float64)), rtol=2e-6)


def test_myexp_in_the_proposals_form_with_an_mlx_template(rng):
    a = mx.array(rng.standard_normal(300).astype(np.float32))
    kernel = kjit.MetalKernel(name="myexp", source=MYEXP, grid=(a.size, 1, 1),
                              threadgroup=(64, 1, 1), output_shapes={"out": a.shape},
                              output_dtypes={"out": mx.float32})
    kernel.template(T=mx.float32)
    out = kernel(inp=a)["out"]
    assert isinstance(out, mx.array)
    np.testing.assert_allclose(np.array(out), np.exp(np.array(a).astype(np.float64)), rtol=2e-6)


def test_a_lazy_mx_array_is_evaluated_first(rng):
    x = mx.array(rng.standard_normal((5, 7)).astype(np.float32))
    lazy = mx.sin(x) * 3 + 1  # nothing computed yet
    (out,) = copy_cast()(inputs=[lazy], template=[("T", mx.float32), ("U", mx.float32)],
                         grid=(lazy.size, 1, 1), threadgroup=(32, 1, 1),
                         output_shapes=[lazy.shape], output_dtypes=[mx.float32],
                         init_value=float("nan"))
    np.testing.assert_allclose(np.array(out), np.sin(np.array(x).astype(np.float64)) * 3 + 1,
                               rtol=1e-6, atol=1e-6)


# Reads inp through its strides: out[i, j] = inp[i, j] for any layout.
STRIDED = """
    uint j = thread_position_in_grid.x, i = thread_position_in_grid.y;
    out[i * out_cols + j] = inp[i * inp_strides[0] + j * inp_strides[1]];
"""


@pytest.mark.parametrize("row_contiguous", [True, False])
def test_a_transposed_mx_array_is_read_right(rng, row_contiguous):
    base = mx.array(rng.standard_normal((6, 11)).astype(np.float32))
    a = base.T  # (11, 6), a view with strides (1, 11)
    assert np.array(memoryview(a)).strides == (4, 44)
    kernel = kjit.metal_kernel(name="strided", input_names=["inp"], output_names=["out"],
                               source=STRIDED, ensure_row_contiguous=row_contiguous)
    (out,) = kernel(inputs=[a], template=[("out_cols", 6)], grid=(6, 11, 1),
                    threadgroup=(8, 8, 1), output_shapes=[a.shape], output_dtypes=[mx.float32],
                    init_value=float("nan"))
    assert isinstance(out, mx.array) and out.shape == (11, 6)
    np.testing.assert_array_equal(np.array(out), np.array(base).T)
    assert mx.array_equal(out, a).item()


def test_a_broadcast_mx_array_is_read_right(rng):
    row = mx.array(rng.standard_normal(9).astype(np.float32))
    a = mx.broadcast_to(row, (4, 9))  # stride 0 along rows
    (out,) = copy_cast()(inputs=[a], template=[("T", mx.float32), ("U", mx.float32)],
                         grid=(a.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[a.shape],
                         output_dtypes=[mx.float32], init_value=float("nan"))
    np.testing.assert_array_equal(np.array(out), np.broadcast_to(np.array(row), (4, 9)))


def test_mx_inputs_are_read_without_a_copy(rng):
    a = mx.array(rng.standard_normal(64).astype(np.float32))
    view = kjit.array(a)
    assert view.shape == (64,) and view.dtype == kjit.float32
    np.testing.assert_array_equal(np.asarray(view), np.array(a))
    # The same memory MLX exports, kept while the view lives.
    assert np.asarray(view).__array_interface__["data"][0] == \
        np.from_dlpack(a).__array_interface__["data"][0]
    expected = np.array(a)
    del a
    gc.collect()
    mx.eval(mx.ones((64,)) * 5)  # memory MLX would reuse were it freed
    np.testing.assert_array_equal(np.asarray(view), expected)


def test_mixed_libraries_follow_the_first_array_input(rng):
    a = mx.array(rng.standard_normal(50).astype(np.float32))
    b = rng.standard_normal(50).astype(np.float32)
    add = kjit.metal_kernel(name="add", input_names=["x", "y"], output_names=["out"],
                            source="uint i = thread_position_in_grid.x; out[i] = x[i] + y[i];")
    settings = dict(grid=(50, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(50,)],
                    output_dtypes=[mx.float32], init_value=float("nan"))
    (first_mlx,) = add(inputs=[a, b], **settings)
    (first_numpy,) = add(inputs=[b, a], **settings)
    assert isinstance(first_mlx, mx.array)
    assert isinstance(first_numpy, np.ndarray)
    expected = np.array(a).astype(np.float64) + b
    np.testing.assert_allclose(np.array(first_mlx), expected, rtol=1e-6)
    np.testing.assert_allclose(first_numpy, expected, rtol=1e-6)
    # And NumPy outputs to write, with MLX inputs: written in place.
    out = poisoned((50,), np.float32)
    (res,) = add(inputs=[a, b], outputs=[out], **settings)
    assert res is out
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_an_mx_scalar_and_0d_arrays(rng):
    scale = kjit.metal_kernel(name="scale", input_names=["x", "k"], output_names=["out"],
                              source="uint i = thread_position_in_grid.x; out[i] = x[i] * k;")
    a = mx.array(rng.standard_normal(20).astype(np.float32))
    k = mx.array(np.float32(rng.standard_normal()))  # 0-d
    (out,) = scale(inputs=[a, k], grid=(20, 1, 1), threadgroup=(32, 1, 1),
                   output_shapes=[(20,)], output_dtypes=[mx.float32], init_value=float("nan"))
    assert isinstance(out, mx.array)
    np.testing.assert_allclose(np.array(out), np.array(a) * np.array(k), rtol=1e-6)
    # A 0-d output.
    last = kjit.metal_kernel(name="last", input_names=["x"], output_names=["out"],
                             source="out[0] = x[x_shape[0] - 1];")
    (zero_d,) = last(inputs=[a], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[()],
                     output_dtypes=[mx.float32])
    assert isinstance(zero_d, mx.array) and zero_d.shape == ()
    assert zero_d.item() == a[-1].item()


@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16], ids=str)
def test_empty_mx_arrays_in_and_out(dtype):
    (out,) = copy_cast()(inputs=[mx.zeros((0, 3), dtype=dtype)],
                         template=[("T", dtype), ("U", dtype)], grid=(0, 1, 1),
                         threadgroup=(1, 1, 1), output_shapes=[(0, 3)], output_dtypes=[dtype])
    assert isinstance(out, mx.array) and out.shape == (0, 3) and out.dtype == dtype


def test_bound_kernels_and_build_take_mlx_dtypes_and_streams(rng, real_factories):
    kernel = myexp()
    kernel.build(inputs=[(mx.float32, 1)], output_dtypes=[mx.float32],
                 template=[("T", mx.float32)])
    bound = kernel.bind(output_shapes=[(100,)], output_dtypes=[mx.float32], grid=(100, 1, 1),
                        threadgroup=(32, 1, 1), template=[("T", mx.float32)],
                        init_value=float("nan"), stream=mx.default_stream(mx.cpu))
    for _ in range(3):  # the third call runs as a recorded launch
        a = mx.array(rng.standard_normal(100).astype(np.float32))
        (out,) = bound(a)
        assert isinstance(out, mx.array)
        np.testing.assert_allclose(np.array(out), np.exp(np.array(a).astype(np.float64)),
                                   rtol=2e-6)
    # An MLX stream names a device, not a CUDA stream of this process: the bound kernel pickles.
    again = pickle.loads(pickle.dumps(bound))
    a = mx.array(rng.standard_normal(100).astype(np.float32))
    np.testing.assert_allclose(np.array(again(a)[0]), np.exp(np.array(a).astype(np.float64)),
                               rtol=2e-6)


@pytest.mark.parametrize("stream", [mx.cpu, mx.Device(mx.cpu), mx.default_stream(mx.cpu),
                                    mx.new_stream(mx.cpu)], ids=repr)
def test_mlx_cpu_streams_and_devices_run_on_the_cpu(rng, stream):
    a = mx.array(rng.standard_normal(40).astype(np.float32))
    (out,) = myexp()(inputs=[a], template=[("T", mx.float32)], grid=(40, 1, 1),
                     threadgroup=(32, 1, 1), output_shapes=[(40,)],
                     output_dtypes=[mx.float32], stream=stream, device="cpu",
                     init_value=float("nan"))
    np.testing.assert_allclose(np.array(out), np.exp(np.array(a).astype(np.float64)), rtol=2e-6)


@pytest.mark.skipif(bool(CUDA_STATUS["devices"]), reason="a GPU works here")
@pytest.mark.parametrize("stream", [mx.gpu, mx.Device(mx.gpu)], ids=repr)
def test_an_mlx_gpu_stream_without_a_gpu_names_stream(stream):
    a = mx.array(np.ones(4, np.float32))
    with pytest.raises(ValueError, match=re.escape("[kjit.metal_kernel] kernel 'myexp': stream: ")
                       + r".*asks for a GPU, and none works here"):
        myexp()(inputs=[a], template=[("T", mx.float32)], grid=(4, 1, 1),
                threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[mx.float32],
                stream=stream)


@pytest.mark.skipif(not CUDA_STATUS["devices"], reason="no CUDA device")
def test_an_mlx_gpu_stream_runs_on_the_gpu(rng):
    a = mx.array(rng.standard_normal(1000).astype(np.float32))
    kernel = myexp()
    settings = dict(inputs=[a], template=[("T", mx.float32)], grid=(1000, 1, 1),
                    threadgroup=(256, 1, 1), output_shapes=[(1000,)],
                    output_dtypes=[mx.float32], init_value=float("nan"))
    (out,) = kernel(stream=mx.gpu, verbose=True, **settings)
    assert isinstance(out, mx.array)
    np.testing.assert_allclose(np.array(out), np.exp(np.array(a).astype(np.float64)), rtol=2e-6)


@pytest.mark.skipif(not CUDA_STATUS["devices"], reason="no CUDA device")
def test_an_mlx_device_index_beyond_the_gpus_here_is_named():
    a = mx.array(np.ones(4, np.float32))
    count = len(CUDA_STATUS["devices"])
    with pytest.raises(ValueError, match=re.escape("[kjit.metal_kernel] kernel 'myexp': stream: ")
                       + rf".*asks for a GPU beyond the {count} this machine has"):
        myexp()(inputs=[a], template=[("T", mx.float32)], grid=(4, 1, 1),
                threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[mx.float32],
                stream=mx.Device(mx.gpu, count))


def test_bad_streams_name_the_parameter():
    a = mx.array(np.ones(4, np.float32))
    kernel = copy_cast()
    call = dict(inputs=[a], template=[("T", mx.float32), ("U", mx.float32)], grid=(4, 1, 1),
                threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[mx.float32])
    with pytest.raises(TypeError, match=T + r"stream: expected an MLX stream or device .*, got "
                       r"'mlx.core.Dtype'"):
        kernel(stream=mx.float32, **call)
    with pytest.raises(ValueError, match=T + r"stream: .* names device 'cpu', and device= asks "
                       r"for 'cuda:0'"):
        kernel(stream=mx.cpu, device="cuda", **call)
    with pytest.raises(TypeError, match=T + r"stream: expected an MLX stream or device .*, got "
                       r"'mlx.core.array'"):
        kernel(stream=mx.array([0]), **call)
    with pytest.raises(TypeError, match=T + "stream: expected a CUDA stream"):
        kernel(stream="cpu", **call)


def test_unsupported_mlx_dtypes_name_the_parameter():
    a = mx.array(np.ones(4, np.float32))
    kernel = copy_cast()
    call = dict(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)])
    category = re.escape("mx.floating is a category of MLX dtypes, not a dtype")
    with pytest.raises(TypeError, match=T + r"output_dtypes\[0\]: " + category):
        kernel(template=[("T", mx.float32), ("U", mx.float32)], output_dtypes=[mx.floating],
               **call)
    with pytest.raises(TypeError, match=T + r"template: the value of 'U'"):
        kernel(template=[("T", mx.float32), ("U", mx.number)], output_dtypes=[mx.float32],
               **call)
    with pytest.raises(TypeError, match=re.escape("dtype: mx.inexact is a category")):
        kjit.empty([2], dtype=mx.inexact)
    with pytest.raises(TypeError, match=re.escape("dtype: mx.integer is a category")):
        kjit.array(np.zeros(2), dtype=mx.integer)


def test_mx_arrays_are_not_written_in_place():
    a = mx.array(np.ones(4, np.float32))
    out = mx.zeros((4,))
    with pytest.raises(TypeError, match=T + r"outputs\[0\]: an MLX array cannot be written in "
                       "place"):
        copy_cast()(inputs=[a], template=[("T", mx.float32), ("U", mx.float32)],
                    grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                    output_dtypes=[mx.float32], outputs=[out])
    assert np.array(out).tolist() == [0, 0, 0, 0]


def test_mlx_objects_other_than_arrays_are_refused_as_inputs():
    with pytest.raises(TypeError, match=T + r"inputs\[0\] \('inp'\): expected an array .* got "
                       r"'mlx.core.Stream'"):
        copy_cast()(inputs=[mx.default_stream(mx.cpu)], template=[("T", mx.float32),
                                                                  ("U", mx.float32)],
                    grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                    output_dtypes=[mx.float32])


def test_mlx_is_not_imported_until_its_objects_are_seen():
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import kjit
        k = kjit.metal_kernel(name="one", input_names=["x"], output_names=["y"],
                              source="y[thread_position_in_grid.x] = x[0] + 1;")
        out, = k(inputs=[np.ones(3, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                 output_shapes=[(1,)], output_dtypes=["float32"], stream=None)
        kjit.array(np.zeros(2), dtype="float16")
        assert "mlx" not in sys.modules, sorted(m for m in sys.modules if "mlx" in m)
        print(float(out[0]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2.0"


USER_CODE = """
import kjit
import mlx.core as mx

kernel = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                           source="out[0] = inp[0];")
a = mx.ones((4, 16), dtype=mx.float16)
outputs = kernel(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1),
                 threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype],
                 stream=mx.cpu)
out = outputs[0]
assert isinstance(out, mx.array)
view: kjit.Array = kjit.array(a, dtype=mx.float32)
empty: kjit.Array = kjit.zeros([2], dtype=mx.bfloat16)
kernel.build(inputs=[(mx.float16, 2)], output_dtypes=[mx.float16], template=[("T", mx.int32)])
bound = kernel.bind(output_shapes=[(4,)], output_dtypes=[mx.int32], grid=(4, 1, 1),
                    threadgroup=(4, 1, 1), stream=mx.default_stream(mx.cpu))
dict_form = kjit.metal_kernel(name="myexp", source="out[0] = inp[0];")
result = dict_form(inputs={"inp": a}, template={"T": mx.float32}, grid=(1, 1, 1),
                   threadgroup=(1, 1, 1), output_shapes={"out": (1,)},
                   output_dtypes={"out": mx.complex64}, stream=mx.Device(mx.gpu))
proposal = kjit.MetalKernel(name="myexp", source="out[0] = inp[0];", grid=(1, 1, 1),
                            threadgroup=(1, 1, 1), output_shapes={"out": (1,)},
                            output_dtypes={"out": mx.bool_})
proposal.template(T=mx.uint8)
"""


def test_code_with_mlx_dtypes_and_streams_passes_mypy_strict(tmp_path):
    pytest.importorskip("mypy")
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(kjit.__file__)))

    def mypy(code):
        script = tmp_path / "user_code.py"
        script.write_text(code)
        return subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
             str(script)], capture_output=True, text=True, timeout=300,
            env=dict(os.environ, MYPYPATH=package_parent), cwd=tmp_path)

    done = mypy(USER_CODE)
    assert done.returncode == 0, done.stdout + done.stderr
    # MLX's own types are seen, not taken as Any: a misuse of them is caught.
    done = mypy(USER_CODE + "wrong: kjit.Array = mx.float32\n")
    assert done.returncode == 1 and 'has type "Dtype"' in done.stdout, done.stdout + done.stderr
