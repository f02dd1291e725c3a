"""MLX's kernel utilities (kernels/utils.h) in metal_kernel bodies: ceildiv of two types, the
multi-array and looped elem_to_loc, WorkPerThread, ConditionalType, cast_to, Limits of complex
numbers, MLX_MTL_PRAGMA_UNROLL; and Metal's colour components (.r .g .b .a) and swizzles."""

import numpy as np
import pytest

import kjit
from conftest import DEVICES, poisoned


def run(kernel, inputs, shapes, dtypes, grid, threadgroup, device="cpu", template=None):
    """Runs |kernel| into poisoned outputs and returns them."""
    outputs = [poisoned(s, d) for s, d in zip(shapes, dtypes)]
    kwargs = {"template": template} if template is not None else {}
    return kernel(inputs=inputs, output_shapes=shapes, output_dtypes=dtypes, grid=grid,
                  threadgroup=threadgroup, device=device, outputs=outputs, **kwargs)


@pytest.mark.parametrize("device", DEVICES)
def test_ceildiv_of_an_int_by_a_uint(rng, device):
    # The call of MLX's grid_sample VJP example: an int count by a const uint size.
    kernel = kjit.metal_kernel("ceildiv_mixed", ["n", "m"], ["q", "q64"], """
        uint i = thread_position_in_grid.x;
        int count = n[i];
        const uint size = m[i];
        q[i] = ceildiv(count, size);
        q64[i] = ceildiv(int64_t(count) << 20, size);
    """)
    k = 301
    n = rng.integers(0, 1 << 10, k).astype(np.int32)
    m = rng.integers(1, 70, k).astype(np.uint32)
    q, q64 = run(kernel, [n, m], [(k,), (k,)], [np.int32, np.int64], (k, 1, 1), (32, 1, 1),
                 device)
    np.testing.assert_array_equal(q, -(-n.astype(np.int64) // m))
    np.testing.assert_array_equal(q64, -(-(n.astype(np.int64) << 20) // m))


ELEM_TO_LOC_ND = """
    uint3 pos = thread_position_in_grid;
    uint o = pos.x + threads_per_grid.x * (pos.y + threads_per_grid.y * pos.z);
    auto two = elem_to_loc_2_nd(pos, a_shape, a_strides, b_strides, a_ndim);
    auto three = elem_to_loc_3_nd(pos, a_shape, a_strides, b_strides, c_strides, a_ndim);
    int2 narrow = elem_to_loc_2_nd<int>(pos, a_shape, a_strides, b_strides, a_ndim);
    out2[o] = a[two.x] + 10.0 * b[two.y];
    out3[o] = a[three.x] - b[three.y] * c[three.z];
    outn[o] = a[narrow.x] * b[narrow.y];
    out1[o] = a[elem_to_loc(pos, a_shape, a_strides, a_ndim)]
              + c[elem_to_loc<int>(pos, c_shape, c_strides, c_ndim)];
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(3, 4, 5, 6), (7, 9)])
def test_elem_to_loc_of_two_and_three_arrays(rng, device, shape):
    # Three views of one shape with different strides: reversed, transposed, broadcast.
    a = rng.standard_normal(shape).astype(np.float32)[::-1]
    b = np.ascontiguousarray(rng.standard_normal(shape[::-1]).astype(np.float32)).T
    c = np.broadcast_to(rng.standard_normal(shape[-1]).astype(np.float32), shape)
    kernel = kjit.metal_kernel("elem_to_loc_nd", ["a", "b", "c"],
                               ["out2", "out3", "outn", "out1"], ELEM_TO_LOC_ND,
                               ensure_row_contiguous=False)
    grid = (shape[-1], shape[-2], int(np.prod(shape[:-2])))
    outs = run(kernel, [a, b, c], [shape] * 4, [np.float32] * 4, grid, (2, 1, 1), device)
    a64, b64, c64 = (x.astype(np.float64) for x in (a, b, c))
    for got, ref in zip(outs, [a64 + 10 * b64, a64 - b64 * c64, a64 * b64, a64 + c64]):
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


LOOPED = """
    uint i = thread_position_in_grid.x;
    LoopedElemToLoc<D, OffsetT, G> loop(a_ndim);
    loop.next(int(i * CHUNK * S), a_shape, a_strides);
    for (int k = 0; k < CHUNK; ++k) {
        out[i * CHUNK + k] = a[loop.location()];
        if (S == 1) {
            loop.next(a_shape, a_strides);
        } else {
            loop.next(S, a_shape, a_strides);
        }
    }
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dims,general,shape,step", [
    (1, True, (4, 3, 5, 7), 1),
    (2, True, (4, 3, 5, 7), 1),
    (3, True, (4, 3, 5, 7), 3),
    (3, True, (6, 11), 2),
    (2, True, (2, 3, 4, 5, 6), 13),
    (1, False, (97,), 5),
    (2, False, (9, 13), 1),
    (2, False, (9, 13), 17),
])
def test_looped_elem_to_loc_walks_a_view_in_order(rng, device, dims, general, shape, step):
    # Each thread starts at its chunk (one jump over several axes) and then steps, by one
    # element or by several.
    base = rng.standard_normal(tuple(2 * s for s in shape)).astype(np.float32)
    view = base[tuple(slice(None, None, -2) if d % 2 else slice(1, None, 2)
                      for d in range(len(shape)))]
    assert view.shape == shape
    total = view.size // step
    chunk = 4
    threads = total // chunk
    kernel = kjit.metal_kernel("looped", ["a"], ["out"], LOOPED, ensure_row_contiguous=False)
    (out,) = run(kernel, [view], [(threads * chunk,)], [np.float32], (threads, 1, 1), (8, 1, 1),
                 device, template=[("D", dims), ("OffsetT", np.int64), ("G", general),
                                   ("CHUNK", chunk), ("S", step)])
    np.testing.assert_array_equal(out, view.reshape(-1)[::step][:threads * chunk])


WORK_PER_THREAD = """
    constexpr int N = WorkPerThread<T>::n;
    using Acc = typename ConditionalType<(sizeof(T) < 4), float, T>::type;
    uint base = thread_position_in_grid.x * N;
    MLX_MTL_PRAGMA_UNROLL
    for (int k = 0; k < N; ++k) {
        if (base + k < uint(size)) {
            out[base + k] = T(Acc(x[base + k]) * Acc(3) / Acc(2));
        }
    }
    if (thread_position_in_grid.x == 0) {
        n[0] = N;
        acc_size[0] = sizeof(Acc);
    }
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8, np.int16, np.int32, np.int64])
def test_work_per_thread_and_conditional_type(rng, device, dtype):
    kernel = kjit.metal_kernel("work_per_thread", ["x", "size"], ["out", "n", "acc_size"],
                               WORK_PER_THREAD)
    size = 203
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(-40, 40, size).astype(dtype)
    else:
        x = rng.standard_normal(size).astype(dtype)
    per_thread = 8 // np.dtype(dtype).itemsize
    threads = -(-size // per_thread)
    out, n, acc_size = run(kernel, [x, np.int32(size)], [(size,), (1,), (1,)],
                           [dtype, np.int32, np.int32], (threads, 1, 1), (16, 1, 1), device,
                           template=[("T", dtype)])
    assert n[0] == per_thread
    small = np.dtype(dtype).itemsize < 4
    assert acc_size[0] == (4 if small else np.dtype(dtype).itemsize)
    if small:
        ref = (x.astype(np.float32) * 3 / 2).astype(dtype)
    else:
        ref = x * dtype(3)
        ref = ref / 2 if np.issubdtype(dtype, np.floating) else np.trunc(ref / 2)
        ref = ref.astype(dtype)
    np.testing.assert_array_equal(out, ref)


CAST_TO = """
    uint i = thread_position_in_grid.x;
    truth[i] = cast_to<bool>(x[i]);
    ctruth[i] = cast_to<bool>(z[i]);
    truncated[i] = cast_to<int>(x[i]);
    btruth[i] = cast_to<bool>(bfloat16_t(x[i]));
    if (i == 0) {
        limits[0] = Limits<complex64_t>::max.real;
        limits[1] = Limits<complex64_t>::max.imag;
        limits[2] = Limits<complex64_t>::min.real;
        limits[3] = Limits<complex64_t>::min.imag;
    }
"""


@pytest.mark.parametrize("device", DEVICES)
def test_cast_to_and_complex_limits(rng, device):
    special = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-40, -3.75, 2.5]
    x = np.concatenate([special, rng.standard_normal(56) * 10]).astype(np.float32)
    x[20:30] = 0
    k = x.size
    z = (rng.standard_normal(k) + 1j * rng.standard_normal(k)).astype(np.complex64)
    z[:4] = [0, 1j, -0.0, 2]
    z[10:20] = 0
    kernel = kjit.metal_kernel("cast_to", ["x", "z"],
                               ["truth", "ctruth", "truncated", "btruth", "limits"], CAST_TO)
    finite = np.where(np.isfinite(x), x, 0)
    truth, ctruth, truncated, btruth, limits = run(
        kernel, [x, z], [(k,), (k,), (k,), (k,), (4,)],
        [np.bool_, np.bool_, np.int32, np.bool_, np.float32], (k, 1, 1), (16, 1, 1), device)
    np.testing.assert_array_equal(truth, x != 0)
    np.testing.assert_array_equal(ctruth, z != 0)
    fin = np.isfinite(x)
    np.testing.assert_array_equal(truncated[fin], np.trunc(finite[fin]).astype(np.int32))
    normal = (np.abs(x) > 1e-30) | (x == 0)  # a float denormal may be a bfloat zero
    np.testing.assert_array_equal(btruth[normal], x[normal] != 0)
    np.testing.assert_array_equal(limits, [np.inf, np.inf, -np.inf, -np.inf])


COLOURS = """
    uint i = thread_position_in_grid.x;
    float4 v = float4(a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]);
    out[16 * i + 0] = v.r;
    out[16 * i + 1] = v.g;
    out[16 * i + 2] = v.b;
    out[16 * i + 3] = v.a;
    float3 bgr = v.bgr;
    out[16 * i + 4] = bgr.r - 2.0 * bgr.b;
    v.r += 1.0;
    v.g *= 2.0;
    thread float* pb = &v.b;
    *pb = -*pb;
    thread float4* pv = &v;
    pv->a = v.x + v.w;
    out[16 * i + 5] = v.x;
    out[16 * i + 6] = v.y;
    out[16 * i + 7] = v.z;
    out[16 * i + 8] = v.w;
    v.rgb = v.gbr * 2.0;
    v.ag += float2(1.0, 3.0);
    float2 ar = pv->ar;
    out[16 * i + 9] = dot(v, float4(1.0, 10.0, 100.0, 1000.0));
    out[16 * i + 10] = ar.x - ar.y;
    packed_float3 q = packed_float3(v.b, v.g, v.r);
    q.g = 5.0;
    q.rb = float2(q.b, q.r);
    out[16 * i + 11] = q.r + 10.0 * q.g + 100.0 * q.b;
    uint2 u = uint2(i, 2 * i);
    u.gr = u.rg;
    u.g++;
    out[16 * i + 12] = float(u.r) - float(u.g);
    half3 h = half3(v.rgb);
    out[16 * i + 13] = float(h.b) + float(h.bgr.r);
    out[16 * i + 14] = v.bgra.a * v.rgba.r;
    out[16 * i + 15] = v.a;
"""


@pytest.mark.parametrize("device", DEVICES)
def test_colour_components_and_swizzles(rng, device):
    kernel = kjit.metal_kernel("colours", ["a"], ["out"], COLOURS)
    n = 29
    a = rng.standard_normal(4 * n).astype(np.float32)
    (out,) = run(kernel, [a], [(n, 16)], [np.float32], (n, 1, 1), (8, 1, 1), device)
    x = a.astype(np.float64).reshape(n, 4)
    ref = np.zeros((n, 16))
    ref[:, 0:4] = x
    ref[:, 4] = x[:, 2] - 2 * x[:, 0]
    v = x.copy()
    v[:, 0] += 1
    v[:, 1] *= 2
    v[:, 2] = -v[:, 2]
    v[:, 3] = v[:, 0] + v[:, 3]
    ref[:, 5:9] = v
    v[:, 0:3] = v[:, [1, 2, 0]] * 2
    v[:, 3] += 1
    v[:, 1] += 3
    ref[:, 9] = v @ [1, 10, 100, 1000]
    ref[:, 10] = v[:, 3] - v[:, 0]
    # q = (b, 5, r), then q.rb = (q.b, q.r) swaps its ends: (r, 5, b).
    ref[:, 11] = v[:, 0] + 50 + 100 * v[:, 2]
    i = np.arange(n)
    ref[:, 12] = 2 * i - (i + 1)
    h = v[:, 0:3].astype(np.float16).astype(np.float64)
    ref[:, 13] = 2 * h[:, 2]
    ref[:, 14] = v[:, 3] * v[:, 0]
    ref[:, 15] = v[:, 3]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("body,message", [
    ("float2 v = float2(a[0]); out[0] = v.rgb.x;", "does not have"),
    ("float2 v = float2(a[0]); out[0] = v.z;", "no member named"),
    ("float4 v = float4(a[0]); v.rr = float2(1.0); out[0] = v.x;", "twice"),
    ("float4 v = float4(a[0]); out[0] = v.xg.x;", "no member named"),
])
def test_swizzles_metal_rejects_do_not_compile(body, message):
    # Beyond the vector's size, a component twice in an assigned swizzle, xyzw mixed with rgba.
    kernel = kjit.metal_kernel("bad_swizzle", ["a"], ["out"], body)
    with pytest.raises(kjit.CompileError) as excinfo:
        run(kernel, [np.zeros(4, np.float32)], [(1,)], [np.float32], (1, 1, 1), (1, 1, 1))
    assert message in str(excinfo.value)
