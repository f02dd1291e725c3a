"""Wrong calls fail cleanly: the right exception type, a message that names the parameter and
what is wrong with it, compile errors that point at the user's own lines, unsupported features
rejected before compiling, and a library (and kernel) that keeps working afterwards."""

import os
import re
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kjit
from conftest import poisoned

# ---------------------------------------------------------------------------------------------
# Kernels used throughout
# ---------------------------------------------------------------------------------------------

TWICE_METAL = """
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] * 2;
"""

N = 8
X = np.arange(N, dtype=np.float32)


def twice(name: str = "twice"):
    return kjit.metal_kernel(name=name, input_names=["inp"], output_names=["out"],
                             source=TWICE_METAL)


def call_args(**overrides):
    """A correct call of twice() on X, with some arguments replaced."""
    args = dict(inputs=[X], output_shapes=[X.shape], output_dtypes=[X.dtype], grid=(N, 1, 1),
                threadgroup=(N, 1, 1))
    args.update(overrides)
    return args


def make(api: str = "metal", **overrides):
    """A kernel constructor call with some arguments replaced."""
    args = dict(name="k", input_names=["a"], output_names=["o"], source="o[0] = a[0];")
    args.update(overrides)
    return (kjit.metal_kernel if api == "metal" else kjit.cuda_kernel)(**args)


def check_prefix(excinfo) -> None:
    """Every argument error starts by saying which API raised it."""
    text = str(excinfo.value)
    assert text.startswith("[kjit."), text


def cuda_present() -> bool:
    return any("cuda" in str(d) for d in kjit.devices())


def readonly(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


# ---------------------------------------------------------------------------------------------
# 1a. Wrong arguments to kjit.metal_kernel / kjit.cuda_kernel
# ---------------------------------------------------------------------------------------------

CONSTRUCTION_ERRORS = [
    # name
    ("name-starts-with-digit", "metal", dict(name="1x"), ValueError,
     r"\[kjit\.metal_kernel\] name: '1x' is not a valid identifier"),
    ("name-with-space", "cuda", dict(name="a b"), ValueError,
     r"\[kjit\.cuda_kernel\] name: 'a b' is not a valid identifier"),
    ("name-empty", "metal", dict(name=""), ValueError, r"name: '' is not a valid identifier"),
    ("name-keyword", "cuda", dict(name="int"), ValueError,
     r"name: 'int' is not a valid identifier"),
    ("name-with-dash", "metal", dict(name="my-kernel"), ValueError,
     r"name: 'my-kernel' is not a valid identifier"),
    ("name-not-str", "metal", dict(name=3), TypeError, r"name: expected a str"),
    # input_names / output_names
    ("input-name-digit", "metal", dict(input_names=["1x"]), ValueError,
     r"input_names: '1x' is not a valid identifier"),
    ("input-name-space", "metal", dict(input_names=["a b"]), ValueError,
     r"input_names: 'a b' is not a valid identifier"),
    ("input-name-empty", "cuda", dict(input_names=[""]), ValueError,
     r"input_names: '' is not a valid identifier"),
    ("input-name-keyword", "metal", dict(input_names=["int"]), ValueError,
     r"input_names: 'int' is not a valid identifier"),
    ("input-name-non-ascii", "metal", dict(input_names=["\u00e9"]), ValueError,
     r"input_names: '\u00e9' is not a valid identifier"),
    ("output-name-digit", "cuda", dict(output_names=["1x"]), ValueError,
     r"output_names: '1x' is not a valid identifier"),
    ("output-name-space", "metal", dict(output_names=["a b"]), ValueError,
     r"output_names: 'a b' is not a valid identifier"),
    ("output-name-empty", "metal", dict(output_names=[""]), ValueError,
     r"output_names: '' is not a valid identifier"),
    ("output-name-keyword", "cuda", dict(output_names=["class"]), ValueError,
     r"output_names: 'class' is not a valid identifier"),
    ("input-name-reserved-prefix", "metal", dict(input_names=["kjit_a"]), ValueError,
     r"input_names: 'kjit_a' uses the reserved prefix 'kjit_'"),
    ("input-name-compilers", "cuda", dict(input_names=["__restrict__"]), ValueError,
     r"input_names: '__restrict__' is reserved to the compiler"),
    ("output-name-compilers", "metal", dict(output_names=["_Out"]), ValueError,
     r"output_names: '_Out' is reserved to the compiler"),
    ("input-name-a-macro", "metal", dict(input_names=["INFINITY"]), ValueError,
     r"input_names: 'INFINITY' is a macro kernel bodies already have"),
    ("output-name-a-macro", "metal", dict(output_names=["M_PI_F"]), ValueError,
     r"output_names: 'M_PI_F' is a macro kernel bodies already have"),
    ("input-name-anothers-shape", "metal", dict(input_names=["a", "a_shape"]), ValueError,
     r"input_names: 'a_shape' is the name of input 'a''s shape"),
    ("output-name-an-inputs-ndim", "cuda", dict(input_names=["x"], output_names=["x_ndim"]),
     ValueError, r"output_names: 'x_ndim' is the name of input 'x''s ndim"),
    ("input-names-a-str", "metal", dict(input_names="abc"), TypeError,
     r"input_names: expected a list of names"),
    ("output-names-an-int", "cuda", dict(output_names=5), TypeError,
     r"output_names: expected a list of names"),
    ("input-name-not-str", "metal", dict(input_names=[1]), TypeError,
     r"input_names: every name must be a str"),
    ("duplicate-across-inputs-outputs", "metal", dict(input_names=["a"], output_names=["a"]),
     ValueError, r"output_names: the name 'a' is used more than once across input_names and "
     r"output_names"),
    ("duplicate-within-inputs", "cuda", dict(input_names=["a", "a"]), ValueError,
     r"input_names: the name 'a' is used more than once"),
    ("no-outputs", "metal", dict(output_names=[]), ValueError,
     r"output_names: at least one output is required"),

    # source / header
    ("source-bytes", "metal", dict(source=b"o[0] = a[0];"), TypeError, r"source: expected a str"),
    ("source-int", "cuda", dict(source=7), TypeError, r"source: expected a str"),
    ("header-int", "metal", dict(header=3), TypeError, r"header: expected a str"),
    ("header-list", "cuda", dict(header=["x"]), TypeError, r"header: expected a str"),
    ("source-closes-the-function", "cuda", dict(source="o[0] = a[0];\n}  void f() {"), ValueError,
     r"'\}' \(source line 2\) closes a brace the text did not open"),
    ("header-never-closed", "metal", dict(header="namespace q {\n"), ValueError,
     r"'\{' \(header line 1\) is never closed"),
    # flags
    ("ensure-row-contiguous-int", "metal", dict(ensure_row_contiguous=1), TypeError,
     r"ensure_row_contiguous: expected a bool"),
    ("ensure-row-contiguous-str", "cuda", dict(ensure_row_contiguous="yes"), TypeError,
     r"ensure_row_contiguous: expected a bool"),
    ("atomic-outputs-int", "metal", dict(atomic_outputs=1), TypeError,
     r"atomic_outputs: expected a bool"),
    # compile_options
    ("compile-options-str", "metal", dict(compile_options="fast"), TypeError,
     r"compile_options: expected a dict or None"),
    ("compile-options-list", "cuda", dict(compile_options=[("math_mode", "fast")]), TypeError,
     r"compile_options: expected a dict or None"),
    ("compile-options-unknown-key", "metal", dict(compile_options={"fast_math": True}),
     ValueError, r"compile_options: unknown option 'fast_math' \(known: 'math_mode'\)"),
    ("compile-options-bad-math-mode", "cuda", dict(compile_options={"math_mode": "turbo"}),
     ValueError, r"compile_options: math_mode must be 'safe', 'relaxed' or 'fast'"),
    ("compile-options-math-mode-not-str", "metal", dict(compile_options={"math_mode": 1}),
     ValueError, r"compile_options: math_mode must be 'safe', 'relaxed' or 'fast'"),
    # shared_memory (cuda_kernel)
    ("shared-memory-negative", "cuda", dict(shared_memory=-1), ValueError,
     r"\[kjit\.cuda_kernel\] shared_memory: must be in \[0, 2\^31\) bytes, got -1"),
    ("shared-memory-too-large", "cuda", dict(shared_memory=2**31), ValueError,
     r"shared_memory: must be in \[0, 2\^31\) bytes, got 2147483648"),
    ("shared-memory-float", "cuda", dict(shared_memory=1.5), TypeError,
     r"shared_memory: expected an int \(bytes\)"),
    ("shared-memory-bool", "cuda", dict(shared_memory=True), TypeError,
     r"shared_memory: expected an int \(bytes\)"),
    pytest.param(
        "shared-memory-beyond-64-bits", "cuda", dict(shared_memory=2**80), ValueError,
        r"shared_memory: .*got 1208925819614629174706176",
        id="shared-memory-beyond-64-bits"),
    pytest.param(
        "input-name-is-a-metal-attribute", "metal",
        dict(input_names=["thread_position_in_grid"]), ValueError,
        r"input_names: 'thread_position_in_grid'",
        id="input-name-is-a-metal-attribute"),
]


def _ids(table):
    return [e.id if hasattr(e, "id") and e.id else e[0] for e in table]


@pytest.mark.parametrize("label,api,overrides,exc,pattern", CONSTRUCTION_ERRORS,
                         ids=_ids(CONSTRUCTION_ERRORS))
def test_constructor_rejects(label, api, overrides, exc, pattern):
    with pytest.raises(exc, match=pattern) as excinfo:
        make(api, **overrides)
    check_prefix(excinfo)


def test_constructors_name_arguments_missing_repeated_unknown_or_too_many():
    # As Python words such errors (no "[kjit.…]" prefix: they are about the call, not a value).
    with pytest.raises(TypeError, match=r"^kjit\.metal_kernel\(\) got an unexpected keyword "
                                        r"argument 'shared_memory'$"):
        make("metal", shared_memory=16)
    with pytest.raises(TypeError, match=r"^kjit\.cuda_kernel\(\) missing argument 'source'$"):
        kjit.cuda_kernel("k", ["a"], ["o"])
    with pytest.raises(TypeError, match=r"^kjit\.metal_kernel\(\) got multiple values for "
                                        r"argument 'name'$"):
        kjit.metal_kernel("k", ["a"], ["o"], "o[0] = a[0];", name="k2")
    with pytest.raises(TypeError, match=r"^kjit\.metal_kernel\(\) takes at most 8 positional "
                                        r"arguments \(9 given\)$"):
        kjit.metal_kernel("k", ["a"], ["o"], "o[0] = a[0];", "", True, False, None, 1)
    # All of them by position, as MLX's own calls may pass them.
    k = kjit.cuda_kernel("k", ["a"], ["o"], "o[threadIdx.x] = a[threadIdx.x];", "", True, 0, None,
                         False)
    assert (k.name, k.input_names, k.output_names) == ("k", ["a"], ["o"])


def test_constructor_errors_name_the_api():
    with pytest.raises(ValueError, match=r"^\[kjit\.metal_kernel\] input_names"):
        make("metal", input_names=["1x"])
    with pytest.raises(ValueError, match=r"^\[kjit\.cuda_kernel\] input_names"):
        make("cuda", input_names=["1x"])


# ---------------------------------------------------------------------------------------------
# 1b. Wrong arguments to a kernel call
# ---------------------------------------------------------------------------------------------

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


@pytest.mark.parametrize("label,overrides,exc,pattern", CALL_ERRORS, ids=_ids(CALL_ERRORS))
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


@pytest.mark.parametrize("label,overrides,exc,pattern", BUILD_ERRORS, ids=_ids(BUILD_ERRORS))
def test_build_rejects(label, overrides, exc, pattern):
    args = dict(inputs=[("float32", 1)], output_dtypes=["float32"])
    args.update(overrides)
    with pytest.raises(exc, match=pattern) as excinfo:
        twice().build(**args)
    check_prefix(excinfo)


# ---------------------------------------------------------------------------------------------
# 2. Compile errors point at the user's own lines
# ---------------------------------------------------------------------------------------------

def _check_compile_error(err, origin: str, line: int, text: str, whole: str) -> None:
    assert isinstance(err, RuntimeError)
    message = str(err)
    assert f"{origin} line {line}" in message, message
    assert text.strip() in message, message
    # Only the failing line is quoted with that number.
    assert re.search(rf"\b{line} \| *{re.escape(text.strip())}", message), message
    assert isinstance(err.log, str) and f"{origin} line {line}" in err.log, err.log
    assert isinstance(err.source, str)
    for user_line in whole.strip().splitlines():
        assert user_line.strip() in err.source
    assert len(err.source) > len(whole)


METAL_BAD_BODY = (
    "uint i = thread_position_in_grid.x;\n"
    "float y = inp[i];\n"
    "out[i] = y +* ;\n"
    "out[i] += 1;\n"
)
CUDA_BAD_BODY = (
    "int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "float y = inp[i];\n"
    "out[i] = y +* ;\n"
    "out[i] += 1.0f;\n"
)


@pytest.mark.parametrize("api,body", [("metal", METAL_BAD_BODY), ("cuda", CUDA_BAD_BODY)],
                         ids=["metal", "cuda"])
def test_syntax_error_names_source_line(api, body):
    k = make(api, name="bad_line3", input_names=["inp"], output_names=["out"], source=body)
    with pytest.raises(kjit.CompileError) as excinfo:
        k(**call_args())
    _check_compile_error(excinfo.value, "source", 3, "out[i] = y +* ;", body)
    assert f"[kjit.{api}_kernel] kernel 'bad_line3'" in str(excinfo.value)
    assert "source line 1" not in str(excinfo.value)
    assert "header line" not in str(excinfo.value)


def test_line_numbers_count_a_leading_newline():
    # The usual triple-quoted body starts with a newline: line 1 is empty.
    body = """
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] + undeclared_name;
"""
    k = make("metal", name="bad_triple", input_names=["inp"], output_names=["out"], source=body)
    with pytest.raises(kjit.CompileError) as excinfo:
        k(**call_args())
    _check_compile_error(excinfo.value, "source", 3, "out[i] = inp[i] + undeclared_name;", body)
    assert "undeclared_name" in excinfo.value.log


def test_type_error_names_source_line():
    body = "uint i = thread_position_in_grid.x;\nout[i] = inp[i];\nint* p = 3.5f;\n"
    k = make("metal", name="bad_type", input_names=["inp"], output_names=["out"], source=body)
    with pytest.raises(kjit.CompileError) as excinfo:
        k(**call_args())
    _check_compile_error(excinfo.value, "source", 3, "int* p = 3.5f;", body)


HEADERS = {
    "metal": "// utilities\ninline float f(float v) {\n  return v + undefined_thing;\n}\n",
    "cuda": "// utilities\n__device__ inline float f(float v) {\n  return v + undefined_thing;\n}\n",
}
GOOD_BODIES = {
    "metal": "uint i = thread_position_in_grid.x;\nout[i] = f(inp[i]);\n",
    "cuda": "int i = threadIdx.x;\nout[i] = f(inp[i]);\n",
}


@pytest.mark.parametrize("api", ["metal", "cuda"])
def test_header_error_names_header_line(api):
    k = make(api, name="bad_header", input_names=["inp"], output_names=["out"],
             source=GOOD_BODIES[api], header=HEADERS[api])
    with pytest.raises(kjit.CompileError) as excinfo:
        k(**call_args())
    _check_compile_error(excinfo.value, "header", 3, "return v + undefined_thing;",
                         HEADERS[api])
    assert "source line" not in str(excinfo.value)


@pytest.mark.parametrize("api", ["metal", "cuda"])
def test_body_line_numbers_ignore_the_header(api):
    header = "// one\n// two\n// three\n// four\n" + HEADERS[api].replace("undefined_thing", "1")
    body = GOOD_BODIES[api] + "out[0] = missing_variable;\n"
    k = make(api, name="bad_after_header", input_names=["inp"], output_names=["out"],
             source=body, header=header)
    with pytest.raises(kjit.CompileError) as excinfo:
        k(**call_args())
    _check_compile_error(excinfo.value, "source", 3, "out[0] = missing_variable;", body)
    assert "header line" not in str(excinfo.value)


def test_a_kernel_the_loader_refuses_raises_with_the_loader_message():
    # 64 MiB of initial-exec thread-local storage: the loader has no room for it in a process
    # that is already running, so the compiled kernel cannot be loaded.
    header = ('__attribute__((tls_model("initial-exec"))) thread_local char '
              "scratch[64 << 20];\n")
    k = kjit.metal_kernel(name="unloadable", input_names=["inp"], output_names=["out"],
                          header=header,
                          source="uint i = thread_position_in_grid.x;\n"
                                 "scratch[i] = 1;\nout[i] = inp[i] + scratch[i];\n")
    with pytest.raises(RuntimeError, match=r"cannot load a compiled kernel: .*static TLS"):
        k(**call_args(device="cpu"))


PRELUDE_ASSERTIONS = [
    ("cuda", "auto tile = cg::tiled_partition<3>(cg::this_thread_block());\n"
             "out[0] = inp[0] + tile.thread_rank();\n",
     1, "the size must be a power of two up to 32"),
    ("metal", "uint i = thread_position_in_grid.x;\nout[i] = inp[i] + as_type<uint>(half(1));\n",
     2, "as_type: the two types differ in size"),
]


@pytest.mark.parametrize("api,body,line,reason", PRELUDE_ASSERTIONS,
                         ids=["tile-of-3", "as_type-sizes"])
def test_prelude_assertions_reach_the_user(api, body, line, reason):
    k = make(api, name="asserting", input_names=["inp"], output_names=["out"], source=body)
    with pytest.raises(kjit.CompileError,
                       match=rf"source line {line}: error: static assertion failed: [^\n]*{reason}\n"):
        k.build(inputs=[("float32", 1)], output_dtypes=["float32"])
    if kjit._kjit.cuda_status()["nvrtc"] is not None:
        with pytest.raises(kjit.CompileError, match=reason):
            k.build(inputs=[("float32", 1)], output_dtypes=["float32"], target="sm_90")


def test_compile_error_is_a_runtime_error():
    assert issubclass(kjit.CompileError, RuntimeError)
    k = make("cuda", name="bad_build", input_names=["inp"], output_names=["out"],
             source="out[0] = ;")
    with pytest.raises(RuntimeError) as excinfo:
        k.build(inputs=[("float32", 1)], output_dtypes=["float32"])
    assert isinstance(excinfo.value, kjit.CompileError)
    _check_compile_error(excinfo.value, "source", 1, "out[0] = ;", "out[0] = ;")


@pytest.mark.parametrize("where,kw", [
    ("source line 2", dict(source="float x = a[thread_position_in_grid.x];\n"
                                  "auto f = [&](float v) { return simd_sum(v); };\n"
                                  "out[thread_position_in_grid.x] = f(x);")),
    ("header line 2", dict(header="float total(float v) {\n"
                                  "  auto f = [](float x) { return simd_sum(x); };\n"
                                  "  return f(v);\n}",
                           source="out[thread_position_in_grid.x] = "
                                  "total(a[thread_position_in_grid.x]);")),
    ("source line 2", dict(source="struct Sum {\n  float of(float v) { return simd_sum(v); }\n};\n"
                                  "out[thread_position_in_grid.x] = "
                                  "Sum().of(a[thread_position_in_grid.x]);")),
])
def test_waits_inside_lambdas_or_local_classes_are_refused_on_the_cpu(where, kw):
    k = kjit.metal_kernel(name="nested_wait", input_names=["a"], output_names=["out"], **kw)
    with pytest.raises(ValueError, match=rf"\[kjit\.metal_kernel\] 'simd_sum' \({where}\) waits "
                                         r"for other threads inside a lambda or a function of a "
                                         r"local class"):
        k(inputs=[np.ones(32, np.float32)], output_shapes=[(32,)], output_dtypes=[np.float32],
          grid=(32, 1, 1), threadgroup=(32, 1, 1), device="cpu")


@pytest.mark.parametrize("api,header,source,operation,macro", [
    ("cuda", "#define PAIR(x) ((x) + __shfl_xor_sync(0xffffffffu, (x), 1))",
     "out[threadIdx.x] = PAIR(a[threadIdx.x]);", "__shfl_xor_sync", "PAIR"),
    ("metal", "#define BAR() threadgroup_barrier(mem_flags::mem_threadgroup)\n"
              "float twice(float v) { BAR(); return 2 * v; }",
     "out[thread_position_in_grid.x] = twice(a[thread_position_in_grid.x]);",
     "threadgroup_barrier", "BAR"),
    ("cuda", "#define SYNC() __syncthreads()\n#define STEP() SYNC()",  # through another macro
     "out[threadIdx.x] = a[threadIdx.x];\nSTEP();", "__syncthreads", "STEP"),
])
def test_header_macros_that_wait_are_refused_on_the_cpu(api, header, source, operation, macro):
    k = make(api, name="macro_wait", input_names=["a"], output_names=["out"], header=header,
             source=source)
    with pytest.raises(ValueError, match=rf"\[kjit\.{api}_kernel\] '{operation}' \(header line 1\) "
                                         rf"waits for other threads inside the header's macro "
                                         rf"'{macro}'"):
        k(inputs=[np.ones(32, np.float32)], output_shapes=[(32,)], output_dtypes=[np.float32],
          grid=(32, 1, 1), threadgroup=(32, 1, 1), device="cpu")
    # Macros the kernel never uses are no matter.
    defines = "\n".join(line for line in header.split("\n") if line.startswith("#define"))
    unused = make(api, name="macro_unused", input_names=["a"], output_names=["out"],
                  header=defines, source="out[threadIdx.x] = a[threadIdx.x];" if api == "cuda"
                  else "out[thread_position_in_grid.x] = a[thread_position_in_grid.x];")
    (out,) = unused(inputs=[np.full(32, 3, np.float32)], output_shapes=[(32,)],
                    output_dtypes=[np.float32], grid=(32, 1, 1), threadgroup=(32, 1, 1),
                    device="cpu")
    np.testing.assert_array_equal(out, np.full(32, 3, np.float32))


def test_braces_that_pair_up_once_preprocessed_are_left_to_the_compiler():
    # Each branch of #if opens a brace that one '}' closes.
    k = make("cuda", name="branches", input_names=["a"], output_names=["o"], source="""
#if 1
if (a[threadIdx.x] > 0) {
#else
if (a[threadIdx.x] < 0) {
#endif
    o[threadIdx.x] = 1;
} else { o[threadIdx.x] = 2; }
""")
    (out,) = k(inputs=[np.array([-1, 1, 2, -3], np.float32)], output_shapes=[(4,)],
               output_dtypes=[np.int32], grid=(4, 1, 1), threadgroup=(4, 1, 1), device="cpu")
    np.testing.assert_array_equal(out, [2, 1, 1, 2])


def test_an_error_inside_kjits_code_is_reported_at_the_users_line():
    # atomicAdd on a bool output fails inside kjit's own atomics on the CPU: the message gives
    # that error at the body's line, not only "required from here".
    k = make("cuda", name="bool_atomic", input_names=["inp"], output_names=["out"],
             source="const unsigned i = threadIdx.x;\natomicAdd(&out[0], true);")
    with pytest.raises(kjit.CompileError,
                       match=r"source line 2: error: .*bool\*.* \(in kjit's code this line uses\)"
                             r"\n    2 \| atomicAdd\(&out\[0\], true\);") as excinfo:
        k(inputs=[X], output_shapes=[(1,)], output_dtypes=[np.bool_], grid=(N, 1, 1),
          threadgroup=(N, 1, 1), device="cpu")
    assert "required from here" not in str(excinfo.value)


def test_an_error_in_the_users_header_keeps_the_line_that_led_there():
    # The body's line 1 leads to an error in the header; line 2's error is inside kjit's code.
    k = make("cuda", name="two_errors", input_names=["inp"], output_names=["out"],
             header="template <class T> T f(T v) { return v.foo; }\n",
             source="out[0] = f(inp[0]);\natomicAdd(&out[1], true);")
    with pytest.raises(kjit.CompileError) as excinfo:
        k(inputs=[X], output_shapes=[(2,)], output_dtypes=[np.bool_], grid=(1, 1, 1),
          threadgroup=(1, 1, 1), device="cpu")
    text = str(excinfo.value)
    assert re.search(r"source line 1: required from here\n    1 \| out\[0\] = f\(inp\[0\]\);\n"
                     r"header line 1: error: [^\n]*foo", text), text
    assert re.search(r"source line 2: error: [^\n]*bool\*[^\n]*in kjit's code", text), text


# ---------------------------------------------------------------------------------------------
# 3. Unsupported features fail before compiling, naming the feature and its line
# ---------------------------------------------------------------------------------------------

UNSUPPORTED = [
    ("metal-texture", "metal", "uint i = 0;\ntexture2d<float> t;\nout[i] = inp[i];\n", "",
     r"\[kjit\.metal_kernel\] 'texture2d' \(source line 2\) is not supported by the Metal "
     r"dialect: textures"),
    ("metal-texture-in-header", "metal", "out[0] = inp[0];", "\n\ntexture2d<float> t;\n",
     r"'texture2d' \(header line 3\) is not supported by the Metal dialect"),
    ("metal-waiting-helper-with-auto", "metal", "out[0] = total(inp[0]);",
     "\nauto total(float v) {\n  return simd_sum(v);\n}\n",
     r"\[kjit\.metal_kernel\] helper 'total' \(header line 2\) waits for other threads, so on "
     r"the CPU it must name its return type"),
]


@pytest.mark.parametrize("label,api,body,header,pattern", UNSUPPORTED,
                         ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_feature_fails_at_build(label, api, body, header, pattern):
    before = kjit.cache_info()["compiles"]
    with pytest.raises(ValueError, match=pattern) as excinfo:
        k = make(api, name="feature", input_names=["inp"], output_names=["out"], source=body,
                 header=header)
        k.build(inputs=[("float32", 1)], output_dtypes=["float32"])
    check_prefix(excinfo)
    assert kjit.cache_info()["compiles"] == before  # rejected without running the compiler


@pytest.mark.parametrize("label,api,body,header,pattern", UNSUPPORTED[:2],
                         ids=[u[0] for u in UNSUPPORTED[:2]])
def test_never_supported_feature_fails_when_the_kernel_is_made(label, api, body, header,
                                                               pattern):
    with pytest.raises(ValueError, match=pattern) as excinfo:
        make(api, name="feature", input_names=["inp"], output_names=["out"], source=body,
             header=header)
    check_prefix(excinfo)


LOOKALIKES = ["simd_lane_id", "atomic_count", "simd_total", "atomic_counter", "quad_sum_x",
              "sampler_id", "texture_size", "threadgroup_count", "simdgroup_size"]


@pytest.mark.parametrize("var", LOOKALIKES)
def test_user_names_that_look_like_metal_features_compile(var, rng):
    body = f"""
    uint {var} = thread_position_in_grid.x;
    out[{var}] = inp[{var}] * 3;
"""
    k = kjit.metal_kernel(name="lookalike", input_names=["inp"], output_names=["out"],
                          source=body)
    x = rng.standard_normal(19).astype(np.float32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
            threadgroup=(8, 1, 1), outputs=[poisoned(x.shape, np.float32)])[0]
    np.testing.assert_array_equal(out, x * 3)


def test_lookalike_input_names_compile(rng):
    body = """
    uint i = thread_position_in_grid.x;
    atomic_count[i] = simd_lane_id[i] + 1;
"""
    k = kjit.metal_kernel(name="lookalike_names", input_names=["simd_lane_id"],
                          output_names=["atomic_count"], source=body)
    x = rng.integers(-1000, 1000, size=23).astype(np.int32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
            threadgroup=(32, 1, 1))[0]
    np.testing.assert_array_equal(out, x + 1)


def test_feature_names_in_comments_compile(rng):
    body = """
    int i = threadIdx.x;  // no __syncthreads() or atomicAdd needed here
    /* threadgroup_barrier, simd_sum */
    out[i] = inp[i] - 1.0f;
"""
    k = kjit.cuda_kernel(name="comments", input_names=["inp"], output_names=["out"],
                         source=body)
    x = rng.standard_normal(16).astype(np.float32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(16, 1, 1),
            threadgroup=(16, 1, 1))[0]
    np.testing.assert_array_equal(out, x - np.float32(1))


@pytest.mark.parametrize("var", ["atomic_fetch_total", "simd_shuffled", "texture2d_size",
                                 "simd_prefix_len"])
def test_user_names_with_a_feature_prefix_compile(var, rng):
    body = f"uint {var} = thread_position_in_grid.x;\nout[{var}] = inp[{var}] * 3;\n"
    k = kjit.metal_kernel(name="prefix_lookalike", input_names=["inp"], output_names=["out"],
                          source=body)
    x = rng.standard_normal(8).astype(np.float32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(8, 1, 1),
            threadgroup=(8, 1, 1))[0]
    np.testing.assert_array_equal(out, x * 3)


# ---------------------------------------------------------------------------------------------
# 4. A failed compile is not cached, and does not disturb other kernels
# ---------------------------------------------------------------------------------------------

def test_failed_compile_is_not_cached(rng):
    body = "uint i = thread_position_in_grid.x;\nout[i] = inp[i] +* 2;\n"
    bad = make("metal", name="never_builds", input_names=["inp"], output_names=["out"],
               source=body)
    before = kjit.cache_info()
    for _ in range(2):
        with pytest.raises(kjit.CompileError, match=r"source line 2"):
            bad(**call_args())
    # The same kernel made again, and built without running: still a compile error.
    again = make("metal", name="never_builds", input_names=["inp"], output_names=["out"],
                 source=body)
    with pytest.raises(kjit.CompileError, match=r"source line 2"):
        again.build(inputs=[("float32", 1)], output_dtypes=["float32"])
    after = kjit.cache_info()
    assert after["compiles"] == before["compiles"]
    assert after["memory_entries"] == before["memory_entries"]

    # Other kernels still work, and so does the bad one's neighbour with the same name.
    good = make("metal", name="never_builds", input_names=["inp"], output_names=["out"],
                source=TWICE_METAL)
    x = rng.standard_normal(41).astype(np.float32)
    out = good(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
               grid=(x.size, 1, 1), threadgroup=(16, 1, 1))[0]
    np.testing.assert_array_equal(out, x * 2)
    with pytest.raises(kjit.CompileError):
        bad(**call_args())


def test_compile_error_for_one_signature_leaves_others_working(rng):
    # N is a template constant: without it the body does not compile.
    body = "uint i = thread_position_in_grid.x;\nout[i] = static_cast<T>(inp[i]) * N;\n"
    k = kjit.metal_kernel(name="needs_template", input_names=["inp"], output_names=["out"],
                          source=body)
    x = rng.standard_normal(30).astype(np.float32)
    args = dict(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                grid=(x.size, 1, 1), threadgroup=(32, 1, 1))
    with pytest.raises(kjit.CompileError, match=r"source line 2") as excinfo:
        k(**args, template=[("T", kjit.float32)])
    assert "'N'" in str(excinfo.value) or "N" in excinfo.value.log
    out = k(**args, template=[("T", kjit.float32), ("N", 3)])[0]
    np.testing.assert_array_equal(out, x * np.float32(3))
    with pytest.raises(kjit.CompileError):
        k(**args, template=[("T", kjit.float32)])
    out = k(**args, template=[("T", kjit.float32), ("N", -2)])[0]
    np.testing.assert_array_equal(out, x * np.float32(-2))


# ---------------------------------------------------------------------------------------------
# 5. A bad call does not break the kernel object
# ---------------------------------------------------------------------------------------------

def test_kernel_works_after_bad_calls(rng):
    k = twice("survivor")
    bad_calls = [
        dict(inputs=[X, X]),
        dict(output_shapes=[]),
        dict(output_dtypes=["int4"]),
        dict(grid=(N, 1, -1)),
        dict(threadgroup=(0, 1, 1)),
        dict(template=[("T", 1.5)]),
        dict(inputs=[{"not": "an array"}]),
        dict(outputs=[np.zeros(N + 1, np.float32)]),  # found after compiling
        dict(device="tpu"),
    ]
    if not cuda_present():
        bad_calls.append(dict(device="cuda:0"))
    for bad in bad_calls:
        with pytest.raises((ValueError, TypeError)):
            k(**call_args(**bad))
        x = rng.standard_normal(57).astype(np.float32)
        out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                grid=(x.size, 1, 1), threadgroup=(32, 1, 1))[0]
        np.testing.assert_array_equal(out, x * 2)

    # And into a preallocated output, after a bad outputs= call.
    with pytest.raises(ValueError, match=r"outputs\[0\] \('out'\) has dtype float64"):
        k(**call_args(outputs=[np.zeros(N, np.float64)]))
    x = rng.standard_normal((6, 7)).astype(np.float32)
    dest = poisoned(x.shape, np.float32)
    out = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
            threadgroup=(64, 1, 1), outputs=[dest])[0]
    assert out is dest
    np.testing.assert_array_equal(dest, x * 2)


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


# ---------------------------------------------------------------------------------------------
# Accepted inputs that must not be reported as errors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make_input", [
    lambda v: np.broadcast_to(v[:1], (N,)),
    lambda v: readonly(v),
], ids=["broadcast_to", "writeable-false"])
def test_read_only_inputs_are_accepted(make_input, rng):
    v = rng.standard_normal(N).astype(np.float32)
    x = make_input(v)
    out = twice("readonly_in")(**call_args(inputs=[x]))[0]
    np.testing.assert_array_equal(out, np.asarray(x) * 2)


def test_outputs_too_large_to_allocate_or_to_address_are_named():
    with pytest.raises(MemoryError, match=r"kernel 'twice': output_shapes\[0\] \('out'\): "
                                          r"18014398509481984 bytes could not be allocated on "
                                          r"the CPU"):
        twice()(**call_args(output_shapes=[(2**52,)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                            device="cpu"))
    # No element, but dimensions no array could address (NumPy could not make it either).
    with pytest.raises(ValueError, match=r"output_shapes\[0\]: too many elements"):
        twice()(**call_args(output_shapes=[(0, 2**62, 8)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                            device="cpu"))
    with pytest.raises(MemoryError, match=r"^18014398509481984 bytes could not be allocated"):
        kjit.empty((2**52,), device="cpu")


LONE_SURROGATE = "\ud800"  # a str with no UTF-8 form


def test_an_input_whose_export_fails_says_why():
    class Refusing:
        def __dlpack__(self, **kwargs):
            raise ValueError("no export today")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(TypeError, match=r"inputs\[0\] \('inp'\): expected an array .* got "
                                        r"'.*Refusing' \(its __dlpack__ raised ValueError: no "
                                        r"export today\)"):
        twice()(**call_args(inputs=[Refusing()]))


def test_an_export_that_returns_a_capsule_already_read_is_refused(rng):
    # A DLPack capsule is read once: its reader frees the memory it describes when done.
    x = rng.standard_normal(N).astype(np.float32)
    capsule = x.__dlpack__()

    class SameCapsule:
        def __dlpack__(self, **kwargs):
            return capsule

        def __dlpack_device__(self):
            return (1, 0)

    # kjit._kjit's factory: the tests' kjit.metal_kernel reads each call's inputs again.
    k = kjit._kjit.metal_kernel(name="twice", input_names=["inp"], output_names=["out"],
                                source=TWICE_METAL)
    (first,) = k(**call_args(inputs=[SameCapsule()], device="cpu"))
    np.testing.assert_allclose(first.numpy(), 2.0 * x.astype(np.float64), rtol=1e-6)
    with pytest.raises(ValueError, match=r"inputs\[0\] \('inp'\): its __dlpack__ returned a "
                                         r"capsule that was already read"):
        k(**call_args(inputs=[SameCapsule()], device="cpu"))


def test_a_stream_whose_handle_cannot_be_read_says_why():
    class Broken:
        def __cuda_stream__(self):
            raise RuntimeError("stream gone")

    with pytest.raises(TypeError, match=r"stream: reading the stream's handle raised "
                                        r"RuntimeError: stream gone"):
        twice()(**call_args(stream=Broken()))


@pytest.mark.parametrize("make,words", [
    (lambda: kjit.metal_kernel(name="k" + LONE_SURROGATE, input_names=["inp"],
                               output_names=["out"], source=""), r"name"),
    (lambda: kjit.cuda_kernel(name="k", input_names=["i" + LONE_SURROGATE], output_names=["out"],
                              source=""), r"input_names"),
    (lambda: kjit.metal_kernel(name="k", input_names=["inp"], output_names=["out"],
                               source=LONE_SURROGATE), r"source"),
    (lambda: twice()(**call_args(template=[("T" + LONE_SURROGATE, 1)])), r"template"),
    (lambda: twice()(**call_args(output_dtypes=["f" + LONE_SURROGATE])), r"output_dtypes\[0\]"),
    (lambda: twice()(**call_args(device="cpu" + LONE_SURROGATE)), r"device"),
    (lambda: twice().build(inputs=[(np.float32, 1)], output_dtypes=[np.float32],
                           target=LONE_SURROGATE), r"target"),
], ids=["name", "input-names", "source", "template", "output-dtypes", "device", "target"])
def test_text_without_a_utf8_form_names_its_parameter(make, words):
    with pytest.raises(ValueError, match=words + r": the text is not valid Unicode"):
        make()


@pytest.mark.parametrize("make,words", [
    (lambda: kjit.array(None), r"obj: expected an array"),
    (lambda: kjit.empty(None), r"shape: expected a sequence of ints"),
    (lambda: kjit.zeros((8,), dtype=None), r"dtype: expected a dtype"),
    (lambda: kjit.empty((8,), device=3), r"device: expected 'cpu', 'cuda' or 'cuda:N'"),
], ids=["array-none", "empty-shape-none", "zeros-dtype-none", "empty-device-int"])
def test_array_factories_name_the_bad_argument(make, words):
    with pytest.raises(TypeError, match="^" + words):
        make()


def test_read_only_memory_stays_read_only_through_kjit_array(rng):
    # A kjit.Array over read-only memory (a NumPy array, bytes) is no output.
    v = rng.standard_normal(N).astype(np.float32)
    frozen = readonly(v.copy())
    data = bytes(rng.integers(0, 256, 4 * N, dtype=np.uint8))
    for memory, view in ((frozen, kjit.array(frozen)),
                         (data, kjit.array(np.frombuffer(data, np.float32)))):
        before = bytes(memory)
        with pytest.raises(ValueError, match=r"outputs\[0\] \('out'\) is read-only"):
            twice("readonly_out")(**call_args(inputs=[v], outputs=[view]))
        assert bytes(memory) == before
        # As an input it is read as usual; other libraries see it read-only too.
        out = twice("readonly_in")(**call_args(inputs=[view]))[0]
        with np.errstate(invalid="ignore"):  # random bytes may spell a signalling NaN
            expected = np.frombuffer(before, np.float32) * 2
        np.testing.assert_array_equal(out, expected)
        for seen in (np.asarray(view), np.from_dlpack(view)):
            assert not seen.flags.writeable
            np.testing.assert_array_equal(seen, np.frombuffer(before, np.float32))


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


@pytest.mark.parametrize("n", [8, 1 << 14])  # on the calling thread, and on the worker pool
@pytest.mark.parametrize("access", BAD_ACCESSES)
def test_bad_memory_accesses_raise_on_the_cpu(access, n, rng):
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
    # kjit watches up to 1024 threads running kernels. The parent's pool of 700 threads all ran
    # kernel code before the fork; in the child they are gone, and their places are free for
    # the child's own pool of 700. The bad accesses lie in the second half of the grid, which
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


def test_ctrl_c_stops_a_cpu_kernel_that_would_never_end():
    # SIGINT stops the kernel, on the calling thread, on the pool, in region and in cooperative
    # mode, whether from outside the process or raised by the program, and Python raises
    # KeyboardInterrupt as it would; a call on another thread raises LaunchError; and in a child
    # forked after kernels ran. Each signal is sent once the kernel has written its output, so
    # it surely runs. A thread signalled inside malloc (which a kernel's thread-locals and
    # coroutine frames call too), stopped there, would leave a lock held, and the fork, which
    # takes every malloc lock, would wait for ever: one kernel spends most of its time there,
    # and with 16 pool threads and every case run twice, others are likely to be found there.
    program = textwrap.dedent('''
        import os, signal, threading, time
        import numpy as np, kjit
        signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the parent had
        LOOP = "unsigned i = blockIdx.x * blockDim.x + threadIdx.x; volatile float* o = out;"
        plain = kjit.cuda_kernel(name="forever", input_names=["x"], output_names=["out"],
                                 source=LOOP + "for (;;) o[i] = o[i] + x[i];")
        synced = kjit.cuda_kernel(name="forever_synced", input_names=["x"], output_names=["out"],
                                  source=LOOP + """
            __shared__ float s[64];
            for (;;) {
                s[threadIdx.x] = x[i];
                __syncthreads();
                o[i] = o[i] + s[(threadIdx.x + 1) % 64];
                __syncthreads();
            }""")
        shuffled = kjit.cuda_kernel(name="forever_shuffled", input_names=["x"],
                                    output_names=["out"], source=LOOP + """
            for (;;) o[i] = o[i] + __shfl_down_sync(0xffffffffu, x[i], 1);""")
        allocating = kjit.cuda_kernel(name="forever_allocating", input_names=["x"],
                                      output_names=["out"], source=LOOP + """
            for (;;) {
                volatile char* block = new char[1 << 16];  // beyond malloc's per-thread cache
                block[0] = 1;
                o[i] = o[i] + x[i] * block[0];
                delete[] block;
            }""")
        def call(kernel, out):
            kernel(inputs=[np.ones(out.size, np.float32)], output_shapes=[out.shape],
                   output_dtypes=[np.float32], grid=(out.size, 1, 1), threadgroup=(64, 1, 1),
                   device="cpu", outputs=[out])
        def interrupt_once_running(out, send):
            deadline = time.monotonic() + 60
            while not out.any() and time.monotonic() < deadline:
                time.sleep(0.001)
            send()
        from_outside = lambda: os.kill(os.getpid(), signal.SIGINT)
        raised = lambda: signal.raise_signal(signal.SIGINT)
        sleeping = kjit.cuda_kernel(name="forever_sleeping", input_names=["x"],
                                    output_names=["out"],
                                    header='extern "C" unsigned int sleep(unsigned int);',
                                    source=LOOP + """
            for (;;) {
                o[i] = x[i];
                sleep(1000);  // a library call that never returns for long
            }""")
        for kernel in (plain, synced, shuffled, allocating, sleeping):
            kernel.build(inputs=[(np.float32, 1)], output_dtypes=[np.float32])
        for kernel, n, send in 2 * [(plain, 1, from_outside), (plain, 1 << 15, from_outside),
                                    (synced, 64, from_outside), (synced, 1 << 15, from_outside),
                                    (shuffled, 1 << 15, from_outside), (plain, 1 << 15, raised),
                                    (allocating, 1 << 15, from_outside)]:
            out = np.zeros(n, np.float32)
            threading.Thread(target=interrupt_once_running, args=(out, send), daemon=True).start()
            try:
                call(kernel, out)
                print("returned", kernel.name, n)
            except KeyboardInterrupt:
                print("interrupted", kernel.name, n)
        # Two Ctrl-Cs at once (a double press, or one signal delivered twice) stop no thread inside
        # malloc either.
        double = lambda: (from_outside(), from_outside())
        for _ in range(40):
            out = np.zeros(1 << 15, np.float32)
            sender = threading.Thread(target=interrupt_once_running, args=(out, double),
                                      daemon=True)
            sender.start()
            try:
                call(allocating, out)
            except KeyboardInterrupt:
                pass
            try:  # the second may come once the first has stopped the kernel
                sender.join()
                time.sleep(0.001)
            except KeyboardInterrupt:
                pass
            if os.fork() == 0:  # which takes every malloc lock
                os._exit(0)
            os.wait()
        print("pressed twice at once")
        # Inside a library call for ever: a double press does not stop the kernel there; a
        # Ctrl-C a quarter of a second or more after it was found there does.
        spaced = lambda: (from_outside(), time.sleep(0.01), from_outside())  # not merged
        returned = threading.Event()
        def presses(out):
            interrupt_once_running(out, spaced)
            time.sleep(0.4)
            print("after a double press, still running:", not returned.is_set(), flush=True)
            while not returned.is_set():  # (a busy machine may find the thread outside late)
                from_outside()
                time.sleep(0.3)
        out = np.zeros(1, np.float32)
        presser = threading.Thread(target=presses, args=(out,), daemon=True)
        presser.start()
        try:
            call(sleeping, out)
        except KeyboardInterrupt:
            returned.set()
            print("interrupted", sleeping.name)
        try:  # a press may come as the kernel stops
            presser.join()
            time.sleep(0.001)
        except KeyboardInterrupt:
            pass
        failed = []
        out = np.zeros(1 << 15, np.float32)
        def elsewhere():
            try:
                call(plain, out)
            except kjit.LaunchError as e:
                failed.append(str(e).split(": ", 1)[1])
        thread = threading.Thread(target=elsewhere, daemon=True)
        thread.start()
        try:
            interrupt_once_running(out, from_outside)
            thread.join()
            time.sleep(30)
        except KeyboardInterrupt:
            print("main interrupted")
        thread.join()
        print("thread:", *failed)
        try:
            signal.raise_signal(signal.SIGINT)  # no kernel running: Python's handler as ever
            time.sleep(30)
        except KeyboardInterrupt:
            print("then interrupted")
        child = os.fork()  # the forking thread lives on in the child, with a new id
        if child == 0:
            out = np.zeros(1, np.float32)
            threading.Thread(target=interrupt_once_running, args=(out, from_outside),
                             daemon=True).start()
            try:
                call(plain, out)
            except KeyboardInterrupt:
                os._exit(0)
            os._exit(1)
        print("forked child interrupted", os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0)
        x = np.arange(1000, dtype=np.float32)
        twice = kjit.metal_kernel(name="twice", input_names=["x"], output_names=["out"],
                                  source="uint i = thread_position_in_grid.x; out[i] = 2 * x[i];")
        (out,) = twice(inputs=[x], output_shapes=[(1000,)], output_dtypes=[np.float32],
                       grid=(1000, 1, 1), threadgroup=(64, 1, 1), device="cpu")
        print("then", np.array_equal(out, 2 * x))
    ''')
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, KJIT_NUM_THREADS="16"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == 2 * [
        "interrupted forever 1", "interrupted forever 32768", "interrupted forever_synced 64",
        "interrupted forever_synced 32768", "interrupted forever_shuffled 32768",
        "interrupted forever 32768", "interrupted forever_allocating 32768"] + [
        "pressed twice at once", "after a double press, still running: True",
        "interrupted forever_sleeping", "main interrupted",
        "thread: SIGINT (Ctrl-C) stopped the kernel on the CPU. The outputs are incomplete",
        "then interrupted", "forked child interrupted True", "then True"], done.stdout


def test_ctrl_c_during_a_compile_raises_keyboard_interrupt(tmp_path):
    # The terminal's Ctrl-C signals the whole process group, the compiler with it. A compiler
    # slow to start (a wrapper that sleeps first) makes the compile long enough to signal.
    slow = tmp_path / "slow-c++"
    real = kjit._kjit.host_compiler()[0]
    slow.write_text(f"#!/bin/sh\nsleep 20\nexec {real} \"$@\"\n")
    slow.chmod(0o755)
    program = textwrap.dedent('''
        import os, signal, threading
        import numpy as np, kjit
        signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the parent had
        k = kjit.metal_kernel(name="never_built", input_names=["x"], output_names=["out"],
                              source="out[thread_position_in_grid.x] = 1.0f;")
        threading.Timer(1.0, os.killpg, (0, signal.SIGINT)).start()
        try:
            k(inputs=[np.ones(4, np.float32)], output_shapes=[(4,)], output_dtypes=[np.float32],
              grid=(4, 1, 1), threadgroup=(4, 1, 1), device="cpu")
        except KeyboardInterrupt:
            print("interrupted")
    ''')
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, start_new_session=True,
                          env=dict(os.environ, KJIT_CXX=str(slow)))
    assert done.returncode == 0 and done.stdout == "interrupted\n", (done.stdout,
                                                                      done.stderr[-2000:])


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
            out = np.zeros(1, np.float32)
            threading.Thread(target=forever, daemon=True, kwargs=dict(
                inputs=[np.ones(1, np.float32)], output_shapes=[(1,)], output_dtypes=[np.float32],
                grid=(1, 1, 1), threadgroup=(1, 1, 1), device="cpu", outputs=[out])).start()
            while out[0] == 0:
                pass
        ctypes.string_at(0)
    """)
    done = subprocess.run([sys.executable, "-c", program, str(while_running)], capture_output=True,
                          timeout=120)
    assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stderr[-2000:])
