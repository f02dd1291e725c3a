"""Metal's standard library beyond C's math, on both backends: integer functions, three-way
min/max/median, smoothstep and mad, the functions with out-parameters, Metal's other float
functions, geometry, and the pack/unpack functions; each against Python's integers or NumPy in
float64 (float32 where Metal's rule rounds a float32 product)."""

import math

import numpy as np
import pytest

import kjit
from conftest import DEVICES, poisoned


def run(name: str, source: str, inputs: list, outputs: list[tuple[tuple, type]], device: str,
        threads: int) -> list[np.ndarray]:
    """A metal_kernel of |source| over |threads| threads, inputs named a, b, c... and outputs o0,
    o1..., each poisoned first."""
    k = kjit.metal_kernel(name=name, input_names=list("abcdefgh"[:len(inputs)]),
                          output_names=[f"o{k}" for k in range(len(outputs))], source=source)
    n = threads
    return k(inputs=inputs, output_shapes=[s for s, _ in outputs],
             output_dtypes=[d for _, d in outputs], grid=(n, 1, 1), threadgroup=(64, 1, 1),
             device=device, outputs=[poisoned(s, d) for s, d in outputs])


def bits(x: int, n: int) -> int:
    return x & ((1 << n) - 1)


def signed(x: int, n: int) -> int:
    x = bits(x, n)
    return x - (1 << n) if x >> (n - 1) else x


# name, expression over u, v (uint), i, j (int), s (a small uint), its dtype, and the reference.
U32, I32 = np.uint32, np.int32
INTEGER_FUNCTIONS = [
    ("popcount", "popcount(u)", U32, lambda u, v, i, j, s: bin(u).count("1")),
    ("popcount_ushort", "popcount(ushort(u))", U32, lambda u, v, i, j, s: bin(u & 0xFFFF).count("1")),
    ("clz", "clz(u)", U32, lambda u, v, i, j, s: 32 - u.bit_length()),
    ("clz_uchar", "clz(uchar(u))", U32, lambda u, v, i, j, s: 8 - (u & 0xFF).bit_length()),
    ("clz_ulong", "uint(clz(ulong(u)))", U32, lambda u, v, i, j, s: 64 - u.bit_length()),
    ("ctz", "ctz(u)", U32, lambda u, v, i, j, s: (u & -u).bit_length() - 1 if u else 32),
    ("reverse_bits", "reverse_bits(u)", U32,
     lambda u, v, i, j, s: int(format(u, "032b")[::-1], 2)),
    ("rotate", "rotate(u, s)", U32, lambda u, v, i, j, s: bits(u << s % 32 | u >> (32 - s % 32), 32)),
    # Through long: a signed result (as absdiff's type) would come out negative.
    ("absdiff", "uint(long(absdiff(i, j)) >> 16)", U32, lambda u, v, i, j, s: abs(i - j) >> 16),
    ("absdiff_vector", "uint(long(absdiff(int2(i, j), int2(j, i)).y) >> 16)", U32,
     lambda u, v, i, j, s: abs(i - j) >> 16),
    ("absdiff_char", "uint(absdiff(char(i), char(j)))", U32,
     lambda u, v, i, j, s: abs(signed(i, 8) - signed(j, 8))),
    ("absdiff_uint", "absdiff(u, v)", U32, lambda u, v, i, j, s: abs(u - v)),
    ("abs_uint", "abs(u) + uint(abs(ushort(v)))", U32, lambda u, v, i, j, s: bits(u + (v & 0xFFFF), 32)),
    ("hadd", "hadd(i, j)", I32, lambda u, v, i, j, s: (i + j) >> 1),
    ("rhadd", "rhadd(u, v)", U32, lambda u, v, i, j, s: (u + v + 1) >> 1),
    ("mulhi", "mulhi(i, j)", I32, lambda u, v, i, j, s: (i * j) >> 32),
    ("mulhi_uint", "mulhi(u, v)", U32, lambda u, v, i, j, s: (u * v) >> 32),
    ("madhi", "madhi(u, v, s)", U32, lambda u, v, i, j, s: bits(((u * v) >> 32) + s, 32)),
    ("addsat", "addsat(i, j)", I32, lambda u, v, i, j, s: max(min(i + j, 2**31 - 1), -2**31)),
    ("subsat", "subsat(u, v)", U32, lambda u, v, i, j, s: max(u - v, 0)),
    ("addsat_short", "int(addsat(short(i), short(j)))", I32,
     lambda u, v, i, j, s: max(min(signed(i, 16) + signed(j, 16), 32767), -32768)),
    ("mad_sat", "mad_sat(i >> 8, j >> 8, i)", I32,
     lambda u, v, i, j, s: max(min((i >> 8) * (j >> 8) + i, 2**31 - 1), -2**31)),
    ("mad_sat_uint", "mad_sat(u, v, s)", U32, lambda u, v, i, j, s: min(u * v + s, 2**32 - 1)),
    ("mad_sat_long", "uint(mad_sat(long(i) << 31, long(j), long(s)) >> 40)", U32,
     lambda u, v, i, j, s: bits(max(min((i << 31) * j + s, 2**63 - 1), -2**63) >> 40, 32)),
    ("mul24", "mul24(i, j)", I32, lambda u, v, i, j, s: signed(signed(i, 24) * signed(j, 24), 32)),
    ("mad24", "mad24(u, v, s)", U32, lambda u, v, i, j, s: bits(bits(u, 24) * bits(v, 24) + s, 32)),
    ("extract_bits", "extract_bits(u, s % 16, 9u)", U32, lambda u, v, i, j, s: (u >> s % 16) & 511),
    ("extract_bits_int", "extract_bits(i, s % 16, 9u)", I32,
     lambda u, v, i, j, s: signed(i >> s % 16, 9)),
    ("insert_bits", "insert_bits(u, v, s % 16, 7u)", U32,
     lambda u, v, i, j, s: (u & ~(127 << s % 16)) | ((v & 127) << s % 16)),
    ("min3", "min3(i, j, int(s))", I32, lambda u, v, i, j, s: min(i, j, s)),
    ("median3", "median3(i, j, int(s))", I32, lambda u, v, i, j, s: sorted([i, j, s])[1]),
    ("max3", "max3(u, v, s)", U32, lambda u, v, i, j, s: max(u, v, s)),
]


@pytest.mark.parametrize("device", DEVICES)
def test_integer_functions(device, rng):
    n = 256
    u, v = (rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    i, j = (rng.integers(-(1 << 31), 1 << 31, n, dtype=np.int64).astype(np.int32) for _ in range(2))
    s = rng.integers(0, 40, n).astype(np.uint32)
    u[:4] = [0, 1, 0x80000000, 0xFFFFFFFF]
    i[:4], j[:4] = [2**31 - 1, -2**31, -1, 2**31 - 1], [1, -1, -2**31, 2**31 - 1]
    body = "    const uint k = thread_position_in_grid.x;\n" \
           "    const uint u = a[k], v = b[k], s = e[k];\n    const int i = c[k], j = d[k];\n"
    body += "".join(f"    o{m}[k] = {expr};\n" for m, (_, expr, _, _) in enumerate(INTEGER_FUNCTIONS))
    outs = run("integer_functions", body, [u, v, i, j, s],
               [((n,), dtype) for _, _, dtype, _ in INTEGER_FUNCTIONS], device, n)
    for (name, _, dtype, reference), out in zip(INTEGER_FUNCTIONS, outs):
        expected = [reference(*map(int, args)) for args in zip(u, v, i, j, s)]
        np.testing.assert_array_equal(out, np.array(expected, dtype=np.int64).astype(dtype),
                                      err_msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_vector_forms_work_element_by_element(device, rng):
    u = rng.integers(0, 1 << 32, 4 * 64, dtype=np.uint64).astype(np.uint32)
    x = rng.uniform(-2, 2, 4 * 64).astype(np.float32)
    counts, rotated, smooth = run("vector_library", """
    const uint k = thread_position_in_grid.x;
    const uint4 w = uint4(a[4 * k], a[4 * k + 1], a[4 * k + 2], a[4 * k + 3]);
    const float4 f = float4(b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]);
    const uint4 c = popcount(w);
    const uint4 r = rotate(w, uint4(1, 2, 3, 4));
    const float4 t = smoothstep(-1.0f, 1.0f, f);
    for (int m = 0; m < 4; ++m) {
        o0[4 * k + m] = c[m];
        o1[4 * k + m] = r[m];
        o2[4 * k + m] = t[m];
    }
""", [u, x], [((4 * 64,), np.uint32), ((4 * 64,), np.uint32), ((4 * 64,), np.float32)], device,
        64)
    np.testing.assert_array_equal(counts, [bin(int(w)).count("1") for w in u])
    shifts = np.tile([1, 2, 3, 4], 64)
    np.testing.assert_array_equal(rotated, [bits(int(w) << n | int(w) >> (32 - n), 32)
                                            for w, n in zip(u, shifts)])
    t = np.clip((x.astype(np.float64) + 1) / 2, 0, 1)
    np.testing.assert_allclose(smooth, t * t * (3 - 2 * t), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_float_functions(device, rng):
    x = rng.uniform(-6, 6, 256).astype(np.float32)
    x[:6] = [0, 1, -2, 0.5, -1.5, 0.25]
    y = rng.uniform(0.1, 40, 256).astype(np.float32)
    names = ["sin", "cos", "frexp_m", "frexp_e", "modf_f", "modf_i", "ldexp", "exp10", "sinpi",
             "cospi", "tanpi", "fdim", "ilogb", "logb", "mad", "fmin3", "fmedian3", "nextafter"]
    outs = run("float_functions", """
    const uint k = thread_position_in_grid.x;
    const float x = a[k], y = b[k];
    float c;
    o0[k] = sincos(x, c);
    o1[k] = c;
    int e;
    o2[k] = frexp(y, e);
    o3[k] = e;
    float whole;
    o4[k] = modf(x, whole);
    o5[k] = whole;
    o6[k] = ldexp(x, 3);
    o7[k] = exp10(x / 2.0f);
    o8[k] = sinpi(x);
    o9[k] = cospi(x);
    o10[k] = tanpi(x / 8.0f);
    o11[k] = fdim(x, 1.0f);
    o12[k] = ilogb(y);
    o13[k] = logb(y);
    o14[k] = mad(x, y, 1.0f);
    o15[k] = fmin3(x, y, 0.5f);
    o16[k] = fmedian3(x, y, 0.5f);
    o17[k] = nextafter(x, 100.0f);
""", [x, y], [((256,), np.int32 if n in ("frexp_e", "ilogb") else np.float32) for n in names],
        device, 256)
    r = dict(zip(names, outs))
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_allclose(r["sin"], np.sin(xd), rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(r["cos"], np.cos(xd), rtol=2e-6, atol=2e-7)
    mantissa, exponent = np.frexp(yd)
    np.testing.assert_array_equal(r["frexp_m"], mantissa.astype(np.float32))
    np.testing.assert_array_equal(r["frexp_e"], exponent)
    np.testing.assert_array_equal(r["modf_i"], np.trunc(x))
    np.testing.assert_array_equal(r["modf_f"], x - np.trunc(x))
    np.testing.assert_array_equal(r["ldexp"], x * 8)
    np.testing.assert_allclose(r["exp10"], 10 ** (xd / 2), rtol=4e-6)
    np.testing.assert_allclose(r["sinpi"], [0.0 if v == round(v) else math.sin(math.pi * v)
                                            for v in xd], rtol=2e-6, atol=2e-7)
    assert np.all(r["sinpi"][x == np.round(x)] == 0)
    np.testing.assert_allclose(r["cospi"], np.cos(np.pi * xd), rtol=2e-6, atol=2e-7)
    assert np.all(r["cospi"][np.abs(np.remainder(xd, 2)) == 0.5] == 0)
    np.testing.assert_allclose(r["tanpi"], np.tan(np.pi * xd / 8), rtol=4e-6, atol=4e-7)
    np.testing.assert_array_equal(r["fdim"], np.maximum(x - np.float32(1), 0))
    np.testing.assert_array_equal(r["ilogb"], exponent - 1)
    np.testing.assert_array_equal(r["logb"], exponent - 1)
    np.testing.assert_allclose(r["mad"], xd * yd + 1, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(r["fmin3"], np.minimum(np.minimum(x, y), np.float32(0.5)))
    np.testing.assert_array_equal(r["fmedian3"], np.median(np.stack([x, y, np.full_like(x, 0.5)]),
                                                           axis=0).astype(np.float32))
    np.testing.assert_array_equal(r["nextafter"], np.nextafter(x, np.float32(100)))


@pytest.mark.parametrize("device", DEVICES)
def test_out_parameter_and_stepping_functions_on_vectors_and_halves(device, rng):
    x = rng.uniform(0.1, 50, 4 * 64).astype(np.float32)
    names = ["frexp_m", "frexp_e", "modf_f", "modf_i", "ldexp", "ilogb", "nextafter", "half_next",
             "half_sinpi_inf"]
    outs = run("vector_out_parameters", """
    const uint k = thread_position_in_grid.x;
    const float4 v = float4(a[4 * k], a[4 * k + 1], a[4 * k + 2], a[4 * k + 3]);
    int4 e;
    const float4 m = frexp(v, e);
    float4 whole;
    const float4 f = modf(v, whole);
    const float4 scaled = ldexp(v, int4(1, 2, 3, 4));
    const int4 lg = ilogb(v);
    const float4 next = nextafter(v, float4(0.0f));
    for (int c = 0; c < 4; ++c) {
        o0[4 * k + c] = m[c]; o1[4 * k + c] = e[c]; o2[4 * k + c] = f[c]; o3[4 * k + c] = whole[c];
        o4[4 * k + c] = scaled[c]; o5[4 * k + c] = lg[c]; o6[4 * k + c] = next[c];
    }
    o7[k] = float(nextafter(half(v.x), half(100.0f)));
    o8[k] = float(sinpi(half(INFINITY)));
""", [x], [((4 * 64,), np.int32 if n in ("frexp_e", "ilogb") else np.float32)
           for n in names[:7]] + [((64,), np.float32)] * 2, device, 64)
    r = dict(zip(names, outs))
    mantissa, exponent = np.frexp(x.astype(np.float64))
    np.testing.assert_array_equal(r["frexp_m"], mantissa.astype(np.float32))
    np.testing.assert_array_equal(r["frexp_e"], exponent)
    np.testing.assert_array_equal(r["modf_i"], np.trunc(x))
    np.testing.assert_array_equal(r["modf_f"], x - np.trunc(x))
    np.testing.assert_array_equal(r["ldexp"], x * np.tile([2, 4, 8, 16], 64).astype(np.float32))
    np.testing.assert_array_equal(r["ilogb"], exponent - 1)
    np.testing.assert_array_equal(r["nextafter"], np.nextafter(x, np.float32(0)))
    halves = x[::4].astype(np.float16)
    np.testing.assert_array_equal(r["half_next"],
                                  np.nextafter(halves, np.float16(100)).astype(np.float32))
    assert np.isnan(r["half_sinpi_inf"]).all()


@pytest.mark.parametrize("device", DEVICES)
def test_geometry(device, rng):
    p = rng.standard_normal((64, 3)).astype(np.float32)
    q = rng.standard_normal((64, 3)).astype(np.float32)
    names = ["cross", "normalize", "reflect", "refract", "faceforward"]
    outs = run("geometry", """
    const uint k = thread_position_in_grid.x;
    const float3 p = float3(a[3 * k], a[3 * k + 1], a[3 * k + 2]);
    const float3 q = float3(b[3 * k], b[3 * k + 1], b[3 * k + 2]);
    const float3 n = normalize(q);
    const float3 results[5] = {cross(p, q), normalize(p), reflect(p, n), refract(normalize(p), n, 0.7f),
                               faceforward(n, p, q)};
    for (int m = 0; m < 5; ++m) {
        o0[15 * k + 3 * m] = results[m].x;
        o0[15 * k + 3 * m + 1] = results[m].y;
        o0[15 * k + 3 * m + 2] = results[m].z;
    }
    o1[k] = distance(p, q);
    o2[k] = distance_squared(p, q) + length_squared(p);
""", [p.ravel(), q.ravel()], [((64 * 15,), np.float32), ((64,), np.float32),
                              ((64,), np.float32)], device, 64)
    vectors, dist, squares = outs
    got = dict(zip(names, vectors.reshape(64, 5, 3).transpose(1, 0, 2)))
    pd, qd = p.astype(np.float64), q.astype(np.float64)
    n = qd / np.linalg.norm(qd, axis=1, keepdims=True)
    unit = pd / np.linalg.norm(pd, axis=1, keepdims=True)
    d = (n * unit).sum(1, keepdims=True)
    k = 1 - 0.49 * (1 - d * d)
    refracted = np.where(k < 0, 0, 0.7 * unit - (0.7 * d + np.sqrt(np.maximum(k, 0))) * n)
    expected = {"cross": np.cross(pd, qd), "normalize": unit,
                "reflect": pd - 2 * (n * pd).sum(1, keepdims=True) * n, "refract": refracted,
                "faceforward": np.where((qd * pd).sum(1, keepdims=True) < 0, n, -n)}
    for name in names:
        np.testing.assert_allclose(got[name], expected[name], rtol=2e-5, atol=2e-5, err_msg=name)
    np.testing.assert_allclose(dist, np.linalg.norm(pd - qd, axis=1), rtol=2e-6)
    np.testing.assert_allclose(squares, ((pd - qd) ** 2).sum(1) + (pd ** 2).sum(1), rtol=2e-6)


def unpacked(words: np.ndarray, bits: int, n: int, signed_: bool) -> np.ndarray:
    """The n fields of each word, bits wide, first in the low bits, as normalized values."""
    fields = np.stack([(words.astype(np.int64) >> (bits * k)) & ((1 << bits) - 1)
                       for k in range(n)], axis=1)
    if not signed_:
        return fields / float((1 << bits) - 1)
    fields = np.where(fields >> (bits - 1), fields - (1 << bits), fields)
    return np.maximum(fields / float((1 << (bits - 1)) - 1), -1.0)


def packed(x: np.ndarray, bits: int, signed_: bool) -> np.ndarray:
    """Each row of float32s in one word: clamped, scaled in float32, rounded to even; NaN is 0."""
    low, scale = (-1.0, (1 << (bits - 1)) - 1) if signed_ else (0.0, (1 << bits) - 1)
    clamped = np.nan_to_num(np.clip(x, low, 1.0), nan=0.0).astype(np.float32)
    values = np.rint(clamped * np.float32(scale)).astype(np.int64) & ((1 << bits) - 1)
    return sum(values[:, k] << (bits * k) for k in range(x.shape[1])).astype(np.uint32)


@pytest.mark.parametrize("device", DEVICES)
def test_pack_and_unpack(device, rng):
    n = 256
    words = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x = rng.uniform(-1.3, 1.3, (n, 4)).astype(np.float32)
    # Ties (0.5 * 255 = 127.5, 0.5 * 127 = 63.5), the ends, beyond them, and NaN.
    x[:6] = [[0.5, -0.5, 1.0, -1.0], [0.0, -0.0, 2.0, -2.0], [np.nan, np.inf, -np.inf, 0.25],
             [1 / 255, 254.5 / 255, 0.5 / 127, -126.5 / 127], [0.5, 0.25, -0.75, 0.125],
             [32767.5 / 65535, -16383.5 / 32767, 0.99999, -0.99999]]
    outs = run("pack_unpack", """
    const uint k = thread_position_in_grid.x;
    const uint w = a[k];
    const float4 x = float4(b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]);
    const float4 unpacked[2] = {unpack_unorm4x8_to_float(w), unpack_snorm4x8_to_float(w)};
    const float2 halves[2] = {unpack_unorm2x16_to_float(w), metal::unpack_snorm2x16_to_float(w)};
    const half4 as_half = unpack_snorm4x8_to_half(w);
    const half2 as_half2 = unpack_unorm2x16_to_half(w);
    for (int m = 0; m < 4; ++m) {
        o0[8 * k + m] = unpacked[0][m];
        o0[8 * k + 4 + m] = unpacked[1][m];
        o1[4 * k + m] = float(as_half[m]);
    }
    for (int m = 0; m < 2; ++m) {
        o0[8 * n + 4 * k + m] = halves[0][m];
        o0[8 * n + 4 * k + 2 + m] = halves[1][m];
        o1[4 * n + 2 * k + m] = float(as_half2[m]);
    }
    o2[8 * k] = pack_float_to_unorm4x8(x);
    o2[8 * k + 1] = pack_float_to_snorm4x8(x);
    o2[8 * k + 2] = pack_float_to_unorm2x16(float2(x.x, x.y));
    o2[8 * k + 3] = metal::fast::pack_float_to_snorm2x16(float2(x.z, x.w));
    o2[8 * k + 4] = pack_half_to_unorm4x8(half4(x));
    o2[8 * k + 5] = pack_half_to_snorm4x8(half4(x));
    o2[8 * k + 6] = pack_half_to_unorm2x16(half2(x.x, x.y));
    o2[8 * k + 7] = pack_half_to_snorm2x16(half2(x.z, x.w));
""".replace("8 * n", str(8 * n)).replace("4 * n", str(4 * n)),
               [words, x.ravel()], [((12 * n,), np.float32), ((6 * n,), np.float32),
                                    ((8 * n,), np.uint32)], device, n)
    floats, halfs, words_out = outs
    expected = [unpacked(words, 8, 4, False), unpacked(words, 8, 4, True)]
    np.testing.assert_allclose(floats[:8 * n].reshape(n, 2, 4), np.stack(expected, axis=1),
                               rtol=1e-6, atol=0)
    expected = [unpacked(words, 16, 2, False), unpacked(words, 16, 2, True)]
    np.testing.assert_allclose(floats[8 * n:].reshape(n, 2, 2), np.stack(expected, axis=1),
                               rtol=1e-6, atol=0)
    np.testing.assert_allclose(halfs[:4 * n].reshape(n, 4), unpacked(words, 8, 4, True),
                               rtol=1e-3, atol=0)
    np.testing.assert_allclose(halfs[4 * n:].reshape(n, 2), unpacked(words, 16, 2, False),
                               rtol=1e-3, atol=0)
    h = x.astype(np.float16).astype(np.float32)
    expected = [packed(x, 8, False), packed(x, 8, True), packed(x[:, :2], 16, False),
                packed(x[:, 2:], 16, True), packed(h, 8, False), packed(h, 8, True),
                packed(h[:, :2], 16, False), packed(h[:, 2:], 16, True)]
    np.testing.assert_array_equal(words_out.reshape(n, 8), np.stack(expected, axis=1))
    # Ties round to even: 127.5 -> 128 and 254.5 -> 254 (unorm8); 63.5 -> 64, -63.5 -> -64,
    # 0.5 -> 0 and -126.5 -> -126 (snorm8).
    rows = words_out.reshape(n, 8)
    assert (rows[0, 0] & 0xFF, (rows[3, 0] >> 8) & 0xFF) == (128, 254)
    assert (rows[0, 1] & 0xFF, (rows[0, 1] >> 8) & 0xFF) == (64, 0xC0)
    assert ((rows[3, 1] >> 16) & 0xFF, rows[3, 1] >> 24) == (0, 0x82)
