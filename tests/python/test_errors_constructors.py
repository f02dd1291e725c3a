"""Wrong arguments to kjit.metal_kernel / kjit.cuda_kernel: the right exception type, and a
message that names the API, the parameter and what is wrong with it."""


import pytest

import kjit
from error_cases import case_ids, check_prefix, make


CONSTRUCTION_ERRORS = [
    # name
    ("name-non-ascii", "metal", dict(name="caf\u00e9"), ValueError,
     r"\[kjit\.metal_kernel\] name: 'caf\u00e9' is not a valid identifier: a kernel name has "
     r"only ASCII letters, digits and underscores"),
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
    # digraphs are the braces they spell
    ("source-closes-the-function-with-a-digraph", "cuda",
     dict(source="o[0] = a[0];\n%>\nint evil() { return 1; }\nvoid more() <%"), ValueError,
     r"'\}' \(source line 2\) closes a brace the text did not open"),
    ("source-closes-the-function-in-digraphs", "metal", dict(source="} int evil() { %>"),
     ValueError, r"'\}' \(source line 1\) closes a brace the text did not open"),
    ("header-never-closed-digraph", "metal", dict(header="namespace q <%\n"), ValueError,
     r"'\{' \(header line 1\) is never closed"),
    # line continuations are spliced as the compiler splices them
    ("source-closes-the-function-through-a-continuation", "cuda",
     dict(source="o[0] = a[0];\n%\\\n>\nint evil() { return 1; }\nvoid more() <%"), ValueError,
     r"'>' \(source line 3\) follows a line continuation that joins it to the token before it"),
    ("comment-continued-hides-a-brace", "metal",
     dict(source="o[0] = a[0]; // note \\\n}\nvoid f() {"), ValueError,
     r"'\{' \(source line 3\) is never closed"),
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
     ValueError, r"compile_options: unknown option 'fast_math' \(known: 'math_mode', 'debug', 'line_info'\)"),
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


@pytest.mark.parametrize("label,api,overrides,exc,pattern", CONSTRUCTION_ERRORS,
                         ids=case_ids(CONSTRUCTION_ERRORS))
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
