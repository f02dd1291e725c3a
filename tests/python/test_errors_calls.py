"""Wrong arguments to a kernel call or a build: the right exception type, and a message that
names the parameter and what is wrong with it; and the library working after them all."""


import numpy as np
import pytest

import kjit
from error_cases import N, X, call_args, case_ids, check_prefix, cuda_present, make, readonly, twice


T = r"\[kjit\.metal_kernel\] kernel 'twice': "
NOT_AN_ARRAY = r"expected an array \(NumPy, or any object with __dlpack__\), a kjit\.Array, or a " \
               r"Python bool/int/float, got "

CALL_ERRORS = [
    # counts
    ("too-many-inputs", lambda: dict(inputs=[X, X]), ValueError,
     T + r"inputs: expected 1 \(inp\), got 2"),
    ("no-inputs", lambda: dict(inputs=[]), ValueError, T + r"inputs: expected 1 \(inp\), got 0"),
    ("too-many-output-shapes", lambda: dict(output_shapes=[X.shape, X.shape]), ValueError,
     T + r"output_shapes: expected 1 \(out\), got 2"),
    ("no-output-shapes", lambda: dict(output_shapes=[]), ValueError,
     T + r"output_shapes: expected 1 \(out\), got 0"),
    ("no-output-dtypes", lambda: dict(output_dtypes=[]), ValueError,
     T + r"output_dtypes: expected 1 \(out\), got 0"),
    ("too-many-output-dtypes", lambda: dict(output_dtypes=[X.dtype] * 3), ValueError,
     T + r"output_dtypes: expected 1 \(out\), got 3"),
    # inputs of the wrong kind
    ("inputs-an-int", lambda: dict(inputs=5), TypeError,
     T + r"inputs: expected a list of arrays or scalars"),
    ("inputs-a-dict", lambda: dict(inputs={"inp": X}), TypeError,
     T + r"inputs: expected a list of arrays or scalars"),
    ("inputs-a-str", lambda: dict(inputs="inp"), TypeError,
     T + r"inputs: expected a list of arrays or scalars"),
    ("inputs-an-iterator", lambda: dict(inputs=iter([X])), TypeError,
     T + r"inputs: expected a list of arrays or scalars"),
    ("input-a-dict", lambda: dict(inputs=[{"a": 1}]), TypeError,
     T + r"inputs\[0\] \('inp'\): " + NOT_AN_ARRAY + r"'dict'"),
    ("input-a-str", lambda: dict(inputs=["abc"]), TypeError,
     T + r"inputs\[0\] \('inp'\): " + NOT_AN_ARRAY + r"'str'"),
    ("input-none", lambda: dict(inputs=[None]), TypeError,
     T + r"inputs\[0\] \('inp'\): " + NOT_AN_ARRAY + r"'NoneType'"),
    ("input-a-list", lambda: dict(inputs=[[1.0, 2.0]]), TypeError,
     T + r"inputs\[0\] \('inp'\): " + NOT_AN_ARRAY + r"'list'"),
    ("input-a-type", lambda: dict(inputs=[kjit.Array]), TypeError,
     T + r"inputs\[0\] \('inp'\): " + NOT_AN_ARRAY),
    ("input-int-beyond-64-bits", lambda: dict(inputs=[2**64]), ValueError,
     T + r"inputs\[0\] \('inp'\): the integer does not fit in a signed 64-bit int"),
    ("input-negative-int-beyond-64-bits", lambda: dict(inputs=[-(2**63) - 1]), ValueError,
     T + r"inputs\[0\] \('inp'\): the integer does not fit in a signed 64-bit int"),
    ("input-with-11-dims", lambda: dict(inputs=[np.zeros((1,) * 11, np.float32)]), ValueError,
     T + r"inputs\[0\] \('inp'\): 11 dimensions; at most 10 are supported"),
    pytest.param(
        "inputs-an-array", lambda: dict(inputs=X), TypeError,
        T + r"inputs: expected a list",
        id="inputs-an-array"),
    pytest.param(
        "inputs-a-2d-array", lambda: dict(inputs=np.ones((1, N), np.float32)), TypeError,
        T + r"inputs: expected a list",
        id="inputs-a-2d-array"),
    pytest.param(
        "input-float128", lambda: dict(inputs=[np.zeros(N, np.longdouble)]), TypeError,
        T + r"inputs\[0\] \('inp'\).*(unsupported|float128|longdouble)",
        id="input-float128"),
    pytest.param(
        "input-str-array", lambda: dict(inputs=[np.array(["a", "b"])]), TypeError,
        T + r"inputs\[0\] \('inp'\).*(unsupported|<U1|str)",
        id="input-str-array"),
    # output_shapes
    ("output-shapes-an-int", lambda: dict(output_shapes=8), TypeError,
     T + r"output_shapes: expected a list"),
    ("output-shape-an-int", lambda: dict(output_shapes=[8]), TypeError,
     T + r"output_shapes\[0\]: expected a sequence of ints, got 'int'"),
    ("output-shape-a-str", lambda: dict(output_shapes=["8"]), TypeError,
     T + r"output_shapes\[0\]: expected a sequence of ints, got 'str'"),
    ("output-shape-float-dim", lambda: dict(output_shapes=[(8.0,)]), TypeError,
     T + r"output_shapes\[0\]: expected an int, got 'float'"),
    ("output-shape-negative-dim", lambda: dict(output_shapes=[(N, -1)]), ValueError,
     T + r"output_shapes\[0\]: dimensions must be >= 0, got -1"),
    ("output-shape-11-dims", lambda: dict(output_shapes=[(1,) * 11]), ValueError,
     T + r"output_shapes\[0\] has 11 dimensions; at most 10 are supported"),
    pytest.param(
        "output-shape-size-overflows", lambda: dict(output_shapes=[(2**62, 4)], grid=(0, 1, 1)),
        ValueError, T + r"output_shapes\[0\]",
        id="output-shape-size-overflows"),
    # output_dtypes
    ("output-dtypes-a-str", lambda: dict(output_dtypes="float32"), TypeError,
     T + r"output_dtypes: expected a list"),
    ("output-dtype-np-float128", lambda: dict(output_dtypes=[np.longdouble]), TypeError,
     T + r"output_dtypes\[0\]: unsupported dtype '(float128|longdouble)'; expected one of bool, "),
    ("output-dtype-name-float128", lambda: dict(output_dtypes=["float128"]), TypeError,
     T + r"output_dtypes\[0\]: unsupported dtype 'float128'; expected one of .*float32"),
    ("output-dtype-name-int4", lambda: dict(output_dtypes=["int4"]), TypeError,
     T + r"output_dtypes\[0\]: unsupported dtype 'int4'"),
    ("output-dtype-np-str", lambda: dict(output_dtypes=[np.str_]), TypeError,
     T + r"output_dtypes\[0\]: unsupported dtype 'str'"),
    ("output-dtype-np-object", lambda: dict(output_dtypes=[np.dtype(object)]), TypeError,
     T + r"output_dtypes\[0\]: unsupported dtype 'object'"),
    ("output-dtype-an-int", lambda: dict(output_dtypes=[3]), TypeError,
     T + r"output_dtypes\[0\]: expected a dtype \(kjit\.float32, a NumPy or torch dtype, or a "
     r"name such as 'float32'\), got 'int'"),
    ("output-dtype-none", lambda: dict(output_dtypes=[None]), TypeError,
     T + r"output_dtypes\[0\]: expected a dtype .*got 'NoneType'"),
    ("output-dtype-a-class", lambda: dict(output_dtypes=[dict]), TypeError,
     T + r"output_dtypes\[0\]: .*(not a dtype|unsupported dtype)"),
    # grid
    ("grid-negative", lambda: dict(grid=(N, 1, -1)), ValueError,
     T + r"grid: each size must be in \[0, 2\^32-1\] threads, got \(8, 1, -1\)"),
    ("grid-too-large", lambda: dict(grid=(2**32, 1, 1)), ValueError,
     T + r"grid: each size must be in \[0, 2\^32-1\] threads, got \(4294967296, 1, 1\)"),
    ("grid-beyond-64-bits", lambda: dict(grid=(2**70, 1, 1)), ValueError,
     T + r"grid: \d+ is out of range"),
    ("grid-more-groups-than-64-bits", lambda: dict(grid=(2**22, 2**21, 2**21),
                                                    threadgroup=(1, 1, 1)), ValueError,
     T + r"grid: \(4194304, 2097152, 2097152\) threads in threadgroups of \(1, 1, 1\) are "
         r"more than 2\^64 threadgroups"),
    ("grid-two-ints", lambda: dict(grid=(N, 1)), ValueError,
     T + r"grid: expected 3 sizes \(x, y, z\), got 2"),
    ("grid-four-ints", lambda: dict(grid=(N, 1, 1, 1)), ValueError,
     T + r"grid: expected 3 sizes \(x, y, z\), got 4"),
    ("grid-an-int", lambda: dict(grid=N), TypeError,
     T + r"grid: expected a tuple of 3 ints, got 'int'"),
    ("grid-a-float", lambda: dict(grid=8.0), TypeError,
     T + r"grid: expected a tuple of 3 ints, got 'float'"),
    ("grid-a-str", lambda: dict(grid="811"), TypeError,
     T + r"grid: expected a tuple of 3 ints, got 'str'"),
    ("grid-float-size", lambda: dict(grid=(8.0, 1, 1)), TypeError,
     T + r"grid: expected an int, got 'float'"),
    ("grid-bool-sizes", lambda: dict(grid=(True, True, True)), TypeError,
     T + r"grid: expected an int, got 'bool'"),
    ("grid-none-size", lambda: dict(grid=(N, None, 1)), TypeError,
     T + r"grid: expected an int, got 'NoneType'"),
    # threadgroup
    ("threadgroup-zero", lambda: dict(threadgroup=(0, 1, 1)), ValueError,
     T + r"threadgroup: each size must be in \[1, 1024\], got \(0, 1, 1\)"),
    ("threadgroup-negative", lambda: dict(threadgroup=(N, -1, 1)), ValueError,
     T + r"threadgroup: each size must be in \[1, 1024\], got \(8, -1, 1\)"),
    ("threadgroup-all-zero", lambda: dict(threadgroup=(0, 0, 0)), ValueError,
     T + r"threadgroup: each size must be in \[1, 1024\]"),
    ("threadgroup-product-2048", lambda: dict(threadgroup=(32, 32, 2)), ValueError,
     T + r"threadgroup: \(32, 32, 2\) has 2048 threads; at most 1024 are allowed per "
     r"threadgroup"),
    ("threadgroup-1025", lambda: dict(threadgroup=(1025, 1, 1)), ValueError,
     T + r"threadgroup: each size must be in \[1, 1024\], got \(1025, 1, 1\)"),
    ("threadgroup-two-ints", lambda: dict(threadgroup=(N, 1)), ValueError,
     T + r"threadgroup: expected 3 sizes \(x, y, z\), got 2"),
    ("threadgroup-a-float", lambda: dict(threadgroup=256.0), TypeError,
     T + r"threadgroup: expected a tuple of 3 ints, got 'float'"),
    ("threadgroup-a-str", lambda: dict(threadgroup="256"), TypeError,
     T + r"threadgroup: expected a tuple of 3 ints, got 'str'"),
    ("threadgroup-bool-sizes", lambda: dict(threadgroup=(True, 1, 1)), TypeError,
     T + r"threadgroup: expected an int, got 'bool'"),
    ("threadgroup-float-size", lambda: dict(threadgroup=(1, 1.5, 1)), TypeError,
     T + r"threadgroup: expected an int, got 'float'"),
    pytest.param(
        "threadgroup-product-overflows", lambda: dict(threadgroup=(2**32, 2**32, 1)),
        ValueError, T + r"threadgroup: each size must be in \[1, 1024\]",
        id="threadgroup-product-overflows"),
    # template
    ("template-float-value", lambda: dict(template=[("N", 1.5)]), TypeError,
     T + r"template: the value of 'N' must be a dtype, an int or a bool, got 'float'"),
    ("template-str-value-not-a-dtype", lambda: dict(template=[("T", "abc")]), TypeError,
     T + r"template: the value of 'T': unsupported dtype 'abc'"),
    ("template-none-value", lambda: dict(template=[("N", None)]), TypeError,
     T + r"template: the value of 'N' must be a dtype, an int or a bool, got 'NoneType'"),
    ("template-int-beyond-32-bits", lambda: dict(template=[("N", 2**40)]), ValueError,
     T + r"template: the value of 'N' does not fit in a 32-bit int"),
    ("template-a-dict", lambda: dict(template={"T": kjit.float32}), TypeError,
     T + r"template: expected a list of \(name, value\) pairs"),
    ("template-a-str", lambda: dict(template="T"), TypeError,
     T + r"template: expected a list of \(name, value\) pairs"),
    ("template-triples", lambda: dict(template=[("T", kjit.float32, 1)]), TypeError,
     T + r"template: expected \(name, value\) pairs"),
    ("template-bare-names", lambda: dict(template=[1, 2]), TypeError,
     T + r"template: expected \(name, value\) pairs"),
    ("template-name-not-str", lambda: dict(template=[(1, 1)]), TypeError,
     T + r"template: a template name must be a str"),
    ("template-name-not-identifier", lambda: dict(template=[("1T", 1)]), ValueError,
     T + r"template: '1T' is not a valid identifier"),
    ("template-name-keyword", lambda: dict(template=[("float", kjit.float32)]), ValueError,
     T + r"template: 'float' is not a valid identifier"),
    ("template-name-duplicate", lambda: dict(template=[("T", 1), ("T", 2)]), ValueError,
     T + r"template: the name 'T' is given more than once"),
    ("template-name-is-input", lambda: dict(template=[("inp", 1)]), ValueError,
     T + r"template: 'inp' is also the name of an input or output"),
    ("template-name-is-output", lambda: dict(template=[("out", True)]), ValueError,
     T + r"template: 'out' is also the name of an input or output"),
    ("template-name-is-an-inputs-strides", lambda: dict(template=[("inp_strides", 1)]),
     ValueError, T + r"template: 'inp_strides' is the name of input 'inp''s strides"),
    ("template-name-a-macro", lambda: dict(template=[("FLT_MAX", 1)]), ValueError,
     T + r"template: 'FLT_MAX' is a macro kernel bodies already have"),
    pytest.param(
        "template-str-value-names-the-bad-dtype", lambda: dict(template=[("T", "abc")]),
        TypeError, T + r"template: .*'abc'",
        id="template-str-value-names-the-bad-dtype"),
    pytest.param(
        "template-str-items", lambda: dict(template=["Tf"]), TypeError,
        T + r"template: expected \(name, value\) pairs",
        id="template-str-items"),
    # init_value, verbose, device
    ("init-value-str", lambda: dict(init_value="1"), TypeError,
     T + r"init_value: expected a real number or None, got 'str'"),
    ("init-value-list", lambda: dict(init_value=[0.0]), TypeError,
     T + r"init_value: expected a real number or None, got 'list'"),
    ("init-value-complex", lambda: dict(init_value=1j), TypeError,
     T + r"init_value: expected a real number or None, got 'complex'"),
    ("init-value-numpy-complex", lambda: dict(init_value=np.complex64(1)), TypeError,
     T + r"init_value: expected a real number or None, got 'complex64'"),
    ("init-value-array", lambda: dict(init_value=np.ones(2)), TypeError,
     T + r"init_value: expected a real number or None, got 'ndarray'"),
    # stream (read before the device is known)
    ("stream-negative", lambda: dict(stream=-1), ValueError,
     T + r"stream: -1 is not a stream handle \(an int in \[0, 2\^64\)\)"),
    ("stream-beyond-64-bits", lambda: dict(stream=2**64 + 1), ValueError,
     T + r"stream: 18446744073709551617 is not a stream handle"),
    ("stream-a-float", lambda: dict(stream=1.5), TypeError, T + r"stream: expected a CUDA stream"),
    pytest.param(
        "init-value-huge-int", lambda: dict(init_value=10**400), (ValueError, OverflowError),
        r"init_value",
        id="init-value-huge-int"),
    ("verbose-int", lambda: dict(verbose=1), TypeError, T + r"verbose: expected a bool"),
    ("verbose-str", lambda: dict(verbose="yes"), TypeError, T + r"verbose: expected a bool"),
    ("device-int", lambda: dict(device=0), TypeError,
     T + r"device: expected 'cpu', 'cuda' or 'cuda:N'"),
    ("device-tpu", lambda: dict(device="tpu"), ValueError,
     T + r"device: expected 'cpu', 'cuda' or 'cuda:N', got 'tpu'"),
    ("device-cuda-x", lambda: dict(device="cuda:x"), ValueError,
     T + r"device: expected 'cpu', 'cuda' or 'cuda:N', got 'cuda:x'"),
    ("device-cuda-negative", lambda: dict(device="cuda:-1"), ValueError,
     T + r"device: expected 'cpu', 'cuda' or 'cuda:N', got 'cuda:-1'"),
    ("device-cuda-empty-index", lambda: dict(device="cuda:"), ValueError,
     T + r"device: expected 'cpu', 'cuda' or 'cuda:N', got 'cuda:'"),
    ("device-cpu-index", lambda: dict(device="cpu:0"), ValueError,
     T + r"device: expected 'cpu', 'cuda' or 'cuda:N', got 'cpu:0'"),
    ("device-gpu", lambda: dict(device="gpu"), ValueError,
     T + r"device: expected 'cpu', 'cuda' or 'cuda:N', got 'gpu'"),
    # outputs= (some are checked only after the kernel is compiled)
    ("outputs-an-int", lambda: dict(outputs=5), TypeError, T + r"outputs: expected a list"),
    ("outputs-item-a-dict", lambda: dict(outputs=[{}]), TypeError,
     T + r"outputs\[0\]: " + NOT_AN_ARRAY + r"'dict'"),
    ("outputs-too-many",
     lambda: dict(outputs=[np.zeros(N, np.float32), np.zeros(N, np.float32)]), ValueError,
     T + r"outputs: expected 1 \(out\), got 2"),
    ("outputs-wrong-dtype", lambda: dict(outputs=[np.zeros(N, np.float64)]), ValueError,
     T + r"outputs\[0\] \('out'\) has dtype float64 but output_dtypes says float32"),
    ("outputs-wrong-shape", lambda: dict(outputs=[np.zeros(N + 1, np.float32)]), ValueError,
     T + r"outputs\[0\] \('out'\) does not have the shape output_shapes\[0\] gives"),
    ("outputs-wrong-rank", lambda: dict(outputs=[np.zeros((1, N), np.float32)]), ValueError,
     T + r"outputs\[0\] \('out'\) does not have the shape output_shapes\[0\] gives"),
    ("outputs-not-contiguous", lambda: dict(outputs=[np.zeros(2 * N, np.float32)[::2]]),
     ValueError, T + r"outputs\[0\] \('out'\) must be row-contiguous"),
    ("outputs-transposed",
     lambda: dict(outputs=[np.zeros((4, 2), np.float32).T], output_shapes=[(2, 4)]),
     ValueError, T + r"outputs\[0\] \('out'\) must be row-contiguous"),
    pytest.param(
        "outputs-empty-list", lambda: dict(outputs=[]), ValueError,
        T + r"outputs: expected 1 \(out\), got 0",
        id="outputs-empty-list"),
    pytest.param(
        "outputs-read-only", lambda: dict(outputs=[readonly(np.zeros(N, np.float32))]),
        (ValueError, TypeError), T + r"outputs\[0\].*(read-only|writable|writeable)",
        id="outputs-read-only"),
    pytest.param(
        "outputs-an-array", lambda: dict(outputs=np.zeros(N, np.float32)), TypeError,
        T + r"outputs: expected a list",
        id="outputs-an-array"),
]


@pytest.mark.parametrize("label,overrides,exc,pattern", CALL_ERRORS, ids=case_ids(CALL_ERRORS))
def test_call_rejects(label, overrides, exc, pattern):
    k = twice()
    with pytest.raises(exc, match=pattern) as excinfo:
        k(**call_args(**overrides()))
    check_prefix(excinfo)


@pytest.mark.parametrize("device", ["cuda:0", "cuda"])
def test_device_not_available(device):
    if cuda_present():
        pytest.skip("a CUDA device is present")
    with pytest.raises(ValueError, match=T + r"device: cuda:0 is not available") as excinfo:
        twice()(**call_args(device=device))
    check_prefix(excinfo)


def test_device_index_not_available():
    with pytest.raises(ValueError, match=T + r"device: cuda:63 is not available") as excinfo:
        twice()(**call_args(device="cuda:63"))
    check_prefix(excinfo)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int64"])
def test_atomic_outputs_need_32_bit_types(dtype):
    k = make("metal", atomic_outputs=True)
    with pytest.raises(ValueError, match=r"output_dtypes\[0\]: " + dtype + r" outputs cannot be "
                       r"atomic \(atomic_outputs=True needs int32, uint32 or float32"):
        k.build(inputs=[("float32", 1)], output_dtypes=[dtype])


def test_python_scalar_as_output_is_rejected():
    k = make("cuda", input_names=[], source="o[0] = 5;")
    with pytest.raises(TypeError, match=r"outputs\[0\]"):
        k(inputs=[], output_shapes=[()], output_dtypes=[np.int32], grid=(1, 1, 1),
          threadgroup=(1, 1, 1), outputs=[3])


BUILD_ERRORS = [
    ("build-input-count", dict(inputs=[]), ValueError, T + r"inputs: expected 1 \(inp\), got 0"),
    ("build-output-dtype-count", dict(output_dtypes=[]), ValueError,
     T + r"output_dtypes: expected 1, got 0"),
    ("build-not-a-pair", dict(inputs=["float32"]), TypeError,
     T + r"inputs\[0\]: expected a \(dtype, ndim\) pair"),
    ("build-ndim-float", dict(inputs=[("float32", 1.0)]), TypeError,
     T + r"inputs\[0\] ndim: expected an int, got 'float'"),
    ("build-ndim-11", dict(inputs=[("float32", 11)]), ValueError,
     T + r"inputs\[0\]: ndim must be in \[0, 10\], got 11"),
    ("build-ndim-negative", dict(inputs=[("float32", -1)]), ValueError,
     T + r"inputs\[0\]: ndim must be in \[0, 10\], got -1"),
    ("build-bad-dtype", dict(inputs=[("float128", 1)]), TypeError,
     T + r"inputs\[0\]: unsupported dtype 'float128'"),
    ("build-target-tpu", dict(target="tpu"), ValueError,
     T + r"target: expected 'cpu', 'cuda', 'cuda:N' or 'sm_XY', got 'tpu'"),
    ("build-target-sm-x", dict(target="sm_x"), ValueError,
     T + r"target: expected 'cpu', 'cuda', 'cuda:N' or 'sm_XY', got 'sm_x'$"),
    ("build-target-int", dict(target=90), TypeError,
     T + r"target: expected 'cpu', 'cuda', 'cuda:N' or 'sm_XY'"),
    ("build-target-one-chip", dict(target="sm_90a"), ValueError,
     T + r"target: expected .* got 'sm_90a' \(kjit compiles for sm_XY, not sm_XYa or sm_XYf\)"),
    pytest.param(
        "build-target-too-old", dict(target="sm_35"), ValueError,
        T + r"target: NVRTC \d+\.\d+ cannot compile for compute capability 3\.5",
        id="build-target-too-old", marks=pytest.mark.skipif(
            not kjit._kjit.cuda_status()["nvrtc"], reason="needs NVRTC")),
    pytest.param(
        "build-ndim-huge", dict(inputs=[("float32", 2**40)]), ValueError,
        T + r"inputs.*ndim",
        id="build-ndim-huge"),
]


@pytest.mark.parametrize("label,overrides,exc,pattern", BUILD_ERRORS, ids=case_ids(BUILD_ERRORS))
def test_build_rejects(label, overrides, exc, pattern):
    args = dict(inputs=[("float32", 1)], output_dtypes=["float32"])
    args.update(overrides)
    with pytest.raises(exc, match=pattern) as excinfo:
        twice().build(**args)
    check_prefix(excinfo)


def test_library_works_after_many_errors(rng):
    # Every error above, once more in a row, and then an ordinary kernel.
    for entry in CALL_ERRORS:
        values = entry.values if hasattr(entry, "values") else entry
        _, overrides, _, _ = values
        try:
            twice()(**call_args(**overrides()))
        except (ValueError, TypeError, RuntimeError, OverflowError):
            pass
    x = rng.integers(-50, 50, size=(3, 5)).astype(np.int64)
    k = kjit.cuda_kernel(name="negate", input_names=["a"], output_names=["b"],
                         source="int i = blockIdx.x * blockDim.x + threadIdx.x;\nb[i] = -a[i];\n")
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
            threadgroup=(4, 1, 1))[0]
    np.testing.assert_array_equal(out, -x)
