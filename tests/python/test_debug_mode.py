"""Debug builds (compile_options={"debug": True}, or KJIT_DEBUG=1): every index into an input or
output is checked, and the first outside its array is a LaunchError naming the array, the
index, the array's indices, the body line, the thread and its threadgroup; fresh outputs start
poisoned and elements never written are reported. Planted bugs of each kind, on the CPU and
the GPU, and clean kernels that report nothing."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kjit
from conftest import DEVICES, NVRTC

DEBUG = {"debug": True}

# Line 3 of each body reads inp and writes out (the first line is empty).
DOUBLE = """
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] * 2.0f;
"""
DOUBLE_CUDA = """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = inp[i] * 2.0f;
"""


def copying_kernel(dialect, name, source, header="", compile_options=DEBUG):
    """A kernel of |dialect| from input inp to output out."""
    make = kjit.metal_kernel if dialect == "metal" else kjit.cuda_kernel
    return make(name=name, input_names=["inp"], output_names=["out"], header=header,
                source=source, compile_options=compile_options)


def launch_error(kernel, x, out_size, threads, device):
    """The message of the LaunchError that one group of |threads| over |x| raises."""
    with pytest.raises(kjit.LaunchError) as e:
        kernel(inputs=[x], output_shapes=[(out_size,)], output_dtypes=[x.dtype],
               grid=(threads, 1, 1), threadgroup=(threads, 1, 1), device=device)
    return str(e.value)


def double(dialect="metal", **options):
    if dialect == "metal":
        return kjit.metal_kernel(name="debug_double", input_names=["inp"], output_names=["out"],
                                 source=DOUBLE, compile_options={**DEBUG, **options})
    return kjit.cuda_kernel(name="debug_double", input_names=["inp"], output_names=["out"],
                            source=DOUBLE_CUDA, compile_options={**DEBUG, **options})


def run(kernel, x, grid, threadgroup=(256, 1, 1), device="cpu", **kw):
    return kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=grid,
                  threadgroup=threadgroup, device=device, **kw)[0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dialect", ["metal", "cuda"])
def test_a_grid_rounded_up_past_the_arrays_is_reported_with_its_thread(rng, device, dialect):
    x = rng.standard_normal(1000).astype(np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        run(double(dialect), x, (1024, 1, 1), device=device)
    message = str(e.value)
    assert "debug_double" in message
    # The read of inp comes first in the statement, so it is the one reported, by thread 1000
    # (the first past the end: the pool runs groups in order, and only the last has such threads).
    assert "inputs[0] ('inp') was indexed at 10" in message
    assert "its indices are 0 to 999" in message
    assert "at line 3 of the source" in message
    assert "in threadgroup (3, 0, 0)" in message


@pytest.mark.parametrize("device", DEVICES)
def test_a_clean_kernel_reports_nothing_and_computes_the_same(rng, device):
    x = rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(run(double(), x, (1000, 1, 1), device=device), x * 2)
    # A bound kernel (and its launches made again) is checked the same.
    bound = double().bind(output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(1000, 1, 1),
                          threadgroup=(256, 1, 1), device=device)
    for _ in range(3):
        y = rng.standard_normal(1000).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(bound(y)[0]), y * 2)
    short = double().bind(output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(1024, 1, 1),
                          threadgroup=(256, 1, 1), device=device)
    for _ in range(3):
        with pytest.raises(kjit.LaunchError, match=r"inputs\[0\] \('inp'\) was indexed at 10"):
            short(x)


def test_an_out_of_bounds_write_is_skipped_and_reported_with_the_thread_and_group():
    # One thread of a 2-D grid writes past the output: what lies after it is never touched.
    kernel = kjit.metal_kernel(name="debug_stray_write", input_names=["inp"],
                               output_names=["out"], compile_options=DEBUG, source="""
        uint2 p = thread_position_in_grid.xy;
        uint i = p.y * 16 + p.x;
        out[i] = inp[i];
        if (p.x == 13 && p.y == 6) out[i + 5000] = -1.0f;
    """)
    x = np.arange(128, dtype=np.float32)
    base = np.full(6000, 7.0, np.float32)
    with pytest.raises(kjit.LaunchError) as e:
        kernel(inputs=[x], output_shapes=[(128,)], output_dtypes=[np.float32], grid=(16, 8, 1),
               threadgroup=(4, 4, 1), outputs=[base[:128]])
    message = str(e.value)
    assert "outputs[0] ('out') was indexed at 5109" in message
    assert "its indices are 0 to 127" in message
    assert "at line 5 of the source" in message
    assert "by the thread at (13, 6, 0) in the grid (in threadgroup (3, 1, 0))" in message
    np.testing.assert_array_equal(base[:128], x)
    np.testing.assert_array_equal(base[128:], 7.0)


@pytest.mark.parametrize("device", DEVICES)
def test_a_negative_index_is_reported(rng, device):
    kernel = kjit.metal_kernel(name="debug_previous", input_names=["inp"], output_names=["out"],
                               compile_options=DEBUG, source="""
        int i = int(thread_position_in_grid.x);
        out[i] = inp[i - 1];
    """)
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(kjit.LaunchError,
                       match=r"inputs\[0\] \('inp'\) was indexed at -1, outside the array "
                             r"\(its indices are 0 to 63\), at line 3 of the source, by the "
                             r"thread at \(0, 0, 0\) in the grid \(in threadgroup \(0, 0, 0\)\)"):
        run(kernel, x, (64, 1, 1), threadgroup=(32, 1, 1), device=device)


def test_a_strided_view_is_checked_against_the_memory_it_spans(rng):
    # inp reversed: its elements lie at indices -99 to 0 from its first one.
    kernel = kjit.metal_kernel(name="debug_strided", input_names=["inp"], output_names=["out"],
                               ensure_row_contiguous=False, compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        out[i] = inp[elem_to_loc(i, inp_shape, inp_strides, inp_ndim)] + (i == 99 ? inp[1] : 0.0f);
    """)
    x = rng.standard_normal(100).astype(np.float32)
    with pytest.raises(kjit.LaunchError, match=r"indexed at 1, outside the array \(its indices "
                                               r"are -99 to 0\)"):
        run(kernel, x[::-1], (100, 1, 1))
    clean = kjit.metal_kernel(name="debug_strided_clean", input_names=["inp"],
                              output_names=["out"], ensure_row_contiguous=False,
                              compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        out[i] = inp[elem_to_loc(i, inp_shape, inp_strides, inp_ndim)];
    """)
    np.testing.assert_array_equal(run(clean, x[::-1], (100, 1, 1)), x[::-1])


@pytest.mark.parametrize("device", DEVICES)
def test_output_elements_never_written_are_reported(rng, device):
    x = rng.standard_normal(1000).astype(np.float32)
    with pytest.raises(kjit.LaunchError,
                       match=r"outputs\[0\] \('out'\): 10 of 1000 elements still hold the poison "
                             r"fresh outputs start with \(indices 990 to 999\): never written"):
        run(double(), x, (990, 1, 1), device=device)
    gaps = kjit.metal_kernel(name="debug_gaps", input_names=["inp"], output_names=["out"],
                             compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        if (i % 10 != 3 && i != 7) out[i] = inp[i];
    """)
    with pytest.raises(kjit.LaunchError,
                       match=r"5 of 40 elements still hold the poison fresh outputs start with "
                             r"\(indices 3, 7, 13, 23 and 1 more range\)"):
        run(gaps, x[:40], (40, 1, 1), device=device)


@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int32, np.float32, np.float64])
def test_values_equal_to_the_first_poison_are_not_reported(dtype):
    # Every element written with the bytes of the first poison: a second run tells them apart.
    kernel = kjit.metal_kernel(name="debug_pattern", input_names=["inp"], output_names=["out"],
                               compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        out[i] = inp[i];
    """)
    first_poison = {np.dtype(np.float32): 0x7FE5A5A5, np.dtype(np.float64): 0x7FFCA5A5A5A5A5A5}
    dt = np.dtype(dtype)
    item = first_poison.get(dt, int.from_bytes(b"\xa5" * dt.itemsize, "little"))
    x = np.frombuffer(item.to_bytes(dt.itemsize, "little") * 256, dt)
    out = run(kernel, x, (x.size, 1, 1))
    np.testing.assert_array_equal(out.view(np.uint8), x.view(np.uint8))


def test_outputs_with_an_init_value_or_given_are_not_poisoned(rng):
    half = kjit.metal_kernel(name="debug_half", input_names=["inp"], output_names=["out"],
                             compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        if (i < 50) out[i] = inp[i];
    """)
    x = rng.standard_normal(100).astype(np.float32)
    out = run(half, x, (100, 1, 1), init_value=3.0)
    np.testing.assert_array_equal(out[:50], x[:50])
    np.testing.assert_array_equal(out[50:], 3.0)
    given = np.full(100, -2.0, np.float32)
    half(inputs=[x], output_shapes=[(100,)], output_dtypes=[np.float32], grid=(100, 1, 1),
         threadgroup=(32, 1, 1), outputs=[given])
    np.testing.assert_array_equal(given[:50], x[:50])
    np.testing.assert_array_equal(given[50:], -2.0)


SHARED = """
    threadgroup float tile[64];
    uint l = thread_position_in_threadgroup.x;
    uint i = thread_position_in_grid.x;
    tile[l] = inp[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tile[63 - l] + simd_sum(0.0f);
"""


@pytest.mark.parametrize("device", DEVICES)
def test_kernels_with_barriers_and_simdgroup_functions_are_checked(rng, device):
    kernel = kjit.metal_kernel(name="debug_shared", input_names=["inp"], output_names=["out"],
                               compile_options=DEBUG, source=SHARED)
    x = rng.standard_normal(256).astype(np.float32)
    want = x.reshape(4, 64)[:, ::-1].ravel()
    np.testing.assert_array_equal(run(kernel, x, (256, 1, 1), (64, 1, 1), device=device), want)
    with pytest.raises(kjit.LaunchError, match=r"inputs\[0\] \('inp'\) was indexed at 2[0-9][0-9], "
                                               r"outside the array \(its indices are 0 to 199\), "
                                               r"at line 5 of the source"):
        run(kernel, x[:200], (256, 1, 1), (64, 1, 1), device=device)


def test_debug_builds_are_kept_apart_from_the_others(rng):
    x = rng.standard_normal(100).astype(np.float32)
    plain = kjit.metal_kernel(name="debug_double", input_names=["inp"], output_names=["out"],
                              source=DOUBLE)
    out = run(plain, x, (90, 1, 1))  # no check: the last ten elements are whatever they were
    np.testing.assert_array_equal(out[:90], x[:90] * 2)
    with pytest.raises(kjit.LaunchError, match="never written"):
        run(double(), x, (90, 1, 1))


def test_bad_debug_options_name_the_parameter():
    for value in (1, "yes", None):
        with pytest.raises(TypeError, match=r"compile_options\['debug'\]: expected a bool"):
            kjit.metal_kernel(name="k", input_names=["a"], output_names=["b"], source="",
                              compile_options={"debug": value})
    with pytest.raises(ValueError, match=r"known: 'math_mode', 'debug'"):
        kjit.metal_kernel(name="k", input_names=["a"], output_names=["b"], source="",
                          compile_options={"debugging": True})


def _run_with_environment(value: str) -> subprocess.CompletedProcess:
    script = textwrap.dedent(f"""
        import warnings
        import numpy as np
        import kjit
        warnings.simplefilter("always")
        k = kjit.metal_kernel(name="env_debug", input_names=["inp"], output_names=["out"],
                              source={DOUBLE!r})
        x = np.ones(100, np.float32)
        try:
            k(inputs=[x], output_shapes=[(100,)], output_dtypes=[np.float32], grid=(128, 1, 1),
              threadgroup=(64, 1, 1), outputs=[np.zeros(1000, np.float32)[:100]])
            print("no report")
        except kjit.LaunchError as e:
            print("report:", e)
    """)
    env = dict(os.environ, KJIT_DEBUG=value)
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=120)


def test_kjit_debug_turns_the_checks_on_for_every_kernel():
    on = _run_with_environment("1")
    assert "report:" in on.stdout and "inputs[0] ('inp') was indexed at 100" in on.stdout, on
    # A plain build: its output guards see the write past the output (a view of a larger
    # array, written through a guarded copy), but no index is checked.
    guarded = "outputs[0] ('out') was written 112 bytes past its end"
    off = _run_with_environment("0")
    assert "debug check" not in off.stdout and guarded in off.stdout, off
    bad = _run_with_environment("yes")
    assert "debug check" not in bad.stdout and guarded in bad.stdout, bad
    assert "KJIT_DEBUG: expected 0 or 1, got 'yes'" in bad.stderr, bad


def test_member_names_casts_and_matrix_loads_keep_compiling(rng):
    # An array named x is not thread_position_in_grid's member x.
    named_x = kjit.metal_kernel(name="debug_named_x", input_names=["x"], output_names=["y"],
                                compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        y[i] = x[i] + 1.0f;
    """)
    a = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(run(named_x, a, (64, 1, 1)), a + 1)
    with pytest.raises(kjit.LaunchError, match=r"inputs\[0\] \('x'\) was indexed at 64"):
        run(named_x, a, (65, 1, 1))
    # reinterpret_cast takes the array's pointer (unchecked), as the body expects.
    vectors = kjit.cuda_kernel(name="debug_vectors", input_names=["inp"], output_names=["out"],
                               compile_options=DEBUG, source="""
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(inp)[i];
    """)
    np.testing.assert_array_equal(run(vectors, a, (16, 1, 1)), a)
    # Functions given the array itself get its pointer, unchecked: kjit's simdgroup_load and
    # atomics as a header's own functions.
    matrix = kjit.metal_kernel(name="debug_matrix", input_names=["inp"], output_names=["out"],
                               compile_options=DEBUG, source="""
        simdgroup_float8x8 m;
        simdgroup_load(m, inp, 8);
        simdgroup_store(m, out, 8);
    """)
    np.testing.assert_array_equal(run(matrix, a, (32, 1, 1), (32, 1, 1)), a)


@pytest.mark.parametrize("device", DEVICES)
def test_bodies_that_use_the_arrays_as_pointers_keep_compiling(rng, device):
    x = rng.standard_normal(64).astype(np.float32)
    # CUDA: a sum by atomicAdd on the output's pointer, arrays moved by +=, and a macro.
    total = kjit.cuda_kernel(name="debug_pointers", input_names=["inp"], output_names=["out"],
                             compile_options=DEBUG, source="""
        #define AT(j) inp[j]
        const float* row = inp;
        row += threadIdx.x;
        atomicAdd(out, *row + AT(threadIdx.x) * 0.0f);
    """)
    got = total(inputs=[x], output_shapes=[(1,)], output_dtypes=[np.float32], grid=(64, 1, 1),
                threadgroup=(64, 1, 1), init_value=0.0, device=device)[0]
    np.testing.assert_allclose(got, [x.astype(np.float64).sum()], rtol=1e-5)
    # Metal: atomic outputs given by pointer, and "and" read as the operator it is.
    metal = kjit.metal_kernel(name="debug_metal_pointers", input_names=["inp"],
                              output_names=["out"], atomic_outputs=True, compile_options=DEBUG,
                              source="""
        uint i = thread_position_in_grid.x;
        float v = (i < 64 and inp[i] > -100.0f) ? inp[i] : 0.0f;
        atomic_fetch_add_explicit(out, v, memory_order_relaxed);
        if (i == 63 and inp[i + 1] > 0.0f) atomic_fetch_add_explicit(out, 0.0f, memory_order_relaxed);
    """)
    with pytest.raises(kjit.LaunchError, match=r"inputs\[0\] \('inp'\) was indexed at 64, "
                                               r"outside the array \(its indices are 0 to 63\), "
                                               r"at line 5 of the source"):
        metal(inputs=[x], output_shapes=[(1,)], output_dtypes=[np.float32], grid=(64, 1, 1),
              threadgroup=(64, 1, 1), init_value=0.0, device=device)


# Histograms: each thread adds one to its value's bin of 16 through the atomic operation's
# pointer (line 4); a value of 16 or more falls past the last bin.
HISTOGRAMS = {"cuda": ("""
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* bins = out;
    atomicAdd(out + (int)inp[i], bins[0] * 0.0f + 1.0f);
""", False), "metal": ("""
    uint i = thread_position_in_grid.x;
    const uint bin = uint(inp[i]);
    atomic_fetch_add_explicit(out + bin, 1.0f, memory_order_relaxed);
""", True)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dialect", HISTOGRAMS)
def test_atomic_operations_are_checked_at_the_element_they_reach(rng, device, dialect):
    source, atomic = HISTOGRAMS[dialect]
    make = kjit.metal_kernel if dialect == "metal" else kjit.cuda_kernel
    kernel = make(name="debug_histogram", input_names=["inp"], output_names=["out"],
                  source=source, compile_options=DEBUG,
                  **({"atomic_outputs": True} if atomic else {}))
    values = rng.integers(0, 16, 256)

    def histogram(v):
        return kernel(inputs=[v.astype(np.float32)], output_shapes=[(16,)],
                      output_dtypes=[np.float32], grid=(256, 1, 1), threadgroup=(64, 1, 1),
                      init_value=0.0, device=device)[0]

    np.testing.assert_array_equal(histogram(values), np.bincount(values, minlength=16))
    values[100] = 16
    with pytest.raises(kjit.LaunchError) as e:
        histogram(values)
    message = str(e.value)
    assert "outputs[0] ('out') was indexed at 16" in message, message
    assert "at line 4 of the source, by the thread at (100, 0, 0)" in message, message


# Line 5 reads and writes through pointers the body derived from inp and out (line 1 is empty).
DERIVED = {"metal": """
    uint i = thread_position_in_grid.x;
    const device float* row = inp + i * 4;
    device float* dst = out + i * 4;
    for (uint j = 0; j < 4; ++j) dst[j] = row[j] * 2.0f;
""", "cuda": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    auto row = inp + i * 4;
    float* dst = out + i * 4;
    for (int j = 0; j < 4; ++j) dst[j] = row[j] * 2.0f;
"""}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dialect", ["metal", "cuda"])
def test_pointers_derived_from_the_arrays_are_checked_at_the_index_they_reach(rng, device,
                                                                               dialect):
    kernel = copying_kernel(dialect, "debug_rows", DERIVED[dialect])
    x = rng.standard_normal(1000).astype(np.float32)
    # Four elements a thread: 250 threads cover the arrays, and report nothing.
    np.testing.assert_array_equal(run(kernel, x, (250, 1, 1), (50, 1, 1), device=device), 2 * x)
    # Rounded up to 256: thread 250's row starts at inp[1000], read before dst is written.
    with pytest.raises(kjit.LaunchError) as e:
        run(kernel, x, (256, 1, 1), (64, 1, 1), device=device)
    message = str(e.value)
    assert "inputs[0] ('inp') was indexed at 10" in message, message
    assert "its indices are 0 to 999), at line 5 of the source" in message, message
    assert "in threadgroup (3, 0, 0)" in message, message


# Vector accesses through pointers cast from the arrays, declared or made in place: the body,
# and the line of its first access past the input.
VECTORS = {"metal declared": ("metal", """
    uint i = thread_position_in_grid.x;
    const device float4* in4 = (const device float4*)(inp + 4 * i);
    device float4* out4 = reinterpret_cast<device float4*>(out);
    const float4 v = in4[0];
    out4[i] = v * 2.0f;
""", 5), "cuda declared": ("cuda", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4* in4 = reinterpret_cast<const float4*>(inp) + i;
    float4* out4 = (float4*)(out + 4 * i);
    const float4 v = in4[0];
    *out4 = make_float4(v.x * 2.0f, v.y * 2.0f, v.z * 2.0f, v.w * 2.0f);
""", 5), "metal in place": ("metal", """
    uint i = thread_position_in_grid.x;
    const float4 v = ((const device float4*)inp)[i];
    *((device float4*)(out + 4 * i)) = v * 2.0f;
""", 3), "metal in place of a pointer": ("metal", """
    uint i = thread_position_in_grid.x;
    const device float* row = inp + 4 * i;
    const float4 v = *(const device float4*)row;
    ((device float4*)out)[i] = v * 2.0f;
""", 4), "cuda reinterpret_cast in place": ("cuda", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 v = reinterpret_cast<const float4*>(inp)[i];
    *reinterpret_cast<float4*>(&out[4 * i]) = make_float4(2 * v.x, 2 * v.y, 2 * v.z, 2 * v.w);
""", 3), "cuda element's address cast": ("cuda", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 v = *(const float4*)&inp[4 * i];
    *(float4*)&out[4 * i] = make_float4(2 * v.x, 2 * v.y, 2 * v.z, 2 * v.w);
""", 3), "cuda moved in place": ("cuda", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* row = inp + 4 * i;
    const float4 v = *(const float4*)(row);
    for (int j = 0; j < 4; ++j) *(out + 4 * i + j) = (row + j)[0] * 2.0f;
""", 4)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", VECTORS)
def test_pointers_cast_to_vectors_are_checked_by_the_elements_they_cover(rng, device, form):
    dialect, source, line = VECTORS[form]
    kernel = copying_kernel(dialect, "debug_vectors4", source)
    x = rng.standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(run(kernel, x, (250, 1, 1), (50, 1, 1), device=device), 2 * x)
    # Thread 250's vector covers elements 1000 to 1003 of 1002: the first outside is reported.
    message = launch_error(kernel, rng.standard_normal(1002).astype(np.float32), 1002, 251, device)
    assert "inputs[0] ('inp') was indexed at 1002" in message, message
    assert f"its indices are 0 to 1001), at line {line} of the source" in message, message
    assert "by the thread at (250, 0, 0)" in message, message


def test_writes_through_pointers_cast_in_place_are_checked(rng):
    # Reads in bounds, the vector written past the output: reported, and nothing written there.
    kernel = kjit.metal_kernel(name="debug_in_place_write", input_names=["inp"],
                               output_names=["out"], compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        if (i % 2 == 1) ((device float2*)out)[i] = float2(inp[i], inp[i]);
    """)
    x = rng.standard_normal(8).astype(np.float32)
    guarded = np.full(16, 7.0, np.float32)
    # Thread 5 writes elements 10 and 11 of 8.
    with pytest.raises(kjit.LaunchError) as e:
        kernel(inputs=[x], output_shapes=[(8,)], output_dtypes=[np.float32], grid=(6, 1, 1),
               threadgroup=(6, 1, 1), outputs=[guarded[:8]])
    message = str(e.value)
    assert "outputs[0] ('out') was indexed at 10" in message, message
    assert "at line 3 of the source" in message, message
    np.testing.assert_array_equal(guarded[8:], 7.0)
    for i in (1, 3):
        np.testing.assert_array_equal(guarded[2 * i:2 * i + 2], x[i])


@pytest.mark.parametrize("device", DEVICES)
def test_a_pointer_declared_without_a_value_is_checked_in_the_array_assigned_to_it(rng, device):
    kernel = kjit.cuda_kernel(name="debug_assigned_later", input_names=["inp"],
                              output_names=["out"], compile_options=DEBUG, source="""
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        const float* p;
        if (i % 2 == 0) p = inp + i; else p = &inp[i - 1];
        out[i] = p[i % 2];
    """)
    x = rng.standard_normal(100).astype(np.float32)
    np.testing.assert_array_equal(run(kernel, x, (100, 1, 1), (50, 1, 1), device=device), x)
    with pytest.raises(kjit.LaunchError) as e:
        run(kernel, x[:99].copy(), (100, 1, 1), (50, 1, 1), device=device)
    message = str(e.value)
    assert "inputs[0] ('inp') was indexed at 99" in message, message
    assert "at line 5 of the source, by the thread at (99, 0, 0)" in message, message


def test_a_name_declared_twice_stays_unchecked_and_keeps_compiling(rng):
    # The accesses of r, declared as a pointer in one block and as a float in the next.
    kernel = kjit.metal_kernel(name="debug_declared_twice", input_names=["inp"],
                               output_names=["out"], compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        out[i] = inp[i];
        { const device float* r = inp; out[i] += r[i]; }
        { float r = 3.0f; out[i] *= r; }
    """)
    x = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(run(kernel, x, (64, 1, 1), (64, 1, 1)), (x + x) * 3)


@pytest.mark.parametrize("device", DEVICES)
def test_pointers_stepped_as_they_are_accessed_are_checked_where_they_pointed(rng, device):
    # Each thread copies a row of four through stepping pointers; reads and writes in turn.
    kernel = kjit.cuda_kernel(name="debug_stepping", input_names=["inp"], output_names=["out"],
                              compile_options=DEBUG, source="""
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        const float* src = inp + 4 * i;
        float* dst = out + 4 * i;
        for (int j = 0; j < 4; ++j) *dst++ = 2.0f * *src++;
        const float* last = inp + 4 * i + 4;
        out[4 * i] += *last--;
        out[4 * i] -= *last;
    """)

    def call(x):
        return kernel(inputs=[x], output_shapes=[(100,)], output_dtypes=[np.float32],
                      grid=(25, 1, 1), threadgroup=(25, 1, 1), device=device)[0]

    x = rng.standard_normal(101).astype(np.float32)
    expected = 2 * x[:100]
    expected[::4] += x[4::4]
    expected[::4] -= x[3:100:4]
    np.testing.assert_array_equal(call(x), expected)
    # Thread 24's last element is inp[100] of 100, read at line 7.
    with pytest.raises(kjit.LaunchError) as e:
        call(x[:100].copy())
    message = str(e.value)
    assert "inputs[0] ('inp') was indexed at 100" in message, message
    assert "at line 7 of the source, by the thread at (24, 0, 0)" in message, message


@pytest.mark.parametrize("device", DEVICES)
def test_pointers_stepped_before_they_are_accessed_are_checked_where_they_point(rng, device):
    kernel = kjit.metal_kernel(name="debug_stepping_first", input_names=["inp"],
                               output_names=["out"], compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        const device float* p = inp + i;
        out[i] = *++p;
    """)

    def call(x):
        return kernel(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32],
                      grid=(64, 1, 1), threadgroup=(64, 1, 1), device=device)[0]

    x = rng.standard_normal(65).astype(np.float32)
    np.testing.assert_array_equal(call(x), x[1:])
    with pytest.raises(kjit.LaunchError) as e:
        call(x[:64].copy())
    message = str(e.value)
    assert "inputs[0] ('inp') was indexed at 64" in message, message
    assert "at line 4 of the source, by the thread at (63, 0, 0)" in message, message


DIMS = {"metal": """
    uint i = thread_position_in_grid.x;
    const float rows = float(inp_shape[0]);
    out[i] = inp[i] * float(inp_shape[inp_ndim - 1]) + rows * float(inp_strides[1]);
""", "cuda": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float rows = float(inp_shape[0]);
    out[i] = inp[i] * float(inp_shape[inp_ndim - 1]) + rows * float(inp_strides[1]);
"""}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dialect", ["metal", "cuda"])
def test_shapes_and_strides_are_checked_against_the_inputs_dimensions(rng, device, dialect):
    kernel = copying_kernel(dialect, "debug_dims", DIMS[dialect])

    def call(x):
        return kernel(inputs=[x], output_shapes=[(x.size,)], output_dtypes=[np.float32],
                      grid=(x.size, 1, 1), threadgroup=(x.size, 1, 1), device=device)[0]

    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(call(x), x.ravel() * 4 + 3 * 1)
    # One dimension: inp_strides[1] is past it.
    with pytest.raises(kjit.LaunchError) as e:
        call(x.ravel())
    message = str(e.value)
    assert ("'inp_strides' (the strides of inputs[0]) was indexed at 1, outside the array (its "
            "indices are 0 to 0), at line 4 of the source") in message, message


# Bodies that stay inside their arrays, written with the pointer forms the checks rewrite and
# with forms that look like them: (dialect, header, body) for 256 threads over 256 elements.
POINTER_FORMS = {"vectors cast in place": ("metal", "", """
    uint i = thread_position_in_grid.x;
    if (i % 4 == 0) ((device float4*)out)[i / 4] = ((const device float4*)(inp))[i / 4] * 2.0f;
"""), "a cast of a cast": ("metal", "", """
    uint i = thread_position_in_grid.x;
    out[i] = ((const device float*)(const device void*)inp)[i];
"""), "values cast and products": ("metal", "", """
    uint i = thread_position_in_grid.x;
    const float first = (float)*inp;
    out[i] = first * (inp + i)[0] + (i > 0 ? *(inp + i - 1) : 0.0f);
"""), "a call's result indexed": ("metal", """
    inline const device float* shifted(const device float* p, uint k) { return p + k; }
""", """
    uint i = thread_position_in_grid.x;
    out[i] = i > 0 ? shifted(inp, 1)[i - 1] : (shifted)(inp, 0)[0];
"""), "a lambda after a condition": ("metal", "", """
    uint i = thread_position_in_grid.x;
    if (i < 256) [&] { out[i] = *(inp + i) + 1.0f; }();
"""), "a pointer stepped in a loop": ("metal", "", """
    uint i = thread_position_in_grid.x;
    const device float* p = inp + (i / 8) * 8;
    float s = 0.0f;
    for (uint j = 0; j < 8; ++j) s += *p++;
    out[i] = s;
"""), "a pointer assigned later, cast": ("metal", "", """
    uint i = thread_position_in_grid.x;
    const device float* row;
    row = inp + (i & ~3u);
    out[i] = ((const device float4*)row)[0][i & 3u] + float(inp_shape[0]) / float(inp_strides[0]);
"""), "a cast of a pointer stepped, a condition in parentheses": ("metal", "", """
    uint i = thread_position_in_grid.x;
    const device float* p = inp + i;
    const device float* end = inp + 255;
    out[i] = *(const device float*)p++ + *(inp + i < end ? inp + i : end);
"""), "elements' addresses cast, and a member's": ("metal", "", """
    uint i = thread_position_in_grid.x;
    const uint k = i & ~1u;
    out[i] = ((const device float2*)&inp[k])[0][i & 1u] + *(const device float*)&inp[i];
"""), "declarators after the first": ("metal", "", """
    uint i = thread_position_in_grid.x;
    const device float *a = inp + i, *b = inp;
    float s = 0.0f, t = *a;
    for (uint j = 0, k = i & 7u; j <= k; ++j) s += b[j];
    out[i] = s + t;
"""), "a cast to a type with a comma, in a reduction": ("cuda", """
    template <class A, int N> struct vecn {
        A v[N];
        __device__ operator A() const { return v[0]; }
    };
""", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    using namespace cooperative_groups;
    thread_block block = this_thread_block();
    thread_block_tile<16> tile = tiled_partition<16>(block);
    float s = 0.0f;
    if (i >= 0) s = reduce(tile, 0.0f + *(const vecn<float, 1>*)(inp + i), plus<float>());
    out[i] = s;
"""), "reinterpret_cast in place": ("cuda", "", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 128)
        *reinterpret_cast<float2*>(out + 2 * i) = *reinterpret_cast<const float2*>(&inp[2 * i]);
""")}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", POINTER_FORMS)
def test_debug_builds_of_pointer_forms_compute_what_plain_builds_do(rng, device, form):
    dialect, header, source = POINTER_FORMS[form]
    x = rng.standard_normal(256).astype(np.float32)
    results = []
    for options in (None, DEBUG):
        kernel = copying_kernel(dialect, "pointer_forms", source, header, options)
        results.append(run(kernel, x, (256, 1, 1), (64, 1, 1), device=device))
    np.testing.assert_array_equal(results[1], results[0])


# A dereference after a cast of an element's address, in the header of a loop that waits
# (simd_sum) each time round: the parentheses the checks add around the operand leave the
# header's brackets pairing, in regions and in coroutines.
CAST_IN_A_WAITING_LOOP = """
    uint i = thread_position_in_grid.x;
    float s = 0.0f;
    for (int k = 0; k < (int)((const device float2*)&inp[0])[0].x * 0 + 3; ++k) s += simd_sum(inp[i] * float(k));
    out[i] = s;
"""


@pytest.mark.parametrize("regions", ["1", "0"])
def test_debug_builds_of_a_cast_in_a_waiting_loop_s_header_are_right(rng, monkeypatch, regions):
    monkeypatch.setenv("KJIT_CPU_REGIONS", regions)
    kernel = copying_kernel("metal", "debug_waiting_cast", CAST_IN_A_WAITING_LOOP)
    x = rng.standard_normal(128).astype(np.float32)
    want = np.repeat(3 * x.astype(np.float64).reshape(4, 32).sum(1), 32)
    np.testing.assert_allclose(run(kernel, x, (128, 1, 1), (64, 1, 1)), want, rtol=1e-5,
                               atol=1e-5)


# Writes past the output through each pointer form, the reads in bounds: (dialect, body, line).
# Each thread writes four elements; thread 250's reach 1000 to 1003 of 1002.
STRAY_WRITES = {"a vector through a cast": ("metal", """
    uint i = thread_position_in_grid.x;
    *((device float4*)(out + 4 * i)) = *((const device float4*)(inp + 4 * i)) * 2.0f;
""", 3), "a vector through reinterpret_cast": ("cuda", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 v = *reinterpret_cast<const float4*>(inp + 4 * i);
    *reinterpret_cast<float4*>(&out[4 * i]) = make_float4(2 * v.x, 2 * v.y, 2 * v.z, 2 * v.w);
""", 4), "a vector through an element's address cast": ("metal", """
    uint i = thread_position_in_grid.x;
    const float4 v = *(const device float4*)&inp[4 * i];
    ((device float4*)&out[4 * i])[0] = v * 2.0f;
""", 4), "an element through a second declarator": ("cuda", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float *src = inp + 4 * i; float s = 2.0f, *dst = out + 4 * i;
    for (int j = 0; j < 4; ++j) dst[j] = s * src[j];
""", 4), "an element through a moved pointer": ("cuda", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < 4; ++j) *(out + 4 * i + j) = 2.0f * inp[4 * i + j];
""", 3), "an element through a stepped pointer": ("cuda", """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float* dst = out + 4 * i;
    for (int j = 0; j < 4; ++j) *dst++ = 2.0f * inp[4 * i + j];
""", 4), "a pointer dereferenced after a condition": ("metal", """
    uint i = thread_position_in_grid.x;
    device float* row = out + 4 * i;
    for (uint j = 0; j < 4; ++j) if (j < 4) *(row + j) = 2.0f * inp[4 * i + j];
""", 4)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", STRAY_WRITES)
def test_writes_past_the_output_through_pointers_are_reported_and_skipped(rng, device, form):
    dialect, source, line = STRAY_WRITES[form]
    kernel = copying_kernel(dialect, "debug_stray_pointer", source)
    message = launch_error(kernel, rng.standard_normal(1004).astype(np.float32), 1002, 251, device)
    assert "debug check: outputs[0] ('out') was indexed at 1002" in message, message
    assert f"at line {line} of the source, by the thread at (250, 0, 0)" in message, message


# A dereference after a cast to a value type, told from a product by the type's name (after a
# comparison's '>' too).
VALUE_CASTS = {"metal": """
    uint i = thread_position_in_grid.x;
    out[i] = (float)*(inp + i) * 2.0f + float((uint)*(inp + i) * 0u);
""", "metal after a comparison": """
    uint i = thread_position_in_grid.x;
    out[i % 64] = 2.0f * inp[i % 64] + float(-1 > (int)*(inp + i));
""", "cuda": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = (const float)*(inp + i) * 2.0f + (float)sizeof(int) * 0.0f;
"""}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", VALUE_CASTS)
def test_reads_after_a_cast_to_a_value_type_are_checked(rng, device, form):
    kernel = copying_kernel(form.split()[0], "debug_value_casts", VALUE_CASTS[form])
    x = np.abs(rng.standard_normal(64)).astype(np.float32)
    np.testing.assert_array_equal(run(kernel, x, (64, 1, 1), (64, 1, 1), device=device), 2 * x)
    message = launch_error(kernel, x, 64, 65, device)
    assert "inputs[0] ('inp') was indexed at 64" in message, message
    assert "at line 3 of the source, by the thread at (64, 0, 0)" in message, message


def test_an_array_the_body_moves_stays_unchecked_with_a_warning(rng):
    # out itself steps along: its accesses are no longer indices from the array's start.
    with pytest.warns(RuntimeWarning, match=r"leave output 'out' unchecked: the body moves 'out'"):
        kernel = kjit.metal_kernel(name="debug_moved_array", input_names=["inp"],
                                   output_names=["out"], compile_options=DEBUG, source="""
            uint i = thread_position_in_grid.x;
            if (i == 0) for (uint j = 0; j < 64; ++j) *out++ = inp[j] * 2.0f;
        """)
        x = rng.standard_normal(64).astype(np.float32)
        np.testing.assert_array_equal(run(kernel, x, (64, 1, 1), (64, 1, 1)), x * 2)


LAMBDAS = {"metal": """
    uint i = thread_position_in_grid.x;
    auto load = [inp](uint j) { return ((const device float*)inp)[j] + inp[j]; };
    auto store = [out, i](float v) mutable { out[i] = v; };
    store(load(i));
""", "cuda": """
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    auto load = [inp](int j) { return inp[j] + *(inp + j); };
    auto store = [=](float v) { out[i] = v; };
    auto same = [](float v) { return v; };
    store(same(load(i)));
""", "metal initialised": """
    uint i = thread_position_in_grid.x;
    auto load = [inp, k = min(i, 3u)](uint j) { return inp[j + k - k] + inp[j]; };
    auto store = [out, at = uint(i)](float v) { out[at] = v; };
    store(load(i));
""", "metal initialised last": """
    uint i = thread_position_in_grid.x;
    auto load = [inp, one = inp[0] * 0.0f + 1.0f](uint j) { return inp[j] * one + inp[j]; };
    auto store = [&i, out, v = inp[min(i, 63u)]](float w) { out[i] = w + v * 0.0f; };
    store(load(i));
"""}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", LAMBDAS)
def test_lambdas_that_name_their_captures_are_checked(rng, device, form):
    kernel = copying_kernel(form.split()[0], "debug_lambdas", LAMBDAS[form])
    x = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(run(kernel, x, (64, 1, 1), (64, 1, 1), device=device), 2 * x)
    with pytest.raises(kjit.LaunchError) as e:
        kernel(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32], grid=(65, 1, 1),
               threadgroup=(65, 1, 1), device=device)
    message = str(e.value)
    assert "inputs[0] ('inp') was indexed at 64" in message, message
    assert "at line 3 of the source, by the thread at (64, 0, 0)" in message, message


def test_a_pointer_moved_to_another_array_is_not_checked_against_the_first(rng):
    # Threads from 64 on read b through p, which first pointed into a: their in-bounds reads
    # are no report, and each thread's value comes from its array.
    kernel = kjit.metal_kernel(name="debug_repointed", input_names=["a", "b"],
                               output_names=["out"], compile_options=DEBUG, source="""
        uint i = thread_position_in_grid.x;
        const device float* p = a;
        if (i >= 64) p = b;
        out[i] = p[i];
    """)
    a = rng.standard_normal(128).astype(np.float32)
    b = rng.standard_normal(128).astype(np.float32)
    out = kernel(inputs=[a, b], output_shapes=[(128,)], output_dtypes=[np.float32],
                 grid=(128, 1, 1), threadgroup=(64, 1, 1))[0]
    np.testing.assert_array_equal(out, np.concatenate([a[:64], b[64:]]))


def test_an_array_whose_name_the_body_declares_again_stays_unchecked_with_a_warning(rng):
    # A lambda's parameter a and the input a: the body's a is left as it is, and the user told.
    source = """
        uint i = thread_position_in_grid.x;
        auto twice = [](const device float* a, uint j) { return a[j] * 2.0f; };
        out[i] = twice(a, i);
    """
    with pytest.warns(RuntimeWarning, match=r"the debug checks leave input 'a' unchecked: the "
                                            r"body declares another 'a'"):
        kernel = kjit.metal_kernel(name="debug_declared", input_names=["a"],
                                   output_names=["out"], compile_options=DEBUG, source=source)
        x = rng.standard_normal(64).astype(np.float32)
        np.testing.assert_array_equal(run(kernel, x, (64, 1, 1)), x * 2)
    # The output is still checked.
    with pytest.raises(kjit.LaunchError, match=r"outputs\[0\] \('out'\) was indexed at 64"):
        kernel(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32], grid=(65, 1, 1),
               threadgroup=(32, 1, 1), outputs=[np.zeros(100, np.float32)[:64]])


LINE_INFO_PROGRAM = """
import sys
import kjit
k = kjit.metal_kernel(name="line_info", input_names=["inp"], output_names=["out"],
                      source="uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f;",
                      compile_options={"line_info": sys.argv[1] == "on"})
k.build(inputs=[(kjit.float32, 1)], output_dtypes=[kjit.float32], target="sm_90")
"""


@pytest.mark.skipif(not NVRTC, reason="no NVRTC here")
def test_line_info_puts_line_tables_in_gpu_builds(tmp_path):
    # The cubins NVRTC makes with -lineinfo carry a .debug_line section, which compute-sanitizer
    # reads; the disk cache holds them as NVRTC gave them.
    found = {}
    for setting in ("on", "off"):
        cache = tmp_path / setting
        subprocess.run([sys.executable, "-c", LINE_INFO_PROGRAM, setting], check=True,
                       timeout=120, env=dict(os.environ, KJIT_CACHE_DIR=str(cache)))
        entries = [p.read_bytes() for p in cache.rglob("*") if p.is_file()]
        assert entries
        found[setting] = any(b".debug_line" in e for e in entries)
    assert found == {"on": True, "off": False}
    with pytest.raises(TypeError, match=r"compile_options\['line_info'\]: expected a bool"):
        kjit.metal_kernel(name="k", input_names=["a"], output_names=["b"], source="",
                          compile_options={"line_info": "yes"})
