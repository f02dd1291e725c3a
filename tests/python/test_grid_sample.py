"""MLX's flagship custom-kernel example: bilinear grid sampling and its gradient (the backward
pass accumulates with atomic outputs and reduces the grid gradient with simd_sum), against NumPy
in float64, on the CPU and on a GPU; the kernels are also compiled for sm_90 where NVRTC loads."""

import numpy as np
import pytest

import kjit
from conftest import CUDA_STATUS as STATUS
from conftest import DEVICES

# The sampling position of output element |elem| and its four neighbours, shared by both passes.
CORNERS = """
    const int H = x_shape[1], W = x_shape[2], C = x_shape[3];
    const int w_stride = C, h_stride = W * w_stride, b_stride = H * h_stride;
    const float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    const float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;
    const int ix_nw = floor(ix), iy_nw = floor(iy);
    const int ix_ne = ix_nw + 1, iy_ne = iy_nw;
    const int ix_sw = ix_nw, iy_sw = iy_nw + 1;
    const int ix_se = ix_nw + 1, iy_se = iy_nw + 1;
    const float nw = (ix_se - ix) * (iy_se - iy);
    const float ne = (ix - ix_sw) * (iy_sw - iy);
    const float sw = (ix_ne - ix) * (iy - iy_ne);
    const float se = (ix - ix_nw) * (iy - iy_nw);
    const bool in_nw = iy_nw >= 0 && iy_nw < H && ix_nw >= 0 && ix_nw < W;
    const bool in_ne = iy_ne >= 0 && iy_ne < H && ix_ne >= 0 && ix_ne < W;
    const bool in_sw = iy_sw >= 0 && iy_sw < H && ix_sw >= 0 && ix_sw < W;
    const bool in_se = iy_se >= 0 && iy_se < H && ix_se >= 0 && ix_se < W;
"""

FORWARD = """
    const uint elem = thread_position_in_grid.x;
    const uint grid_idx = elem / x_shape[3] * 2;
""" + CORNERS + """
    const int base = elem / C / (grid_shape[1] * grid_shape[2]) * b_stride + elem % C;
    float v = 0;
    if (in_nw) v += nw * x[base + iy_nw * h_stride + ix_nw * w_stride];
    if (in_ne) v += ne * x[base + iy_ne * h_stride + ix_ne * w_stride];
    if (in_sw) v += sw * x[base + iy_sw * h_stride + ix_sw * w_stride];
    if (in_se) v += se * x[base + iy_se * h_stride + ix_se * w_stride];
    out[elem] = v;
"""

# One thread per (grid point, channel padded to a multiple of 32): a SIMD-group covers one grid
# point, so simd_sum adds its channels' contributions to the grid gradient.
BACKWARD = """
    const uint elem = thread_position_in_grid.x;
    const int C_padded = (x_shape[3] + 31) / 32 * 32;
    const uint point = elem / C_padded;
    const int channel = elem % C_padded;
    const uint grid_idx = point * 2;
""" + CORNERS + """
    float gix = 0, giy = 0;
    if (channel < C) {
        const float cot = cotangent[point * C + channel];
        const int base = point / (grid_shape[1] * grid_shape[2]) * b_stride + channel;
        if (in_nw) {
            const int o = base + iy_nw * h_stride + ix_nw * w_stride;
            atomic_fetch_add_explicit(&x_grad[o], nw * cot, memory_order_relaxed);
            gix -= x[o] * (iy_se - iy) * cot;
            giy -= x[o] * (ix_se - ix) * cot;
        }
        if (in_ne) {
            const int o = base + iy_ne * h_stride + ix_ne * w_stride;
            atomic_fetch_add_explicit(&x_grad[o], ne * cot, memory_order_relaxed);
            gix += x[o] * (iy_sw - iy) * cot;
            giy -= x[o] * (ix - ix_sw) * cot;
        }
        if (in_sw) {
            const int o = base + iy_sw * h_stride + ix_sw * w_stride;
            atomic_fetch_add_explicit(&x_grad[o], sw * cot, memory_order_relaxed);
            gix -= x[o] * (iy - iy_ne) * cot;
            giy += x[o] * (ix_ne - ix) * cot;
        }
        if (in_se) {
            const int o = base + iy_se * h_stride + ix_se * w_stride;
            atomic_fetch_add_explicit(&x_grad[o], se * cot, memory_order_relaxed);
            gix += x[o] * (iy - iy_nw) * cot;
            giy += x[o] * (ix - ix_nw) * cot;
        }
    }
    gix = simd_sum(gix);
    giy = simd_sum(giy);
    if (thread_index_in_simdgroup == 0) {
        atomic_fetch_add_explicit(&grid_grad[grid_idx], gix * W / 2, memory_order_relaxed);
        atomic_fetch_add_explicit(&grid_grad[grid_idx + 1], giy * H / 2, memory_order_relaxed);
    }
"""


def forward_kernel():
    return kjit.metal_kernel(name="grid_sample", input_names=["x", "grid"],
                             output_names=["out"], source=FORWARD)


def backward_kernel():
    return kjit.metal_kernel(name="grid_sample_vjp", input_names=["x", "grid", "cotangent"],
                             output_names=["x_grad", "grid_grad"], source=BACKWARD,
                             atomic_outputs=True)


def reference(x, grid, cot):
    """Bilinear sampling with zero padding and its vector-Jacobian product, in float64."""
    x, grid, cot = (a.astype(np.float64) for a in (x, grid, cot))
    B, H, W, C = x.shape
    _, gN, gM, _ = grid.shape
    out = np.zeros((B, gN, gM, C))
    x_grad = np.zeros_like(x)
    grid_grad = np.zeros_like(grid)
    for b in range(B):
        for n in range(gN):
            for m in range(gM):
                ix = ((grid[b, n, m, 0] + 1) * W - 1) / 2
                iy = ((grid[b, n, m, 1] + 1) * H - 1) / 2
                x0, y0 = int(np.floor(ix)), int(np.floor(iy))
                g = cot[b, n, m]
                for dx in (0, 1):
                    for dy in (0, 1):
                        xx, yy = x0 + dx, y0 + dy
                        wx = ix - x0 if dx else x0 + 1 - ix
                        wy = iy - y0 if dy else y0 + 1 - iy
                        if not (0 <= xx < W and 0 <= yy < H):
                            continue
                        v = x[b, yy, xx]
                        out[b, n, m] += wx * wy * v
                        x_grad[b, yy, xx] += wx * wy * g
                        dwx = 1.0 if dx else -1.0
                        dwy = 1.0 if dy else -1.0
                        grid_grad[b, n, m, 0] += dwx * wy * np.dot(v, g) * W / 2
                        grid_grad[b, n, m, 1] += wx * dwy * np.dot(v, g) * H / 2
    return out, x_grad, grid_grad


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("C", [40, 64])
def test_grid_sample_forward_and_backward(C, device, rng):
    B, H, W, gN, gM = 2, 16, 20, 12, 10
    x = rng.standard_normal((B, H, W, C)).astype(np.float32)
    grid = rng.uniform(-1.1, 1.1, (B, gN, gM, 2)).astype(np.float32)  # some points fall outside
    cot = rng.standard_normal((B, gN, gM, C)).astype(np.float32)
    ref_out, ref_x_grad, ref_grid_grad = reference(x, grid, cot)

    (out,) = forward_kernel()(inputs=[x, grid], output_shapes=[(B, gN, gM, C)],
                              output_dtypes=[np.float32], grid=(B * gN * gM * C, 1, 1),
                              threadgroup=(256, 1, 1), device=device)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)

    c_padded = (C + 31) // 32 * 32
    x_grad, grid_grad = backward_kernel()(
        inputs=[x, grid, cot], output_shapes=[x.shape, grid.shape],
        output_dtypes=[np.float32, np.float32], grid=(B * gN * gM * c_padded, 1, 1),
        threadgroup=(256, 1, 1), init_value=0, device=device)
    np.testing.assert_allclose(x_grad, ref_x_grad, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grid_grad, ref_grid_grad, rtol=1e-4, atol=1e-3)


@pytest.mark.skipif(STATUS["nvrtc"] is None, reason=f"NVRTC is {STATUS['nvrtc_error']}")
def test_grid_sample_kernels_compile_for_sm90():
    forward_kernel().build(inputs=[("float32", 4), ("float32", 4)], output_dtypes=["float32"],
                           target="sm_90")
    backward_kernel().build(inputs=[("float32", 4)] * 3, output_dtypes=["float32", "float32"],
                            target="sm_90")
