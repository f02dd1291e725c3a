"""The scenarios of MLX's custom-kernel tests (python/tests/test_fast.py), run on the CPU in both
dialects where MLX has both, each checked against NumPy in float64 or a closed form."""

import math

import ml_dtypes
import numpy as np
import pytest

import kjit
from conftest import DIALECTS, make_kernel, poisoned


# --- basic: a plain copy ----------------------------------------------------------------------

BASIC_SOURCE = {
    "metal": """
        uint elem = thread_position_in_grid.x;
        out1[elem] = a[elem];
    """,
    "cuda": """
        auto elem = cooperative_groups::this_grid().thread_rank();
        out1[elem] = a[elem];
    """,
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_basic_copy(dialect, rng):
    kernel = make_kernel(dialect, name="basic", input_names=["a"], output_names=["out1"],
                         source=BASIC_SOURCE[dialect])
    a = rng.standard_normal((2, 2)).astype(np.float32)
    out = poisoned((2, 2), np.float32)
    (res,) = kernel(inputs=[a], grid=(4, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2, 2)],
                    output_dtypes=[np.float32], outputs=[out])
    assert res is out
    np.testing.assert_array_equal(out, a)
    # A fresh output as well: the same values, a NumPy array of the requested shape and dtype.
    (fresh,) = kernel(inputs=[a], grid=(4, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2, 2)],
                      output_dtypes=[np.float32])
    assert isinstance(fresh, np.ndarray)
    assert fresh.shape == (2, 2) and fresh.dtype == np.float32
    np.testing.assert_array_equal(fresh, a)


# --- templated arguments, a bfloat16 input and a Python float scalar ------------------------

ARGS_SOURCE = {
    "metal": """
        uint elem = thread_position_in_grid.x;
        T tmp = a[0];
        if (e) {
            out1[elem] = a[1] + b[2] + c[3] + d + f;
        } else {
            out1[elem] = 1;
        }
        out2[elem] = a[1] + b[2] + c[1] - d;
    """,
    "cuda": """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = a[0];
        if (e) {
            out1[elem] = a[1] + b[2] + static_cast<float>(c[3]) + d[0] + f;
        } else {
            out1[elem] = 1;
        }
        out2[elem] = a[1] + b[2] + static_cast<float>(c[1]) - d[0];
    """,
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_template_and_scalar_args(dialect, rng):
    kernel = make_kernel(dialect, name="arg_test", input_names=["a", "b", "c", "d"],
                         output_names=["out1", "out2"], source=ARGS_SOURCE[dialect])
    a = rng.standard_normal((3, 6)).astype(np.float32)
    b = np.array([3, 4, 5], dtype=np.int32)
    c = rng.standard_normal((2, 2)).astype(ml_dtypes.bfloat16)
    d = 7.3
    outs = [poisoned((3, 2), np.float32), poisoned((3, 2), np.int32)]
    out1, out2 = kernel(
        inputs=[a, b, c, d],
        template=[("e", True), ("f", 3), ("T", kjit.float16)],
        grid=(6, 1, 1),
        threadgroup=(2, 1, 1),
        output_shapes=[(3, 2), (3, 2)],
        output_dtypes=[kjit.float32, kjit.int32],
        outputs=outs,
    )
    a64 = a.astype(np.float64).ravel()
    c64 = c.astype(np.float64).ravel()
    d32 = float(np.float32(d))  # a Python float reaches the body as a float32
    assert d32 != d
    ref1 = a64[1] + b[2] + c64[3] + d32 + 3
    np.testing.assert_allclose(out1, np.full((3, 2), ref1), rtol=1e-6, atol=1e-6)
    # out2 converts a float to int32, truncating toward zero. The sum is rounded to float32 at
    # each step in the body; the same steps in NumPy float32 give the exact value truncated.
    f32 = np.float32
    s32 = ((a.ravel()[1] + f32(b[2])) + f32(c64[1])) - f32(d)
    ref2 = int(np.trunc(s32))
    assert abs(float(s32) - (a64[1] + b[2] + c64[1] - d32)) < 1e-5
    np.testing.assert_array_equal(out2, np.full((3, 2), ref2, dtype=np.int32))


# --- strides: ensure_row_contiguous True (plain indexing) and False (elem_to_loc) ------------

STRIDES_SOURCE = {
    ("metal", True): """
        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp) * threads_per_simdgroup;
    """,
    ("metal", False): """
        uint elem = thread_position_in_grid.x;
        uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        T tmp = inp[loc];
        out[elem] = metal::exp(tmp) * threads_per_simdgroup;
    """,
    ("cuda", True): """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = inp[elem];
        out[elem] = exp(tmp) * WARP_SIZE;
    """,
    ("cuda", False): """
        auto elem = cooperative_groups::this_grid().thread_rank();
        auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
        T tmp = inp[loc];
        out[elem] = exp(tmp) * WARP_SIZE;
    """,
}


def strided_input(rng, view):
    a = np.tile(rng.standard_normal((3, 6)).astype(np.float32)[::2], (4, 1))
    assert a.shape == (8, 6)
    if view == "transposed":
        a = a.T
        assert not a.flags.c_contiguous
    elif view == "reversed":
        a = a[::-1, ::-1]
        assert all(s < 0 for s in a.strides)
    elif view == "sliced":
        a = a[1::2, ::-1][:, 1:]
        assert not a.flags.c_contiguous
    return a


@pytest.mark.parametrize("view", ["tiled", "transposed", "reversed", "sliced"])
@pytest.mark.parametrize("contig", [True, False])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_strides(dialect, contig, view, rng):
    a = strided_input(rng, view)
    if view in ("reversed", "sliced") and dialect == "metal" and not contig:
        # Negative strides: the MLX body's `uint loc` would wrap; a signed offset is needed.
        source = STRIDES_SOURCE[(dialect, contig)].replace("uint loc", "int64_t loc")
    else:
        source = STRIDES_SOURCE[(dialect, contig)]
    kernel = make_kernel(dialect, name="myexp" + str(contig), input_names=["inp"],
                         output_names=["out"], source=source, ensure_row_contiguous=contig)
    out = poisoned(a.shape, np.float32)
    kernel(inputs=[a], template=[("T", kjit.float32)], grid=(a.size, 1, 1),
           threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype],
           outputs=[out])
    np.testing.assert_allclose(out, np.exp(a.astype(np.float64)) * 32, rtol=2.5e-7, atol=0)


def test_strides_shape_info_is_the_views(rng):
    """With ensure_row_contiguous=False the body sees the view's shape, element strides (signed)
    and ndim; with True it sees the row-contiguous copy's."""
    source = """
        uint i = thread_position_in_grid.x;
        if (i < uint(inp_ndim)) {
            shp[i] = inp_shape[i];
            st[i] = inp_strides[i];
        }
        nd[0] = inp_ndim;
    """
    base = rng.standard_normal((5, 7, 3)).astype(np.float32)
    view = base[::-2, 1:, ::2].transpose(2, 0, 1)
    for contig in (False, True):
        kernel = kjit.metal_kernel(name="shape_info", input_names=["inp"],
                                   output_names=["shp", "st", "nd"], source=source,
                                   ensure_row_contiguous=contig)
        outs = [poisoned((3,), np.int32), poisoned((3,), np.int64), poisoned((1,), np.int32)]
        kernel(inputs=[view], grid=(8, 1, 1), threadgroup=(8, 1, 1),
               output_shapes=[(3,), (3,), (1,)], output_dtypes=[np.int32, np.int64, np.int32],
               outputs=outs)
        np.testing.assert_array_equal(outs[0], view.shape)
        if contig:
            expected = np.ascontiguousarray(view).strides
        else:
            expected = view.strides
        np.testing.assert_array_equal(outs[1], np.array(expected) // view.itemsize)
        assert outs[2][0] == 3


# --- a function template in `header` ------------------------------------------------------

HEADER_FUNCTION = {
    "metal": (
        """
        template <typename T>
        T do_exp(T x) {
            return metal::precise::exp(x);
        }
        """,
        """
        uint elem = thread_position_in_grid.x;
        out1[elem] = do_exp(a[elem]);
        """,
    ),
    "cuda": (
        """
        template <typename T>
        __device__ T do_exp(T x) {
            return exp(x);
        }
        """,
        """
        auto elem = cooperative_groups::this_grid().thread_rank();
        out1[elem] = do_exp(a[elem]);
        """,
    ),
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_header_function(dialect, rng):
    header, source = HEADER_FUNCTION[dialect]
    kernel = make_kernel(dialect, name="header_fn", input_names=["a"], output_names=["out1"],
                         source=source, header=header)
    a = rng.standard_normal((2, 2)).astype(np.float32)
    out = poisoned((2, 2), np.float32)
    kernel(inputs=[a], grid=(4, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2, 2)],
           output_dtypes=[np.float32], outputs=[out])
    np.testing.assert_allclose(out, np.exp(a.astype(np.float64)), rtol=2.5e-7, atol=0)


# --- attributes --------------------------------------------------------------------------------

@pytest.mark.parametrize("dialect", DIALECTS)
def test_threads_per_threadgroup(dialect):
    source = {"metal": "out[0] = threads_per_threadgroup.x;", "cuda": "out[0] = blockDim.x;"}
    kernel = make_kernel(dialect, name="test_fun", input_names=[], output_names=["out"],
                         source=source[dialect])
    out = poisoned((1, 1), np.uint32)
    kernel(inputs=[], grid=(2, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(1, 1)],
           output_dtypes=[np.uint32], outputs=[out])
    assert out.item() == 2


# Every attribute of MSL table 5.8, one row of columns per grid position.
ATTRIBUTE_COLUMNS = [
    ("thread_position_in_grid", 3),
    ("thread_position_in_threadgroup", 3),
    ("threadgroup_position_in_grid", 3),
    ("threads_per_threadgroup", 3),
    ("threads_per_grid", 3),
    ("threadgroups_per_grid", 3),
    ("dispatch_threads_per_threadgroup", 3),
    ("grid_size", 3),
    ("grid_origin", 3),
    ("thread_index_in_threadgroup", 1),
    ("thread_index_in_simdgroup", 1),
    ("simdgroup_index_in_threadgroup", 1),
    ("threads_per_simdgroup", 1),
    ("thread_execution_width", 1),
    ("simdgroups_per_threadgroup", 1),
    ("dispatch_simdgroups_per_threadgroup", 1),
    ("thread_index_in_quadgroup", 1),
    ("quadgroup_index_in_threadgroup", 1),
    ("quadgroups_per_threadgroup", 1),
    ("dispatch_quadgroups_per_threadgroup", 1),
]
N_ATTRIBUTE_COLUMNS = sum(n for _, n in ATTRIBUTE_COLUMNS)


def attribute_source():
    lines = [
        "uint3 p = thread_position_in_grid;",
        "uint row = p.x + threads_per_grid.x * (p.y + threads_per_grid.y * p.z);",
        f"device uint* o = out + row * {N_ATTRIBUTE_COLUMNS};",
    ]
    col = 0
    for name, n in ATTRIBUTE_COLUMNS:
        if n == 3:
            for comp in "xyz":
                lines.append(f"o[{col}] = {name}.{comp};")
                col += 1
        else:
            lines.append(f"o[{col}] = {name};")
            col += 1
    return "\n".join(lines)


def attribute_reference(grid, threadgroup):
    """Closed forms of every attribute for Metal's dispatchThreads(grid, min(tg, grid))."""
    G = np.array(grid, dtype=np.int64)
    T = np.minimum(np.array(threadgroup, dtype=np.int64), G)
    z, y, x = np.meshgrid(*(np.arange(g) for g in grid[::-1]), indexing="ij")
    pos = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)  # x fastest, as the rows
    gid = pos // T
    lid = pos % T
    part = np.minimum(T, G - gid * T)  # the partial size of edge groups
    lin = lid[:, 0] + part[:, 0] * (lid[:, 1] + part[:, 1] * lid[:, 2])
    n_part = part.prod(axis=1)
    n_full = int(T.prod())
    n = len(pos)
    groups = -(-G // T)
    columns = {
        "thread_position_in_grid": pos,
        "thread_position_in_threadgroup": lid,
        "threadgroup_position_in_grid": gid,
        "threads_per_threadgroup": part,
        "threads_per_grid": np.broadcast_to(G, (n, 3)),
        "threadgroups_per_grid": np.broadcast_to(groups, (n, 3)),
        "dispatch_threads_per_threadgroup": np.broadcast_to(T, (n, 3)),
        "grid_size": np.broadcast_to(G, (n, 3)),
        "grid_origin": np.zeros((n, 3), np.int64),
        "thread_index_in_threadgroup": lin,
        "thread_index_in_simdgroup": lin % 32,
        "simdgroup_index_in_threadgroup": lin // 32,
        "threads_per_simdgroup": np.full(n, 32),
        "thread_execution_width": np.full(n, 32),
        "simdgroups_per_threadgroup": -(-n_part // 32),
        "dispatch_simdgroups_per_threadgroup": np.full(n, -(-n_full // 32)),
        "thread_index_in_quadgroup": lin % 4,
        "quadgroup_index_in_threadgroup": lin // 4,
        "quadgroups_per_threadgroup": -(-n_part // 4),
        "dispatch_quadgroups_per_threadgroup": np.full(n, -(-n_full // 4)),
    }
    return np.concatenate(
        [np.asarray(columns[name]).reshape(n, k) for name, k in ATTRIBUTE_COLUMNS], axis=1)


@pytest.fixture(scope="module")
def attribute_kernel():
    return kjit.metal_kernel(name="all_attributes", input_names=[], output_names=["out"],
                             source=attribute_source())


@pytest.mark.parametrize(
    "grid,threadgroup",
    [
        ((70, 1, 1), (32, 1, 1)),    # partial last group in x
        ((40, 3, 1), (64, 2, 1)),    # group wider than the grid in x, partial in y
        ((13, 7, 3), (4, 3, 2)),     # partial in every dimension
        ((9, 5, 4), (3, 5, 2)),      # groups that tile the grid exactly
        ((100, 2, 1), (48, 2, 1)),   # groups of 96 threads: three simdgroups, the last partial
    ],
)
def test_every_metal_attribute(attribute_kernel, grid, threadgroup):
    n = math.prod(grid)
    out = poisoned((n, N_ATTRIBUTE_COLUMNS), np.uint32)
    attribute_kernel(inputs=[], grid=grid, threadgroup=threadgroup,
                     output_shapes=[out.shape], output_dtypes=[np.uint32], outputs=[out])
    ref = attribute_reference(grid, threadgroup)
    col = 0
    for name, k in ATTRIBUTE_COLUMNS:
        np.testing.assert_array_equal(out[:, col:col + k], ref[:, col:col + k], err_msg=name)
        col += k


# --- the same name with different sources ----------------------------------------------------

DUP_SOURCES = {
    "metal": ("uint i = thread_position_in_grid.x;\n", "out[i] = inp[i] * 2;",
              "out[i] = inp[i] + 100;"),
    "cuda": ("auto i = cooperative_groups::this_grid().thread_rank();\n", "out[i] = inp[i] * 2;",
             "out[i] = inp[i] + 100;"),
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_same_name_different_source(dialect, rng):
    prefix, twice, plus = DUP_SOURCES[dialect]
    k_twice = make_kernel(dialect, name="dup_name", input_names=["inp"], output_names=["out"],
                          source=prefix + twice)
    k_plus = make_kernel(dialect, name="dup_name", input_names=["inp"], output_names=["out"],
                         source=prefix + plus)
    a = rng.standard_normal(100).astype(np.float32)

    def run(kernel):
        out = poisoned(a.shape, np.float32)
        kernel(inputs=[a], grid=(a.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[a.shape],
               output_dtypes=[np.float32], outputs=[out])
        return out

    r1, r2, r3 = run(k_twice), run(k_plus), run(k_twice)
    np.testing.assert_array_equal(r1, a * 2)
    np.testing.assert_array_equal(r2, a + np.float32(100))
    np.testing.assert_array_equal(r3, a * 2)


# --- one kernel object, several input dtypes -----------------------------------------------

def test_mixed_dtypes_one_kernel(rng):
    kernel = kjit.metal_kernel(name="mixed", input_names=["inp"], output_names=["out"], source="""
        uint elem = thread_position_in_grid.x;
        T x = inp[elem];
        out[elem] = x * T(2) + T(0.5);
    """)

    def run(a):
        out = poisoned(a.shape, a.dtype)
        (res,) = kernel(inputs=[a], template=[("T", a.dtype)], grid=(a.size, 1, 1),
                        threadgroup=(64, 1, 1), output_shapes=[a.shape],
                        output_dtypes=[a.dtype], outputs=[out])
        assert res.dtype == a.dtype
        return out

    a16 = rng.standard_normal(300).astype(np.float16)
    a32 = rng.standard_normal(300).astype(np.float32)
    for a, rtol in ((a16, 2 ** -11), (a32, 2 ** -24), (a16, 2 ** -11)):
        out = run(a)
        ref = a.astype(np.float64) * 2 + 0.5
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=rtol, atol=rtol)
    # The half result is rounded to half, not computed and stored in float.
    out16 = run(a16)
    np.testing.assert_array_equal(out16, a16 * np.float16(2) + np.float16(0.5))
    out32 = run(a32)
    np.testing.assert_array_equal(out32, a32 * np.float32(2) + np.float32(0.5))


# --- math_mode --------------------------------------------------------------------------------

MATH_MODE_SOURCE = """
    uint elem = thread_position_in_grid.x;
#if defined(__FAST_MATH__)
    out[elem] = inp[elem] * 2;
#else
    out[elem] = -inp[elem];
#endif
"""


def test_math_mode(rng):
    a = rng.standard_normal(64).astype(np.float32)
    results = {}
    for mode in ("safe", "fast", "safe"):
        kernel = kjit.metal_kernel(name="math_mode_probe", input_names=["inp"],
                                   output_names=["out"], source=MATH_MODE_SOURCE,
                                   compile_options={"math_mode": mode})
        out = poisoned(a.shape, np.float32)
        kernel(inputs=[a], grid=(a.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[a.shape],
               output_dtypes=[np.float32], outputs=[out])
        results.setdefault(mode, []).append(out)
    for out in results["safe"]:
        np.testing.assert_array_equal(out, -a)
    np.testing.assert_array_equal(results["fast"][0], a * 2)
    # The default is safe.
    kernel = kjit.metal_kernel(name="math_mode_probe", input_names=["inp"], output_names=["out"],
                               source=MATH_MODE_SOURCE)
    (out,) = kernel(inputs=[a], grid=(a.size, 1, 1), threadgroup=(32, 1, 1),
                    output_shapes=[a.shape], output_dtypes=[np.float32])
    np.testing.assert_array_equal(out, -a)


@pytest.mark.parametrize("options", [{"math_mode": "fastest"}, {"math_mode": 1},
                                     {"unknown": "safe"}])
def test_math_mode_invalid(options):
    with pytest.raises(ValueError):
        kjit.metal_kernel(name="bad_options", input_names=["inp"], output_names=["out"],
                          source="out[0] = inp[0];", compile_options=options)
