"""CUDA C++ as kernels write it, on both backends: vector types, conversions and bit casts, the
math library, half-precision intrinsics, warp reductions and matches, printf and assert. Each
against NumPy or Python's math in float64, or against CUDA's documented values."""

import math

import numpy as np
import pytest

import kjit
from conftest import DEVICES, needs_gpu, poisoned


def run(name: str, source: str, inputs: list, outputs: list[tuple[tuple, type]], device: str,
        grid: int | None = None, group: int = 64) -> list[np.ndarray]:
    """Runs a cuda_kernel of |source| over grid threads (default: the first input's size), with
    inputs named a, b, c... and outputs named o0, o1..., each poisoned first."""
    names = "abcdefgh"[:len(inputs)]
    k = kjit.cuda_kernel(name=name, input_names=list(names),
                         output_names=[f"o{k}" for k in range(len(outputs))], source=source)
    n = grid if grid is not None else int(np.asarray(inputs[0]).size)
    return k(inputs=inputs, output_shapes=[s for s, _ in outputs],
             output_dtypes=[d for _, d in outputs], grid=(n, 1, 1), threadgroup=(group, 1, 1),
             device=device, outputs=[poisoned(s, d) for s, d in outputs])


# sizeof and alignof of CUDA's vector types (vector_types.h): pairs and quads are aligned as a
# whole up to 16 bytes, singles and triples as their element.
VECTOR_LAYOUTS = {"char2": (2, 2), "uchar3": (3, 1), "char4": (4, 4), "short2": (4, 4),
                  "ushort3": (6, 2), "short4": (8, 8), "int1": (4, 4), "int2": (8, 8),
                  "uint2": (8, 8), "int3": (12, 4), "int4": (16, 16), "uint4": (16, 16),
                  "long2": (16, 16), "longlong2": (16, 16), "ulonglong3": (24, 8),
                  "float2": (8, 8), "float3": (12, 4), "float4": (16, 16), "double2": (16, 16),
                  "double3": (24, 8), "uint3": (12, 4), "dim3": (12, 4)}


@pytest.mark.parametrize("device", DEVICES)
def test_vector_types_have_cudas_layout_and_load_as_cuda_does(device, rng):
    names = list(VECTOR_LAYOUTS)
    layout = "".join(f"    o0[{2 * k}] = sizeof({t}); o0[{2 * k + 1}] = alignof({t});\n"
                     for k, t in enumerate(names))
    x = rng.standard_normal(4 * 64).astype(np.float32)
    sizes = run("vector_types", """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
""" + layout + """    }
    const float4 v = reinterpret_cast<const float4*>(a)[i];
    const int2 p = make_int2(int(i), -int(i));
    const dim3 d(2, 3);
    // Packed triples read as CUDA's uint3, and the index variables converted to it.
    const uint3 t = reinterpret_cast<const uint3*>(a)[i];
    const uint3 b = (i & 1) ? blockIdx : make_uint3(0, 9, 9);
    const dim3 g = (i & 1) ? gridDim : dim3(1);
    const uint3 partial = {4, 5};
    o2[i] = __float_as_uint(a[3 * i + 1]) == t.y && dim3(blockDim).x == 64 && b.x == 0 &&
            g.x == 1 && sizeof(threadIdx) == 12 && partial.z == 0;
    reinterpret_cast<float4*>(o1)[i] =
        make_float4(v.w + p.x, v.z + p.y, v.y * float(d.x), v.x * float(d.y * d.z));
""", [x], [((2 * len(names),), np.int32), ((4 * 64,), np.float32), ((64,), np.int32)], device,
        grid=64)
    sizes, loaded, triples = sizes
    np.testing.assert_array_equal(triples, np.ones(64))
    np.testing.assert_array_equal(sizes, np.array([VECTOR_LAYOUTS[t] for t in names]).ravel())
    quads = x.reshape(64, 4).astype(np.float64)
    i = np.arange(64)
    expected = np.stack([quads[:, 3] + i, quads[:, 2] - i, 2 * quads[:, 1], 3 * quads[:, 0]], 1)
    np.testing.assert_allclose(loaded.reshape(64, 4), expected, rtol=1e-6, atol=1e-4)


def saturated(values: np.ndarray, dtype, source: str) -> np.ndarray:
    """|values| (already integers, from floats or doubles as |source| says) clamped to |dtype|'s
    range, and NaN as 0 from a float to a 32-bit int, else as the value whose top bit alone is
    set: an H200's conversions."""
    info = np.iinfo(dtype)
    nan = np.isnan(values)
    out = np.where(nan, 0, values)
    # Compared as float64, whose 2^63 and 2^64 are exact: the top of int64 and uint64 is past them.
    top = np.where(out >= float(info.max) + 1, 1, 0).astype(bool)
    out = np.clip(out, float(info.min), float(info.max))
    result = np.array([int(v) for v in out], dtype=object)
    result[top] = info.max
    top_bit = info.min if info.min < 0 else 1 << (info.bits - 1)
    result[nan] = 0 if source == "float" and info.bits == 32 else top_bit
    return result.astype(dtype)


ROUNDINGS = {"rn": np.rint, "rz": np.trunc, "ru": np.ceil, "rd": np.floor}


@pytest.mark.parametrize("device", DEVICES)
def test_float_to_integer_conversions_round_and_saturate(device, rng):
    x = np.concatenate([rng.standard_normal(200) * 10, rng.uniform(-1, 1, 40) * 2.0 ** 70,
                        np.arange(-4, 4.5, 0.5), [np.nan, np.inf, -np.inf, 2.0 ** 31, -2.0 ** 31,
                                                  2.0 ** 32, 2.0 ** 63, 2.0 ** 64]])
    cases = [(src, dst, mode) for src in ("float", "double") for dst in ("int", "uint", "ll", "ull")
             for mode in ROUNDINGS]
    dtypes = {"int": np.int32, "uint": np.uint32, "ll": np.int64, "ull": np.uint64}
    body = "".join(f"    o{k}[i] = __{src}2{dst}_{mode}({'f' if src == 'float' else 'd'});\n"
                   for k, (src, dst, mode) in enumerate(cases))
    outs = run("to_int", "    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
               "    const float f = a[i];\n    const double d = b[i];\n" + body,
               [x.astype(np.float32), x], [((x.size,), dtypes[dst]) for _, dst, _ in cases],
               device)
    for (src, dst, mode), out in zip(cases, outs):
        values = x.astype(np.float32).astype(np.float64) if src == "float" else x
        np.testing.assert_array_equal(out, saturated(ROUNDINGS[mode](values), dtypes[dst], src),
                                      err_msg=f"__{src}2{dst}_{mode}")


@pytest.mark.parametrize("device", DEVICES)
def test_bit_casts(device, rng):
    f = np.concatenate([rng.standard_normal(61), [np.inf, -0.0, np.nan]]).astype(np.float32)
    d = rng.standard_normal(64) * 1e10
    ints, floats, uints, lls, doubles, hi, lo, joined = run("bit_casts", """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    o0[i] = __float_as_int(a[i]);
    o1[i] = __int_as_float(__float_as_int(a[i]) ^ 0x80000000);
    o2[i] = __float_as_uint(a[i]);
    o3[i] = __double_as_longlong(b[i]);
    o4[i] = __longlong_as_double(__double_as_longlong(b[i]) + 1);
    o5[i] = __double2hiint(b[i]);
    o6[i] = __double2loint(b[i]);
    o7[i] = __hiloint2double(__double2hiint(b[i]), __double2loint(b[i]));
""", [f, d], [((64,), np.int32), ((64,), np.float32), ((64,), np.uint32), ((64,), np.int64),
              ((64,), np.float64), ((64,), np.int32), ((64,), np.int32), ((64,), np.float64)],
        device)
    np.testing.assert_array_equal(ints, f.view(np.int32))
    np.testing.assert_array_equal(floats.view(np.uint32), f.view(np.uint32) ^ 0x80000000)
    np.testing.assert_array_equal(uints, f.view(np.uint32))
    np.testing.assert_array_equal(lls, d.view(np.int64))
    np.testing.assert_array_equal(doubles, (d.view(np.int64) + 1).view(np.float64))
    np.testing.assert_array_equal(hi, (d.view(np.int64) >> 32).astype(np.int32))
    np.testing.assert_array_equal(lo, d.view(np.int64).astype(np.int32))
    np.testing.assert_array_equal(joined, d)


def erf_inverse_error(y: float, x: float) -> float:
    """How far float y is from erfinv(x), in units of y's last place: |erf(y) - x| over erf's
    slope at y, per ulp."""
    slope = 2 / math.sqrt(math.pi) * math.exp(-y * y)
    return abs(math.erf(y) - x) / slope / float(np.spacing(np.float32(abs(y))))


@pytest.mark.parametrize("device", DEVICES)
def test_math_library_functions(device, rng):
    x = rng.uniform(-0.999, 0.999, 256)
    x[:6] = [0.0, 0.5, -0.5, 1e-30, 0.9999, -0.99999]
    p = rng.uniform(1e-6, 1 - 1e-6, 256)
    p[:4] = [1e-30, 1e-12, 0.5, 1 - 2.0 ** -20]
    s = rng.uniform(-8, 8, 256)
    s[:8] = [0, 1, -3, 0.5, -1.5, 2.25, 1e6, 7.0]
    g = rng.uniform(0.1, 20, 256)
    names = ["erfinv", "erfcinv", "normcdfinv", "normcdf", "sinpi", "cospi", "lgamma", "tgamma",
             "exp10", "rcbrt", "asinh", "fdim", "remainder", "ldexp", "frexp_m", "frexp_e",
             "modf_f", "modf_i", "sincos_s", "sincos_c", "lround", "nearbyint"]
    outs = run("math_library", """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    o0[i] = erfinvf(a[i]);
    o1[i] = erfcinvf(b[i]);
    o2[i] = normcdfinvf(b[i]);
    o3[i] = normcdff(c[i]);
    o4[i] = sinpif(c[i]);
    o5[i] = cospif(c[i]);
    o6[i] = lgammaf(d[i]);
    o7[i] = tgammaf(d[i]);
    o8[i] = exp10f(c[i] / 4.0f);
    o9[i] = rcbrtf(d[i]);
    o10[i] = asinhf(c[i]);
    o11[i] = fdimf(c[i], 1.0f);
    o12[i] = remainderf(c[i], 1.5f);
    o13[i] = ldexpf(c[i], 5);
    int e;
    o14[i] = frexpf(d[i], &e);
    o15[i] = e;
    float whole;
    o16[i] = modff(c[i], &whole);
    o17[i] = whole;
    float sine, cosine;
    sincosf(c[i], &sine, &cosine);
    o18[i] = sine;
    o19[i] = cosine;
    o20[i] = lroundf(c[i]);
    o21[i] = nearbyintf(c[i]);
""", [x.astype(np.float32), p.astype(np.float32), s.astype(np.float32), g.astype(np.float32)],
        [((256,), np.int32 if n in ("frexp_e", "lround") else np.float32) for n in names], device)
    r = dict(zip(names, outs))
    xf, pf, sf, gf = (v.astype(np.float32).astype(np.float64) for v in (x, p, s, g))
    assert max(erf_inverse_error(float(y), v) for y, v in zip(r["erfinv"], xf) if v) <= 3
    assert r["erfinv"][0] == 0
    # erfcinv(p) = erfinv(1 - p), checked through erfc where 1 - p would lose p's digits.
    for y, v in zip(r["erfcinv"].astype(np.float64), pf):
        assert abs(math.erfc(y) - v) <= 8 * abs(2 / math.sqrt(math.pi) * math.exp(-y * y)) * \
            abs(float(np.spacing(np.float32(y)))) + 1e-7 * v, (y, v)
    for y, v in zip(r["normcdfinv"].astype(np.float64), pf):
        assert abs(0.5 * math.erfc(-y / math.sqrt(2)) - v) <= \
            8 * math.exp(-y * y / 2) / math.sqrt(2 * math.pi) * abs(float(np.spacing(np.float32(y)))) \
            + 1e-7 * v, (y, v)
    np.testing.assert_allclose(r["normcdf"], [0.5 * math.erfc(-v / math.sqrt(2)) for v in sf],
                               rtol=2e-6, atol=1e-30)
    sinpi = np.array([0.0 if v == round(v) else math.sin(math.pi * math.remainder(v, 2))
                      for v in sf])
    np.testing.assert_allclose(r["sinpi"], sinpi, rtol=2e-6, atol=2e-7)
    assert np.all(r["sinpi"][sf == np.round(sf)] == 0)
    cospi = np.array([0.0 if abs(math.remainder(v, 2)) == 0.5 else math.cos(math.pi * v)
                      for v in sf])
    np.testing.assert_allclose(r["cospi"], cospi, rtol=2e-6, atol=2e-7)
    assert np.all(r["cospi"][np.abs(np.remainder(sf, 2)) == 0.5] == 0)
    np.testing.assert_allclose(r["lgamma"], [math.lgamma(v) for v in gf], rtol=4e-6, atol=2e-6)
    np.testing.assert_allclose(r["tgamma"], [math.gamma(v) for v in gf], rtol=4e-6)
    with np.errstate(over="ignore"):  # exp10f(250000) is inf, as 10.0 ** 250000 is
        np.testing.assert_allclose(r["exp10"], 10.0 ** (sf / 4), rtol=4e-6)
    np.testing.assert_allclose(r["rcbrt"], gf ** (-1 / 3), rtol=2e-6)
    np.testing.assert_allclose(r["asinh"], np.arcsinh(sf), rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(r["fdim"], np.maximum(sf - 1, 0).astype(np.float32))
    np.testing.assert_array_equal(r["remainder"],
                                  [np.float32(math.remainder(v, 1.5)) for v in sf])
    np.testing.assert_array_equal(r["ldexp"], (sf * 32).astype(np.float32))
    mantissa, exponent = np.frexp(gf)
    np.testing.assert_array_equal(r["frexp_m"], mantissa.astype(np.float32))
    np.testing.assert_array_equal(r["frexp_e"], exponent)
    np.testing.assert_array_equal(r["modf_i"], np.trunc(sf).astype(np.float32))
    np.testing.assert_array_equal(r["modf_f"], (sf - np.trunc(sf)).astype(np.float32))
    np.testing.assert_allclose(r["sincos_s"], np.sin(sf), rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(r["sincos_c"], np.cos(sf), rtol=2e-6, atol=2e-7)
    np.testing.assert_array_equal(r["lround"], np.sign(sf) * np.floor(np.abs(sf) + 0.5))
    np.testing.assert_array_equal(r["nearbyint"], np.rint(sf).astype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_neighbours_nans_scaling_and_rounded_intrinsics(device, rng):
    n = 128
    x = (rng.standard_normal(n) * 10).astype(np.float32)
    y = (rng.standard_normal(n) * 10).astype(np.float32)
    d = rng.uniform(0.5, 100, n)
    e = rng.uniform(0.01, 1000, n).astype(np.float32)
    outs = run("neighbours", """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    o0[i] = nextafterf(a[i], b[i]);
    o1[i] = nextafter(a[i], b[i]);
    o2[i] = nextafter(c[i], 0.0);
    o3[i] = isnan(nanf("")) + isnan(nan(""));
    o4[i] = scalblnf(a[i], 3L);
    o5[i] = scalbln(c[i], -2L);
    o6[i] = __frsqrt_rn(d[i]);
    o7[i] = __drcp_rn(c[i]);
    o8[i] = __dsqrt_rn(c[i]);
""", [x, y, d, e], [((n,), np.float32)] * 2 + [((n,), np.float64), ((n,), np.int32),
                                               ((n,), np.float32)] + [((n,), np.float64)] +
        [((n,), np.float32)] + [((n,), np.float64)] * 2, device)
    np.testing.assert_array_equal(outs[0], np.nextafter(x, y))
    np.testing.assert_array_equal(outs[1], np.nextafter(x, y))
    np.testing.assert_array_equal(outs[2], np.nextafter(d, 0.0))
    np.testing.assert_array_equal(outs[3], np.full(n, 2))
    np.testing.assert_array_equal(outs[4], x * 8)
    np.testing.assert_array_equal(outs[5], d / 4)
    np.testing.assert_array_equal(outs[6], (1 / np.sqrt(e.astype(np.float64))).astype(np.float32))
    np.testing.assert_array_equal(outs[7], 1 / d)
    np.testing.assert_array_equal(outs[8], np.sqrt(d))


def to_bfloat16(values: np.ndarray) -> np.ndarray:
    """Values rounded once to bfloat16's 8 significant bits (to nearest even), as float32."""
    mantissa, exponent = np.frexp(np.asarray(values, dtype=np.float64))
    return np.ldexp(np.rint(mantissa * 256) / 256, exponent).astype(np.float32)


@pytest.mark.parametrize("kind", ["__half", "__nv_bfloat16"])
@pytest.mark.parametrize("device", DEVICES)
def test_half_precision_intrinsics(device, kind, rng):
    x = rng.standard_normal(256).astype(np.float32) * 4
    y = rng.standard_normal(256).astype(np.float32) * 4
    y[:8] = x[:8]  # equal pairs, for the comparisons
    if kind == "__half":
        # NumPy rounds float64 to float16 once, correctly.
        rounded, convert = (lambda v: v.astype(np.float16).astype(np.float32)), "__float2half"
        back = "__half2float"
    else:
        rounded, convert, back = to_bfloat16, "__float2bfloat16", "__bfloat162float"
    ops = {"__hadd": lambda a, b: a + b, "__hsub": lambda a, b: a - b,
           "__hmul": lambda a, b: a * b, "__hdiv": lambda a, b: a / b,
           "__hmax": np.maximum, "__hmin": np.minimum}
    tests = {"__heq": np.equal, "__hne": np.not_equal, "__hlt": np.less, "__hge": np.greater_equal}
    body = (f"    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    const {kind} x = {convert}(a[i]), y = {convert}(b[i]);\n")
    body += "".join(f"    o{k}[i] = {back}({op}(x, y));\n" for k, op in enumerate(ops))
    body += "".join(f"    o{len(ops) + k}[i] = {op}(x, y);\n" for k, op in enumerate(tests))
    body += f"    o{len(ops) + len(tests)}[i] = {back}(__hfma(x, y, {convert}(1.0f)));\n"
    # Postfix increments and decrements give the value before.
    steps = len(ops) + len(tests) + 1
    body += (f"    {kind} up = x, down = y;\n    const {kind} before = up++;\n    down--;\n"
             f"    o{steps}[i] = {back}(before);\n    o{steps + 1}[i] = {back}(up);\n"
             f"    o{steps + 2}[i] = {back}(down);\n")
    outs = run("half_ops_" + kind, body, [x, y],
               [((256,), np.float32)] * len(ops) + [((256,), np.bool_)] * len(tests) +
               [((256,), np.float32)] * 4, device)
    hx, hy = rounded(x), rounded(y)
    for (name, op), out in zip(ops.items(), outs):
        np.testing.assert_array_equal(out, rounded(op(hx.astype(np.float64), hy.astype(np.float64))),
                                      err_msg=name)
    for (name, op), out in zip(tests.items(), outs[len(ops):]):
        np.testing.assert_array_equal(out, op(hx, hy), err_msg=name)
    # Exact in float64 (22-bit products plus 1), then rounded once.
    np.testing.assert_array_equal(outs[-4], rounded(hx.astype(np.float64) * hy + 1))
    np.testing.assert_array_equal(outs[-3], hx)
    np.testing.assert_array_equal(outs[-2], rounded(hx.astype(np.float64) + 1))
    np.testing.assert_array_equal(outs[-1], rounded(hy.astype(np.float64) - 1))


@pytest.mark.parametrize("device", DEVICES)
def test_warp_reductions_and_matches(device, rng):
    n = 128
    u = rng.integers(0, 1 << 20, n).astype(np.uint32)
    v = rng.integers(-1000, 1000, n).astype(np.int32)
    key = rng.integers(0, 4, n).astype(np.int32)
    key[64:96] = 7  # one warp whose keys all match
    outs = run("warp_reduce_match", """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    o0[i] = __reduce_add_sync(0xffffffffu, a[i]);
    o1[i] = __reduce_min_sync(0xffffffffu, b[i]);
    o2[i] = __reduce_max_sync(0xffffffffu, a[i]);
    o3[i] = __reduce_or_sync(0xffffffffu, a[i]);
    o4[i] = __reduce_xor_sync(0xffffffffu, a[i]);
    o5[i] = __match_any_sync(0xffffffffu, c[i]);
    int all_equal;
    o6[i] = __match_all_sync(0xffffffffu, c[i], &all_equal);
    o7[i] = all_equal;
    o8[i] = warpSize;
""", [u, v, key], [((n,), np.uint32), ((n,), np.int32), ((n,), np.uint32), ((n,), np.uint32),
                   ((n,), np.uint32), ((n,), np.uint32), ((n,), np.uint32), ((n,), np.int32),
                   ((n,), np.int32)], device)
    warps = lambda a: np.repeat(a.reshape(-1, 32), 32, axis=0).reshape(n, 32)  # noqa: E731
    np.testing.assert_array_equal(outs[0], warps(u).sum(1, dtype=np.uint64).astype(np.uint32))
    np.testing.assert_array_equal(outs[1], warps(v).min(1))
    np.testing.assert_array_equal(outs[2], warps(u).max(1))
    np.testing.assert_array_equal(outs[3], np.bitwise_or.reduce(warps(u), axis=1))
    np.testing.assert_array_equal(outs[4], np.bitwise_xor.reduce(warps(u), axis=1))
    bits = (1 << np.arange(32, dtype=np.uint64))
    same = (warps(key) == key[:, None]) @ bits
    np.testing.assert_array_equal(outs[5], same.astype(np.uint32))
    uniform = np.repeat((key.reshape(-1, 32) == key.reshape(-1, 32)[:, :1]).all(1), 32)
    np.testing.assert_array_equal(outs[6], np.where(uniform, 0xFFFFFFFF, 0).astype(np.uint32))
    np.testing.assert_array_equal(outs[7], uniform.astype(np.int32))
    assert uniform[64:96].all() and not uniform[:32].all()
    np.testing.assert_array_equal(outs[8], np.full(n, 32))


def ptx_shuffle_source(mode: str, lane: np.ndarray, b: int, width: int) -> np.ndarray:
    """The lane each lane of a warp reads, by the PTX ISA's description of shfl.sync: the lane
    operand's low five bits, within segments of |width| lanes; an invalid source reads itself."""
    b &= 31
    segment = (32 - width) & 31
    clamp = 0 if mode == "up" else 31
    first = lane & segment
    last = first | (clamp & ~segment)
    if mode == "up":
        j = lane - b
        valid = j >= last
    elif mode == "down":
        j = lane + b
        valid = j <= last
    elif mode == "xor":
        j = lane ^ b
        valid = j <= last
    else:
        j = first | (b & ~segment)
        valid = j <= last
    return np.where(valid, j, lane)


SHUFFLE_FUNCTIONS = {"idx": "__shfl_sync", "up": "__shfl_up_sync", "down": "__shfl_down_sync",
                     "xor": "__shfl_xor_sync"}


@pytest.mark.parametrize("mode", ["regions", "cooperative",
                                  pytest.param("gpu", marks=needs_gpu)])
def test_warp_shuffles_read_the_low_five_bits_of_their_lane_argument(mode, rng, monkeypatch):
    if mode == "cooperative":
        monkeypatch.setenv("KJIT_CPU_REGIONS", "0")
    cases = [(m, arg, width) for m in SHUFFLE_FUNCTIONS for arg in (33, 63, -1, 37, 5)
             for width in (32, 8)]
    body = "".join(f"    o0[{k} * 64 + i] = {SHUFFLE_FUNCTIONS[m]}(0xffffffffu, a[i], {arg}, "
                   f"{width});\n" for k, (m, arg, width) in enumerate(cases))
    x = rng.integers(0, 1 << 30, 64).astype(np.int32)
    (out,) = run(f"warp_shuffle_arguments_{mode}",
                 "    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n" + body, [x],
                 [((len(cases) * 64,), np.int32)], "cuda" if mode == "gpu" else "cpu")
    lane = np.arange(32)
    for k, (m, arg, width) in enumerate(cases):
        source = ptx_shuffle_source(m, lane, arg, width)
        expected = np.concatenate([x[:32][source], x[32:][source]])
        np.testing.assert_array_equal(out[k * 64:(k + 1) * 64], expected,
                                      err_msg=f"{SHUFFLE_FUNCTIONS[m]}(..., {arg}, {width})")


def butterfly(values, width, op):
    """cg::reduce's order over tiles of |width| lanes (documented in the prelude): at each step,
    from width / 2 down to 1, lanes j and j ^ step both take op(lower lane's, higher lane's)."""
    v = values.reshape(-1, width).copy()
    step = width // 2
    while step:
        lanes = np.arange(width)
        low = (lanes & step) == 0
        combined = op(v[:, lanes[low]], v[:, lanes[low] | step])
        v[:, lanes[low]] = combined
        v[:, lanes[low] | step] = combined
        step //= 2
    return v.reshape(-1)


@pytest.mark.parametrize("device", DEVICES)
def test_cooperative_groups_reduce_and_sync(device, rng):
    n = 256
    f = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    i = rng.integers(-1000, 1000, n).astype(np.int32)
    u = rng.integers(0, 1 << 31, n).astype(np.uint32)
    d = rng.standard_normal(n)
    outs = run("cg_reduce", """
    namespace cg = cooperative_groups;
    cg::thread_block block = cg::this_thread_block();
    const unsigned k = block.thread_rank() + blockIdx.x * blockDim.x;
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> eight = cg::tiled_partition<8>(block);
    o0[k] = cg::reduce(warp, a[k], cg::plus<float>());
    o1[k] = cg::reduce(eight, a[k], cg::plus<float>());
    o2[k] = cg::reduce(warp, b[k], cg::less<int>());
    o3[k] = cooperative_groups::reduce(eight, b[k], cg::greater<int>());
    o4[k] = cg::reduce(warp, c[k], cg::bit_xor<unsigned>()) | cg::reduce(eight, c[k], cg::bit_and<unsigned>());
    o5[k] = cg::reduce(cg::tiled_partition<16>(block), d[k], cg::plus<double>());
    // After a block-wide sync every thread sees what the others wrote to shared memory.
    __shared__ int seen[64];
    seen[block.thread_rank()] = b[k];
    cg::sync(block);
    o6[k] = seen[63 - block.thread_rank()] + cg::reduce(warp, 1, cg::plus<int>());
""", [f, i, u, d], [((n,), np.float32), ((n,), np.float32), ((n,), np.int32), ((n,), np.int32),
                    ((n,), np.uint32), ((n,), np.float64), ((n,), np.int32)], device)
    np.testing.assert_array_equal(outs[0], butterfly(f, 32, lambda a, b: a + b))
    np.testing.assert_array_equal(outs[1], butterfly(f, 8, lambda a, b: a + b))
    np.testing.assert_allclose(outs[0], np.repeat(f.astype(np.float64).reshape(-1, 32).sum(1), 32),
                               rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(outs[2], np.repeat(i.reshape(-1, 32).min(1), 32))
    np.testing.assert_array_equal(outs[3], np.repeat(i.reshape(-1, 8).max(1), 8))
    np.testing.assert_array_equal(
        outs[4], np.repeat(np.bitwise_xor.reduce(u.reshape(-1, 32), axis=1), 32) |
        np.repeat(np.bitwise_and.reduce(u.reshape(-1, 8), axis=1), 8))
    np.testing.assert_array_equal(outs[5], butterfly(d, 16, lambda a, b: a + b))
    np.testing.assert_array_equal(outs[6], i.reshape(-1, 64)[:, ::-1].reshape(-1) + 32)


@pytest.mark.parametrize("device", DEVICES)
def test_cooperative_groups_reduce_over_the_lanes_present(device, rng):
    # 70 threads: the last tile of 8 has 6 lanes; in a branch, lanes 3 mod 4 stay out. The
    # operation holds state: each combination of two lanes' values adds k.
    n = 70
    v = rng.integers(-1000, 1000, n).astype(np.int32)
    k = int(rng.integers(1, 100))
    outs = run("cg_reduce_partial", """
    namespace cg = cooperative_groups;
    struct AddPlus {
        int k;
        __device__ int operator()(int a, int b) const { return a + b + k; }
    };
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    cg::thread_block_tile<8> tile = cg::tiled_partition<8>(cg::this_thread_block());
    o0[i] = cg::reduce(tile, a[i], AddPlus{b[0]});
    const int kk = b[0];
    o2[i] = cg::reduce(tile, a[i], [=](int x, int y) { return x + y + kk; });  // a capture
    struct Mutable {  // operator() not const
        int calls = 0;
        __device__ int operator()(int x, int y) { ++calls; return x + y; }
    };
    o3[i] = cg::reduce(tile, a[i], Mutable{});
    o1[i] = -1;
    if (i % 4 != 3) {
        using namespace cooperative_groups;  // reduce and plus unqualified
        o1[i] = reduce(tile, a[i], plus<int>());
    }
""", [v, np.full(n, k, np.int32)], [((n,), np.int32)] * 4, device, group=32)
    for first in range(0, n, 8):
        tile = v[first:first + 8]
        for out in (outs[0], outs[2]):
            np.testing.assert_array_equal(out[first:first + 8], tile.sum() + k * (len(tile) - 1))
        np.testing.assert_array_equal(outs[3][first:first + 8], tile.sum())
        idx = np.arange(first, min(first + 8, n))
        kept = idx[idx % 4 != 3]
        np.testing.assert_array_equal(outs[1][kept], v[kept].sum())
        np.testing.assert_array_equal(outs[1][idx[idx % 4 == 3]], -1)


@pytest.mark.parametrize("device", DEVICES)
def test_cooperative_groups_shuffle_and_reduce_vectors_and_structs(device, rng):
    # Types the warp shuffles lack: float2, a 12-byte struct and __half. 60 threads: the last
    # tile of 16 has 12 lanes. Whole numbers, so that any order of the sums is exact.
    n = 60
    x = rng.integers(-1000, 1000, n).astype(np.float32)
    y = rng.integers(-1000, 1000, n).astype(np.float32)
    outs = run("cg_any_type", """
    namespace cg = cooperative_groups;
    struct Stats { int count; float sum; float high; };
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(cg::this_thread_block());
    const float2 p = make_float2(a[i], b[i]);
    const float2 s = cg::reduce(tile, p, [](float2 u, float2 v) {
        return make_float2(u.x + v.x, u.y + v.y);
    });
    using cooperative_groups::reduce;  // a using declaration: reduce unqualified
    const Stats r = reduce(tile, Stats{1, a[i], b[i]}, [](Stats u, Stats v) {
        return Stats{u.count + v.count, u.sum + v.sum, fmaxf(u.high, v.high)};
    });
    const float2 q = tile.shfl(p, (tile.thread_rank() + 3) % 16);
    const Stats d = tile.shfl_down(Stats{int(i), a[i], b[i]}, 1);
    const __half h = tile.shfl_xor(__float2half(b[i]), 1);
    o0[i] = s.x; o1[i] = s.y;
    o2[i] = r.count; o3[i] = r.sum; o4[i] = r.high;
    o5[i] = q.x; o6[i] = q.y;
    o7[i] = float(d.count) + d.sum;
    o8[i] = __half2float(h);
""", [x, y], [((n,), np.float32)] * 2 + [((n,), np.int32)] + [((n,), np.float32)] * 6, device,
               group=32)
    tiles = [np.arange(first, min(first + 16, n)) for first in range(0, n, 16)]
    for idx in tiles:
        np.testing.assert_array_equal(outs[0][idx], x[idx].sum())
        np.testing.assert_array_equal(outs[1][idx], y[idx].sum())
        np.testing.assert_array_equal(outs[2][idx], len(idx))
        np.testing.assert_array_equal(outs[3][idx], x[idx].sum())
        np.testing.assert_array_equal(outs[4][idx], y[idx].max())
    whole = np.arange(48)  # shuffles read absent lanes in the last tile: not checked there
    rank = whole % 16
    source = whole - rank + (rank + 3) % 16
    np.testing.assert_array_equal(outs[5][whole], x[source])
    np.testing.assert_array_equal(outs[6][whole], y[source])
    below = np.where(rank < 15, whole + 1, whole)  # the tile's last lane keeps its own
    np.testing.assert_array_equal(outs[7][whole], below.astype(np.float32) + x[below])
    np.testing.assert_array_equal(outs[8][whole], y[whole ^ 1].astype(np.float16))


@pytest.mark.parametrize("device", DEVICES)
def test_cooperative_groups_named_through_the_header(device, rng):
    # An alias the header declares, used in the body and in a helper of the header; and after a
    # using directive, a function of the user's named reduce, which is not cooperative groups'.
    n = 64
    v = rng.integers(-1000, 1000, n).astype(np.int32)
    k = kjit.cuda_kernel(name="cg_alias", input_names=["a"], output_names=["o0", "o1", "o2"],
                         header="""
namespace grp = cooperative_groups;
__device__ int tile_sum(grp::thread_block_tile<16> t, int x) {
    return grp::reduce(t, x, grp::plus<int>());
}
__device__ int reduce(int x) { return 3 * x; }
""", source="""
    using namespace cooperative_groups;
    const unsigned i = threadIdx.x;
    grp::thread_block_tile<16> t = grp::tiled_partition<16>(grp::this_thread_block());
    o0[i] = grp::reduce(t, a[i], grp::plus<int>());
    o1[i] = tile_sum(t, a[i]);
    o2[i] = reduce(a[i]);
""")
    outs = k(inputs=[v], grid=(n, 1, 1), threadgroup=(n, 1, 1), output_shapes=[(n,)] * 3,
             output_dtypes=[np.int32] * 3, device=device)
    sums = np.repeat(v.reshape(-1, 16).sum(1), 16)
    np.testing.assert_array_equal(outs[0], sums)
    np.testing.assert_array_equal(outs[1], sums)
    np.testing.assert_array_equal(outs[2], 3 * v)


@pytest.mark.parametrize("device", DEVICES)
def test_memory_reinterpreted_through_a_pointer_cast_reads_the_last_store(device, rng):
    # A float written, then its bits through an int*: reading the float sees the int's store.
    x = rng.standard_normal(64).astype(np.float32)
    k = kjit.cuda_kernel(name="punned", input_names=["a"], output_names=["o"], header="""
__device__ float last_store(float* f, int* i, int bits) {
    *f = 1.0f;
    *i = bits;
    return *f;
}
""", source="""
    const unsigned i = threadIdx.x;
    float v = a[i];
    o[i] = last_store(&v, reinterpret_cast<int*>(&v), __float_as_int(a[i]) ^ 0x80000000);
""")
    out = k(inputs=[x], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
            output_dtypes=[np.float32], device=device, outputs=[poisoned((64,), np.float32)])[0]
    np.testing.assert_array_equal(out, -x)


@pytest.mark.parametrize("device", DEVICES)
def test_atomic_add_on_halves_bfloats_and_their_pairs(device, rng):
    n, bins = 256, 16  # sums of quarters, which stay exact in bfloat16 (up to 64) and half
    q = rng.integers(1, 9, n).astype(np.float32) / 4  # 0.25 ... 2
    k = kjit.cuda_kernel(name="half_atomics", input_names=["a"],
                         output_names=["h", "b", "h2", "b2", "before", "count"], source="""
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned bin = i % 16;
    // Neighbouring bins share a word: each add must leave its neighbour alone. (Every scope.)
    atomicAdd(&h[bin], __float2half(a[i]));
    atomicAdd_block(&b[bin], __float2bfloat16(a[i]));
    atomicAdd_system(reinterpret_cast<__half2*>(h2) + bin, __floats2half2_rn(a[i], 2.0f * a[i]));
    atomicAdd(reinterpret_cast<__nv_bfloat162*>(b2) + bin,
              __floats2bfloat162_rn(-a[i], 0.5f * a[i]));
    // What an add returns: the value before it. Adding ones, a bin's adds return each count once.
    before[i] = __half2float(atomicAdd(&count[bin], __float2half(1.0f)));
""")
    bf16 = kjit.bfloat16
    h, b, h2, b2, before, count = k(
        inputs=[q], grid=(n, 1, 1), threadgroup=(64, 1, 1), init_value=0.0, device=device,
        output_shapes=[(bins,), (bins,), (2 * bins,), (2 * bins,), (n,), (bins,)],
        output_dtypes=[np.float16, bf16, np.float16, bf16, np.float32, np.float16])
    sums = q.astype(np.float64).reshape(-1, bins).sum(0)
    np.testing.assert_array_equal(h.astype(np.float64), sums)
    np.testing.assert_array_equal(b.astype(np.float64), sums)
    np.testing.assert_array_equal(h2.astype(np.float64).reshape(bins, 2),
                                  np.stack([sums, 2 * sums], 1))
    np.testing.assert_array_equal(b2.astype(np.float64).reshape(bins, 2),
                                  np.stack([-sums, 0.5 * sums], 1))
    np.testing.assert_array_equal(count, np.full(bins, n // bins))
    for bin in range(bins):
        np.testing.assert_array_equal(np.sort(before[bin::bins]), np.arange(n // bins))


@pytest.mark.parametrize("device", DEVICES)
def test_other_intrinsics(device, rng):
    x = rng.standard_normal(256).astype(np.float32)
    w = rng.integers(-(1 << 40), 1 << 40, 256).astype(np.int64)
    total, absolute, read, halved, ticks = run("other_intrinsics", """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd_block(&o0[0], 1u);
    atomicAdd_system(&o0[1], 2u);
    __threadfence_system();
    __nanosleep(100);
    o1[i] = llabs(b[i]);
    o2[i] = __ldg(&a[i]) + __fmul_rn(a[i], 2.0f) + __fadd_rn(a[i], 1.0f);
    o3[i] = __hadd(int(b[i] >> 16), int(b[i] >> 20)) + int(__urhadd(unsigned(i), 7u));
    const long long start = clock64();
    o4[i] = clock64() >= start;
""", [x, w], [((2,), np.uint32), ((256,), np.int64), ((256,), np.float32), ((256,), np.int64),
              ((256,), np.int32)], device)
    # o0 is poisoned (-7 as uint32) before the atomics add to it.
    np.testing.assert_array_equal(total, (np.array([256, 512]) - 7) % 2 ** 32)
    np.testing.assert_array_equal(absolute, np.abs(w))
    np.testing.assert_allclose(read, x.astype(np.float64) * 4 + 1, rtol=1e-6, atol=1e-6)
    a32, b32 = (w >> 16).astype(np.int32).astype(np.int64), (w >> 20).astype(np.int32)
    np.testing.assert_array_equal(halved, (a32 + b32) // 2 + (np.arange(256) + 8) // 2)
    np.testing.assert_array_equal(ticks, np.ones(256))


@pytest.mark.parametrize("device", DEVICES)
def test_printf_writes_to_standard_output(device, capfd):
    (out,) = run("kernel_printf", """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 37) printf("thread %u of %d: %.2f\\n", i, 64, 1.25f);
    o0[i] = i;
""", [], [((64,), np.uint32)], device, grid=64)
    np.testing.assert_array_equal(out, np.arange(64))
    assert "thread 37 of 64: 1.25" in capfd.readouterr().out


ASSERTING = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(a[i] >= 0.0f);
    o0[i] = a[i] * 2.0f;
"""


@pytest.mark.parametrize("device", DEVICES)
def test_an_assert_that_holds(device, rng):
    x = rng.uniform(0, 1, 1000).astype(np.float32)
    (out,) = run("asserting", ASSERTING, [x], [((1000,), np.float32)], device)
    np.testing.assert_array_equal(out, x * 2)


def test_a_failed_assert_stops_the_kernel_with_launch_error_on_the_cpu(rng, capfd):
    # On a GPU a failed assert leaves the context unusable, as CUDA does; the CPU recovers.
    x = rng.uniform(0, 1, 1000).astype(np.float32)
    x[613] = -1
    with pytest.raises(kjit.LaunchError, match="an assert failed"):
        run("asserting", ASSERTING, [x], [((1000,), np.float32)], "cpu")
    assert "source line 3: assertion `a[i] >= 0.0f' failed" in capfd.readouterr().err
    trapping = kjit.cuda_kernel(name="trapping", input_names=["a"], output_names=["o0"],
                                source="if (a[threadIdx.x] < 0) __trap(); o0[threadIdx.x] = 1;")
    with pytest.raises(kjit.LaunchError, match="__trap"):
        trapping(inputs=[x[600:632]], output_shapes=[(32,)], output_dtypes=[np.float32],
                 grid=(32, 1, 1), threadgroup=(32, 1, 1), device="cpu")
    x[613] = 1  # and the next launch runs
    (out,) = run("asserting", ASSERTING, [x], [((1000,), np.float32)], "cpu")
    np.testing.assert_array_equal(out, x * 2)


@pytest.mark.parametrize("device", DEVICES)
def test_constant_memory_alignment_cache_hints_and_pragmas(device, rng):
    x = rng.standard_normal(64).astype(np.float32)
    k = kjit.cuda_kernel(name="hints", input_names=["a"], output_names=["o0", "o1"], header="""
__constant__ float kWeights[4] = {0.5f, -1.0f, 2.0f, 0.25f};
struct __align__(16) Quad { float v[3]; };
""", source="""
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    __builtin_assume(i < 64);
    float s = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) s += kWeights[k] * __ldcs(&a[(i + k) % 64]);
    __stcs(&o0[i], s + __ldg(&a[i]) + __ldcg(&a[i]));
    o1[i] = sizeof(Quad) + alignof(Quad);
""")
    sums, layout = k(inputs=[x], output_shapes=[(64,), (64,)],
                     output_dtypes=[np.float32, np.int32], grid=(64, 1, 1),
                     threadgroup=(32, 1, 1), device=device,
                     outputs=[poisoned((64,), np.float32), poisoned((64,), np.int32)])
    xd = x.astype(np.float64)
    weights = [0.5, -1.0, 2.0, 0.25]
    expected = sum(w * np.roll(xd, -k) for k, w in enumerate(weights)) + 2 * xd
    np.testing.assert_allclose(sums, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(layout, np.full(64, 16 + 16))


@pytest.mark.parametrize("device", DEVICES)
def test_cache_hints_on_half_and_bfloat16_values_and_pairs(device, rng):
    x = rng.standard_normal(64).astype(np.float16)
    b = rng.integers(0, 0x7F00, 64).astype(np.uint16)  # bfloat16 bits, no NaN
    outs = run("hints_16", """
    const unsigned i = threadIdx.x;
    o0[i] = __ldg(&a[i]);
    __stcs(&o1[i], __ldcg(&a[i]));
    const __nv_bfloat16* bf = reinterpret_cast<const __nv_bfloat16*>(b);
    __stwt(reinterpret_cast<__nv_bfloat16*>(o2) + i, __ldca(bf + i));
    if (i < 32) {
        const __half2* a2 = reinterpret_cast<const __half2*>(a);
        __stcg(reinterpret_cast<__half2*>(o3) + i, __ldlu(a2 + i));
        const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(b);
        __stwb(reinterpret_cast<__nv_bfloat162*>(o4) + i, __ldcv(b2 + i));
    }
""", [x, b], [((64,), np.float16)] * 2 + [((64,), np.uint16)] + [((64,), np.float16)] +
               [((64,), np.uint16)], device)
    for out, expected in zip(outs, [x, x, b, x, b]):
        np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize("pair", ["__half2", "__nv_bfloat162"])
@pytest.mark.parametrize("device", DEVICES)
def test_half_pairs(device, pair, rng):
    # Lane by lane, each lane rounded once as the scalar intrinsics round; shuffled across lanes
    # of a warp as one word.
    n = 64  # pairs, one per thread
    x = (rng.standard_normal(2 * n) * 3).astype(np.float32)
    y = (rng.standard_normal(2 * n) * 3).astype(np.float32)
    y[:4] = x[:4]  # equal lanes, for the comparisons
    if pair == "__half2":
        rounded = lambda v: np.asarray(v, dtype=np.float64).astype(np.float16).astype(np.float64)  # noqa: E731
        make, to_float2, scalar = "__floats2half2_rn", "__half22float2", "__half"
    else:
        rounded = lambda v: to_bfloat16(v).astype(np.float64)  # noqa: E731
        make, to_float2, scalar = "__floats2bfloat162_rn", "__bfloat1622float2", "__nv_bfloat16"
    ops = ["p + q", "p - q", "p * q", "p / q", "__hfma2(p, q, one)", "__hmax2(p, q)",
           "__hmin2(p, q)", "-p", "__habs2(p)", "__hlt2(p, q)", "__lowhigh2highlow(p)",
           "__shfl_xor_sync(0xffffffffu, p, 1)"]
    body = (f"    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    const {pair} p = {make}(a[2 * i], a[2 * i + 1]);\n"
            f"    const {pair} q = {make}(b[2 * i], b[2 * i + 1]);\n"
            f"    const {pair} one = {make}(1.0f, 1.0f);\n")
    for k, op in enumerate(ops):
        body += (f"    {{ const float2 f = {to_float2}({op}); o{k}[2 * i] = f.x; "
                 f"o{k}[2 * i + 1] = f.y; }}\n")
    body += f"    {pair} r = p;\n    r++;\n"
    body += f"    o{len(ops)}[i] = __hbeq2(p, q) + 2 * (p != q) + 4 * int(sizeof({pair}) == 4 && " \
            f"alignof({pair}) == 4) + 8 * int(__low2float(p) == float({scalar}(p.x))) + " \
            f"16 * (p < q) + 32 * (+p >= p) + 64 * (r > p);\n"
    outs = run("half_pairs_" + pair, body, [x, y],
               [((2 * n,), np.float32)] * len(ops) + [((n,), np.int32)], device, grid=n, group=32)
    a, b = rounded(x), rounded(y)
    swapped = a.reshape(-1, 2)[:, ::-1].ravel()
    partner = a.reshape(-1, 2, 2)[:, ::-1].ravel()  # the lanes of thread i ^ 1
    expected = [a + b, a - b, a * b, a / b, a * b + 1, np.maximum(a, b), np.minimum(a, b), -a,
                np.abs(a), (a < b).astype(np.float64), swapped, partner]
    for op, out, want in zip(ops, outs, expected):
        np.testing.assert_array_equal(out, rounded(want).astype(np.float32), err_msg=op)
    # == and != hold when they hold in both lanes (__hbeq2, __hbne2), as in cuda_fp16.h.
    lanes_equal = (a == b).reshape(-1, 2)
    less = (a < b).reshape(-1, 2).all(1)
    grows = (rounded(a + 1) > a).reshape(-1, 2).all(1)  # r++ can round back to p in a lane
    np.testing.assert_array_equal(outs[-1], lanes_equal.all(1) + 2 * (~lanes_equal).all(1) + 4 +
                                  8 + 16 * less + 32 + 64 * grows)


@pytest.mark.parametrize("device", DEVICES)
def test_signed_zeros_infinities_and_nans_as_a_gpu_gives_them(device):
    # __hmax/__hmin order +0 above -0; __saturatef gives +0 for -0 and NaN; sinpif of an
    # infinity is NaN; != of half pairs is __hbneu2 (unordered, both lanes), as cuda_fp16.h's.
    (out,) = run("edge_values", """
    const float inf = __int_as_float(0x7f800000), nan = __int_as_float(0x7fc00000);
    const __half pz = __float2half(0.0f), nz = __float2half(-0.0f);
    o0[0] = __half2float(__hmax(nz, pz));
    o0[1] = __half2float(__hmax(pz, nz));
    o0[2] = __half2float(__hmin(pz, nz));
    o0[3] = __half2float(__hmin(nz, pz));
    o0[4] = __saturatef(-0.0f);
    o0[5] = __saturatef(nan);
    o0[6] = sinpif(inf);
    o0[7] = sinpif(-inf);
    o0[8] = cospif(inf);
    o0[9] = __float2half2_rn(nan) != __float2half2_rn(nan);
    o0[10] = __hbneu2(__float2half2_rn(nan), __float2half2_rn(1.0f));
    o0[11] = __hbne2(__float2half2_rn(nan), __float2half2_rn(1.0f));
    o0[12] = normcdfinvf(0.5f);
    o0[13] = float(sinpi(1.0 - 0x1p-53) / 0x1p-53);
""", [], [((14,), np.float32)], device, grid=1, group=1)
    signs = np.signbit(out[:6])
    np.testing.assert_array_equal(out[:6], np.zeros(6))
    np.testing.assert_array_equal(signs, [False, False, True, True, False, False])
    assert np.isnan(out[6:9]).all()
    np.testing.assert_array_equal(out[9:12], [1, 1, 0])
    assert out[12] == 0 and not np.signbit(out[12])
    # sin(pi (1 - 2^-53)) = sin(pi 2^-53): relatively accurate next to the zero
    np.testing.assert_allclose(out[13], math.pi, rtol=1e-6)


def inverse_error_ulps(t: float, y: float) -> float:
    """How far t is from erfcinv(y), in units of t's last place: |erfc(t) - y| over erfc's
    slope at t (through logs where erfc(t) is tiny)."""
    if y < 1e-300:  # erfc underflows in float64: compare logs, whose slope is -2t asymptotically
        u = 1 / (2 * t * t)
        series = sum((-u) ** n * math.prod(range(1, 2 * n, 2)) for n in range(8))
        log_erfc = -t * t - math.log(t * math.sqrt(math.pi)) + math.log(series)
        return abs(log_erfc - math.log(y)) / (2 * t) / float(np.spacing(t))
    slope = 2 / math.sqrt(math.pi) * math.exp(-t * t)
    return abs(math.erfc(t) - y) / slope / abs(float(np.spacing(t)))


@pytest.mark.parametrize("device", DEVICES)
def test_double_inverse_error_functions_at_the_ends_of_their_ranges(device):
    # In double precision: erfinv near +-1 and erfcinv near 0 and 2 (where 1 - x and 2 - y lose
    # digits), normcdfinv in both tails, and erfcinv where erfc(t) underflows.
    y = np.array([1e-300, 5e-324, 1e-100, 1e-20, 1e-10, 0.01, 0.3, 0.5, 0.9, 1.2, 1.7,
                  2 - 2.0 ** -51, 1.9999999999])
    erfinv, erfcinv, normcdfinv = run("inverse_erf", """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    o0[i] = erfinv(1.0 - a[i]);
    o1[i] = erfcinv(a[i]);
    o2[i] = normcdfinv(a[i] / 2.0);
""", [y], [((y.size,), np.float64)] * 3, device, group=16)
    # Within CUDA's documented bounds (erfinv 5 ulp, erfcinv 6, normcdfinv 8), plus one.
    for v, t in zip(y, erfcinv):
        assert inverse_error_ulps(float(t), float(v)) <= 7, (v, t)
    for v, t in zip(y, erfinv):  # erfinv(x) = erfcinv(1 - x), for the x = 1 - v given
        below_one = 1.0 - (1.0 - float(v))
        if below_one == 0:
            assert t == np.inf
        elif below_one < 1:
            assert inverse_error_ulps(float(t), below_one) <= 6, (v, t)
    for v, t in zip(y, normcdfinv):  # normcdfinv(p) = -sqrt(2) erfcinv(2p), for p = v / 2
        p = float(v) / 2
        if p == 0:
            assert t == -np.inf
        else:
            assert inverse_error_ulps(-float(t) / math.sqrt(2), 2 * p) <= 9, (v, t)
