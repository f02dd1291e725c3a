"""The dialects' arithmetic and math on the CPU against NumPy: half and bfloat promotion,
Metal's math in float64, exp at its edges, safe math, and CUDA's math names and low
floats."""


import ml_dtypes
import numpy as np
import pytest

import kjit
from conftest import DIALECTS, make_kernel, poisoned


def ulp_error(out, ref):
    """|out - ref| in units of the float32 spacing at ref (ref in float64)."""
    ref = np.asarray(ref, dtype=np.float64)
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    spacing = np.maximum(spacing, 2.0 ** -149)
    return np.abs(np.asarray(out, dtype=np.float64) - ref) / spacing


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
