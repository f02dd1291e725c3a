"""Compile errors point at the user's own lines, in the body or the header, and waits the
CPU cannot run are refused before compiling."""

import re

import numpy as np
import pytest

import kjit
from error_cases import N, X, call_args, make


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
