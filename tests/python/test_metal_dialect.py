"""Metal dialect features beyond the thread model: swizzles, packed vectors, as_type,
numeric_limits, <metal_math> constants, group memory used as a transpose tile, and digraphs."""

import numpy as np
import pytest

import kjit
from conftest import DEVICES, poisoned

SWIZZLES = """
uint i = thread_position_in_grid.x;
float4 v = float4(a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]);
float3 r = v.zyx;
float2 s = v.xy + v.ba;
v.xy = s;
v.zw += float2(1.0, 2.0);
thread float4* pv = &v;
float2 t = pv->wx;
out[8 * i + 0] = v.x;
out[8 * i + 1] = v.y;
out[8 * i + 2] = v.z;
out[8 * i + 3] = v.w;
out[8 * i + 4] = r.x - r.z;
out[8 * i + 5] = t.x * t.y;
out[8 * i + 6] = v.xyzw.wzyx.x;
out[8 * i + 7] = dot(v.rgb, float3(1.0, 2.0, 3.0));
"""


def test_swizzles_read_and_write(rng):
    kernel = kjit.metal_kernel("swizzles", ["a"], ["out"], SWIZZLES)
    n = 37
    a = rng.standard_normal(4 * n).astype(np.float32)
    (out,) = kernel(inputs=[a], grid=(n, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(n, 8)],
                    output_dtypes=[np.float32], outputs=[poisoned((n, 8), np.float32)])
    x = a.astype(np.float64).reshape(n, 4)
    v = x.copy()
    v[:, 0:2] = x[:, 0:2] + x[:, 2:4]
    v[:, 2:4] += [1.0, 2.0]
    ref = np.stack([v[:, 0], v[:, 1], v[:, 2], v[:, 3], x[:, 2] - x[:, 0], v[:, 3] * v[:, 0],
                    v[:, 3], v[:, 0] + 2 * v[:, 1] + 3 * v[:, 2]], axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


PACKED = """
uint i = thread_position_in_grid.x;
const device packed_float3* p = (const device packed_float3*)a;
packed_float3 q = p[i];
float3 v = float3(q) * 2.0;
q = v.zxy;
q = packed_float3(q.x, q.y + 0.5, q.z);  // built element by element
out[3 * i + 0] = q[0];
out[3 * i + 1] = q.y;
out[3 * i + 2] = q.z;
sizes[0] = sizeof(packed_float3);
sizes[1] = sizeof(float3);
sizes[2] = alignof(packed_float3);
sizes[3] = sizeof(packed_half4);
"""


def test_packed_vectors_are_unaligned(rng):
    kernel = kjit.metal_kernel("packed", ["a"], ["out", "sizes"], PACKED)
    n = 29
    a = rng.standard_normal(3 * n).astype(np.float32)
    out, sizes = kernel(inputs=[a], grid=(n, 1, 1), threadgroup=(4, 1, 1),
                        output_shapes=[(n, 3), (4,)], output_dtypes=[np.float32, np.int32],
                        outputs=[poisoned((n, 3), np.float32), poisoned((4,), np.int32)])
    v = 2 * a.astype(np.float64).reshape(n, 3)
    ref = np.stack([v[:, 2], v[:, 0] + 0.5, v[:, 1]], axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    np.testing.assert_array_equal(sizes, [12, 16, 4, 8])


BITS = """
uint i = thread_position_in_grid.x;
uint bits = as_type<uint>(a[i]);
out_bits[i] = bits;
out_neg[i] = as_type<float>(bits ^ 0x80000000u);
half2 h = as_type<half2>(bits);
out_halves[2 * i] = h.x;
out_halves[2 * i + 1] = h.y;
"""


def test_as_type_reinterprets_bits(rng):
    kernel = kjit.metal_kernel("bits", ["a"], ["out_bits", "out_neg", "out_halves"], BITS)
    a = rng.standard_normal(50).astype(np.float32)
    outs = kernel(inputs=[a], grid=(a.size, 1, 1), threadgroup=(16, 1, 1),
                  output_shapes=[a.shape, a.shape, (2 * a.size,)],
                  output_dtypes=[np.uint32, np.float32, np.float16],
                  outputs=[poisoned(a.shape, np.uint32), poisoned(a.shape, np.float32),
                           poisoned((2 * a.size,), np.float16)])
    np.testing.assert_array_equal(outs[0], a.view(np.uint32))
    np.testing.assert_array_equal(outs[1], -a)
    np.testing.assert_array_equal(outs[2].view(np.uint16), a.view(np.uint16))


LIMITS = """
out[0] = numeric_limits<float>::max();
out[1] = numeric_limits<float>::min();
out[2] = numeric_limits<float>::lowest();
out[3] = numeric_limits<float>::epsilon();
out[4] = numeric_limits<float>::denorm_min();
out[5] = numeric_limits<half>::max();
out[6] = numeric_limits<half>::min();
out[7] = numeric_limits<half>::epsilon();
out[8] = numeric_limits<bfloat>::max();
out[9] = numeric_limits<bfloat>::epsilon();
out[10] = FLT_MAX;
out[11] = FLT_MIN;
out[12] = FLT_EPSILON;
out[13] = HALF_MAX;
out[14] = M_PI_F;
out[15] = M_E_F;
out[16] = M_SQRT2_F;
out[17] = M_LN2_F;
out[18] = INFINITY;
out[19] = -HUGE_VALF;
out[20] = NAN;
out[21] = numeric_limits<float>::infinity();
out[22] = metal::numeric_limits<bfloat>::quiet_NaN();
ints[0] = numeric_limits<int>::max();
ints[1] = numeric_limits<int>::min();
ints[2] = numeric_limits<short>::min();
ints[3] = numeric_limits<uchar>::max();
ints[4] = numeric_limits<ushort>::max();
ints[5] = numeric_limits<char>::lowest();
ints[6] = numeric_limits<uint>::max() == 4294967295u;
ints[7] = numeric_limits<long>::max() == 9223372036854775807l;
"""


@pytest.mark.parametrize("device", DEVICES)
def test_literals_beyond_floats_range_are_what_metal_makes_of_them(device):
    # Metal's literals are floats: 1e39 is infinity and 1e-50 zero, on every target.
    k = kjit.metal_kernel(name="far_literals", input_names=["a"], output_names=["o"], source="""
    const uint i = thread_position_in_grid.x;
    const float values[5] = {1e39, -1e39, 1e-50, 1e-40, float(1e39h)};
    o[i] = values[i] + a[i];
""")
    (out,) = k(inputs=[np.zeros(5, np.float32)], output_shapes=[(5,)], output_dtypes=[np.float32],
               grid=(5, 1, 1), threadgroup=(5, 1, 1), device=device,
               outputs=[np.full(5, 7, np.float32)])
    np.testing.assert_array_equal(out, np.array([np.inf, -np.inf, 0, 1e-40, np.inf], np.float32))


def test_numeric_limits_and_constants():
    kernel = kjit.metal_kernel("limits", [], ["out", "ints"], LIMITS)
    out, ints = kernel(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                       output_shapes=[(23,), (8,)], output_dtypes=[np.float32, np.int32],
                       outputs=[poisoned((23,), np.float32), poisoned((8,), np.int32)])
    f32, f16 = np.finfo(np.float32), np.finfo(np.float16)
    expected = [f32.max, f32.tiny, -f32.max, f32.eps, f32.smallest_subnormal,
                f16.max, f16.tiny, f16.eps, 3.3895313892515355e38, 2.0 ** -7,
                f32.max, f32.tiny, f32.eps, f16.max, np.pi, np.e, np.sqrt(2), np.log(2),
                np.inf, -np.inf]
    np.testing.assert_array_equal(out[:20], np.array(expected, dtype=np.float32))
    assert np.isnan(out[20]) and np.isposinf(out[21]) and np.isnan(out[22])
    np.testing.assert_array_equal(ints, [2 ** 31 - 1, -2 ** 31, -2 ** 15, 255, 65535, -128, 1, 1])


TRANSPOSE = """
threadgroup float tile[TILE][TILE + 1];
uint2 g = threadgroup_position_in_grid.xy;
uint2 t = thread_position_in_threadgroup.xy;
uint rows = a_shape[0], cols = a_shape[1];
uint x = g.x * TILE + t.x, y = g.y * TILE + t.y;
if (x < cols && y < rows) tile[t.y][t.x] = a[y * cols + x];
threadgroup_barrier(mem_flags::mem_threadgroup);
uint ox = g.y * TILE + t.x, oy = g.x * TILE + t.y;
if (ox < rows && oy < cols) out[oy * rows + ox] = tile[t.x][t.y];
"""


@pytest.mark.parametrize("shape", [(64, 96), (45, 70), (1, 33)])
def test_tiled_transpose_through_group_memory(shape, rng):
    kernel = kjit.metal_kernel("transpose", ["a"], ["out"], TRANSPOSE)
    tile = 16
    a = rng.standard_normal(shape).astype(np.float32)
    rows, cols = shape
    grid = (-(-cols // tile) * tile, -(-rows // tile) * tile, 1)
    (out,) = kernel(inputs=[a], template=[("TILE", tile)], grid=grid,
                    threadgroup=(tile, tile, 1), output_shapes=[(cols, rows)],
                    output_dtypes=[np.float32], outputs=[poisoned((cols, rows), np.float32)])
    np.testing.assert_array_equal(out, a.T)


DIGRAPH_LAMBDA = """
const uint i = thread_position_in_grid.x;
auto twice = [](float v) <% return v * 2.0f; %>;
float x = twice(inp<:i:>);
out<:i:> = simd_sum(x);
"""


@pytest.mark.parametrize("device", DEVICES)
def test_digraph_braces_are_braces(device, rng):
    # In a body that waits, return becomes co_return but in a lambda: the lambda's braces are
    # found when spelt as digraphs too.
    k = kjit.metal_kernel(name="digraph_lambda", input_names=["inp"], output_names=["out"],
                          source=DIGRAPH_LAMBDA)
    x = rng.integers(-8, 8, 64).astype(np.float32)
    (out,) = k(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32], grid=(64, 1, 1),
               threadgroup=(32, 1, 1), device=device)
    expected = np.repeat([2 * x[:32].sum(), 2 * x[32:].sum()], 32)
    np.testing.assert_array_equal(out, expected)


TEMPLATE_LAMBDA = """
const uint i = thread_position_in_grid.x;
auto twice = []<class T>(T v) { return v * T(2); };
auto sum_of = []<class T, int N = 2>(vec<T, N> v) -> T { return v.x + v.y; };
float x = sum_of(float2(twice(inp[i]), 0.0f));
threadgroup_barrier(mem_flags::mem_none);
out[i] = simd_sum(x);
"""


@pytest.mark.parametrize("regions", ["1", "0"])
def test_a_template_lambda_returns_from_itself(regions, rng, monkeypatch, real_factories):
    # Where the body waits, its returns become the threads' (co_return, or leaving the
    # group's loop); a template lambda's stay the lambda's, in region and cooperative mode.
    # Template lambdas are C++20, which the CPU compiles; NVRTC compiles C++17.
    monkeypatch.setenv("KJIT_CPU_REGIONS", regions)
    k = kjit.metal_kernel(name=f"template_lambda_{regions}", input_names=["inp"],
                          output_names=["out"], source=TEMPLATE_LAMBDA)
    x = rng.integers(-8, 8, 64).astype(np.float32)
    (out,) = k(inputs=[x], output_shapes=[(64,)], output_dtypes=[np.float32], grid=(64, 1, 1),
               threadgroup=(32, 1, 1), device="cpu")
    expected = np.repeat([2 * x[:32].sum(), 2 * x[32:].sum()], 32)
    np.testing.assert_array_equal(out, expected)


def test_a_line_comment_ending_in_a_backslash_comments_out_the_next_line(rng):
    # As in C++: the compiler splices the lines before it sees the comment.
    kernel = kjit.metal_kernel(name="continued_comment", input_names=["inp"],
                               output_names=["out"], source=(
                                   "uint i = thread_position_in_grid.x;\n"
                                   "out[i] = inp[i]; // doubled below? \\\n"
                                   "out[i] = 2 * inp[i];\n"))
    x = rng.standard_normal(64).astype(np.float32)
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                    grid=(64, 1, 1), threadgroup=(32, 1, 1))
    np.testing.assert_array_equal(out, x)
