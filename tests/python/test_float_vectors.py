"""Float vectors in the Metal dialect, and their operations element by element."""


import numpy as np
import pytest

import kjit
from conftest import needs_gpu, poisoned


VECTOR_SOURCE = """
    uint i = thread_position_in_grid.x;
    float4 v = ((const device float4*)a)[i];
    float4 w = ((const device float4*)b)[i];
    float4 r = v * w + 2.0f;
    r = r - v / 4;
    ((device float4*)comp)[i] = r;
    dots[i] = dot(v, w);
    float3 v3 = ((const device float3*)a)[i];
    float3 w3 = float3(w.x, w.y, w.z);
    dots3[i] = dot(v3, w3);
    lens[i] = length(v);
    maxes[i] = max(max(v.x, v.y), max(v.z, v.w));
    if (i == 0) {
        sizes[0] = sizeof(float2);
        sizes[1] = sizeof(float3);
        sizes[2] = sizeof(float4);
        sizes[3] = sizeof(half4);
        sizes[4] = alignof(float3);
        sizes[5] = sizeof(int3);
    }
"""


def test_float_vectors(rng):
    kernel = kjit.metal_kernel(name="vectors", input_names=["a", "b"],
                               output_names=["comp", "dots", "dots3", "lens", "maxes", "sizes"],
                               source=VECTOR_SOURCE)
    n = 333
    a = rng.standard_normal((n, 4)).astype(np.float32)
    b = rng.standard_normal((n, 4)).astype(np.float32)
    outs = [poisoned((n, 4), np.float32), poisoned((n,), np.float32),
            poisoned((n,), np.float32), poisoned((n,), np.float32), poisoned((n,), np.float32),
            poisoned((6,), np.int32)]
    kernel(inputs=[a, b], grid=(n, 1, 1), threadgroup=(64, 1, 1),
           output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
           outputs=outs)
    comp, dots, dots3, lens, maxes, sizes = outs
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(comp, a64 * b64 + 2 - a64 / 4, rtol=1e-6, atol=1e-6)
    scale = np.abs(a64 * b64).sum(axis=1)
    assert np.all(np.abs(dots - (a64 * b64).sum(axis=1)) <= 4e-7 * scale + 1e-30)
    # float3 is 16 bytes: element i of a float3 pointer starts at float 4*i.
    scale3 = np.abs(a64[:, :3] * b64[:, :3]).sum(axis=1)
    assert np.all(np.abs(dots3 - (a64[:, :3] * b64[:, :3]).sum(axis=1)) <= 4e-7 * scale3 + 1e-30)
    np.testing.assert_allclose(lens, np.linalg.norm(a64, axis=1), rtol=5e-7)
    np.testing.assert_array_equal(maxes, a.max(axis=1))
    assert sizes.tolist() == [8, 16, 16, 8, 16, 16]


VECTOR_OPERATIONS = """
    const uint i = thread_position_in_grid.x;
    const float4 v = float4(a[i * 4], a[i * 4 + 1], a[i * 4 + 2], a[i * 4 + 3]);
    const float4 w = float4(b[i * 4], b[i * 4 + 1], b[i * 4 + 2], b[i * 4 + 3]);
    const bool4 above = v > 0.25f;             // vector against scalar
    const bool4 below = 0.25f > v;
    const float4 picked = select(w, v, above);  // v where above, else w
    float4 math = fma(v, w, float4(1.0f)) + pow(abs(v), 2.0f) + fmod(w, 0.75f) +
                  tan(v * 0.5f) + trunc(w * 3.0f) + fract(w) + sign(v) + step(0.0f, w);
    float4 counted = v;
    counted++;
    ++counted;
    const uint4 bits = ~uint4(i, i + 1, i + 2, i + 3);
    const float4 built = float4(v.xy, 1.0f, 2.0f) + float4(1.0f, w.xy, 2.0f) +
                         float4(3.0f, 4.0f, v.zw);
    for (int k = 0; k < 4; ++k) {
        out[i * 24 + k] = picked[k];
        out[i * 24 + 4 + k] = math[k];
        out[i * 24 + 8 + k] = counted[k];
        out[i * 24 + 12 + k] = float(bits[k] & 0xffffu);
        out[i * 24 + 16 + k] = built[k];
        out[i * 24 + 20 + k] = float(below[k]) + 2.0f * float((!above)[k]) +
                               4.0f * float(isnan(v / w)[k]);
    }
"""


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_vector_operations_element_by_element(device, rng):
    kernel = kjit.metal_kernel(name="vector_operations", input_names=["a", "b"],
                               output_names=["out"], source=VECTOR_OPERATIONS)
    n = 100
    a = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    a[0, 0], b[0, 0] = 0.0, 0.0  # 0 / 0: a NaN
    (out,) = kernel(inputs=[a, b], output_shapes=[(n, 24)], output_dtypes=[np.float32],
                    grid=(n, 1, 1), threadgroup=(32, 1, 1), device=device,
                    outputs=[poisoned((n, 24), np.float32)])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(out[:, 0:4], np.where(a > 0.25, a, b))
    math = (a64 * b64 + 1 + np.abs(a64) ** 2 + np.fmod(b64, 0.75) + np.tan(a64 * 0.5) +
            np.trunc(b64 * 3) + (b64 - np.floor(b64)) + np.sign(a64) + (b64 >= 0))
    np.testing.assert_allclose(out[:, 4:8], math, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(out[:, 8:12], a64 + 2, rtol=1e-6, atol=1e-7)
    i = np.arange(n)[:, None] + np.arange(4)
    np.testing.assert_array_equal(out[:, 12:16], (~i.astype(np.uint32)) & 0xffff)
    built = (np.stack([a64[:, 0], a64[:, 1], np.ones(n), np.full(n, 2.0)], 1) +
             np.stack([np.ones(n), b64[:, 0], b64[:, 1], np.full(n, 2.0)], 1) +
             np.stack([np.full(n, 3.0), np.full(n, 4.0), a64[:, 2], a64[:, 3]], 1))
    np.testing.assert_allclose(out[:, 16:20], built, rtol=1e-6, atol=1e-6)
    with np.errstate(invalid="ignore", divide="ignore"):
        flags = (0.25 > a) + 2.0 * ~(a > 0.25) + 4.0 * np.isnan(a / b)
    np.testing.assert_array_equal(out[:, 20:24], flags)
