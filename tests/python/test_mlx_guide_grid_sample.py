"""The grid_sample kernels of MLX's guide "Custom Metal Kernels"
(https://ml-explore.github.io/mlx/build/html/dev/custom_metal_kernels.html), run as the guide
writes them: the forward kernel and its VJP (ceildiv of an int by a uint, atomic outputs,
simd_sum), with the guide's names, template, grid and threadgroup; only the host-side calls are
kjit's and the arrays NumPy's. They are checked against bilinear sampling in NumPy float64 (zero
padding, the guide's align_corners=False mapping), whose gradients are checked by finite
differences. test_grid_sample.py runs a rewritten version of the same kernels."""

import numpy as np
import pytest

import kjit
from conftest import DEVICES, poisoned

# The guide's forward kernel, verbatim.
FORWARD_SOURCE = """
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    int gH = grid_shape[1];
    int gW = grid_shape[2];

    int w_stride = C;
    int h_stride = W * w_stride;
    int b_stride = H * h_stride;

    uint grid_idx = elem / C * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

    int ix_nw = floor(ix);
    int iy_nw = floor(iy);

    int ix_ne = ix_nw + 1;
    int iy_ne = iy_nw;

    int ix_sw = ix_nw;
    int iy_sw = iy_nw + 1;

    int ix_se = ix_nw + 1;
    int iy_se = iy_nw + 1;

    T nw = (ix_se - ix)    * (iy_se - iy);
    T ne = (ix    - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix)    * (iy    - iy_ne);
    T se = (ix    - ix_nw) * (iy    - iy_nw);

    int batch_idx = elem / C / gH / gW * b_stride;
    int channel_idx = elem % C;
    int base_idx = batch_idx + channel_idx;

    T I_nw = x[base_idx + iy_nw * h_stride + ix_nw * w_stride];
    T I_ne = x[base_idx + iy_ne * h_stride + ix_ne * w_stride];
    T I_sw = x[base_idx + iy_sw * h_stride + ix_sw * w_stride];
    T I_se = x[base_idx + iy_se * h_stride + ix_se * w_stride];

    I_nw = iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1 ? I_nw : 0;
    I_ne = iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1 ? I_ne : 0;
    I_sw = iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1 ? I_sw : 0;
    I_se = iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1 ? I_se : 0;

    out[elem] = nw * I_nw + ne * I_ne + sw * I_sw + se * I_se;
"""

# The guide's VJP kernel, verbatim.
VJP_SOURCE = """
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    // Pad C to the nearest larger simdgroup size multiple
    int C_padded = ceildiv(C, threads_per_simdgroup) * threads_per_simdgroup;

    int gH = grid_shape[1];
    int gW = grid_shape[2];

    int w_stride = C;
    int h_stride = W * w_stride;
    int b_stride = H * h_stride;

    uint grid_idx = elem / C_padded * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

    int ix_nw = floor(ix);
    int iy_nw = floor(iy);

    int ix_ne = ix_nw + 1;
    int iy_ne = iy_nw;

    int ix_sw = ix_nw;
    int iy_sw = iy_nw + 1;

    int ix_se = ix_nw + 1;
    int iy_se = iy_nw + 1;

    T nw = (ix_se - ix)    * (iy_se - iy);
    T ne = (ix    - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix)    * (iy    - iy_ne);
    T se = (ix    - ix_nw) * (iy    - iy_nw);

    int batch_idx = elem / C_padded / gH / gW * b_stride;
    int channel_idx = elem % C_padded;
    int base_idx = batch_idx + channel_idx;

    T gix = T(0);
    T giy = T(0);
    if (channel_idx < C) {
        int cot_index = elem / C_padded * C + channel_idx;
        T cot = cotangent[cot_index];
        if (iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1) {
            int offset = base_idx + iy_nw * h_stride + ix_nw * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], nw * cot, memory_order_relaxed);

            T I_nw = x[offset];
            gix -= I_nw * (iy_se - iy) * cot;
            giy -= I_nw * (ix_se - ix) * cot;
        }
        if (iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1) {
            int offset = base_idx + iy_ne * h_stride + ix_ne * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], ne * cot, memory_order_relaxed);

            T I_ne = x[offset];
            gix += I_ne * (iy_sw - iy) * cot;
            giy -= I_ne * (ix - ix_sw) * cot;
        }
        if (iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1) {
            int offset = base_idx + iy_sw * h_stride + ix_sw * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], sw * cot, memory_order_relaxed);

            T I_sw = x[offset];
            gix -= I_sw * (iy - iy_ne) * cot;
            giy += I_sw * (ix_ne - ix) * cot;
        }
        if (iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1) {
            int offset = base_idx + iy_se * h_stride + ix_se * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], se * cot, memory_order_relaxed);

            T I_se = x[offset];
            gix += I_se * (iy - iy_nw) * cot;
            giy += I_se * (ix - ix_nw) * cot;
        }
    }

    T gix_mult = W / 2;
    T giy_mult = H / 2;

    // Reduce across each simdgroup first.
    // This is much faster than relying purely on atomics.
    gix = simd_sum(gix);
    giy = simd_sum(giy);

    if (thread_index_in_simdgroup == 0) {
        atomic_fetch_add_explicit(&grid_grad[grid_idx], gix * gix_mult, memory_order_relaxed);
        atomic_fetch_add_explicit(&grid_grad[grid_idx + 1], giy * giy_mult, memory_order_relaxed);
    }
"""


def forward_kernel():
    return kjit.metal_kernel(name="grid_sample", input_names=["x", "grid"], output_names=["out"],
                             source=FORWARD_SOURCE)


def vjp_kernel():
    return kjit.metal_kernel(name="grid_sample_grad", input_names=["x", "grid", "cotangent"],
                             output_names=["x_grad", "grid_grad"], source=VJP_SOURCE,
                             atomic_outputs=True)


def grid_sample(x, grid, device):
    """The guide's grid_sample host code, on kjit."""
    B, _, _, C = x.shape
    _, gN, gM, D = grid.shape
    assert D == 2
    out_shape = (B, gN, gM, C)
    (out,) = forward_kernel()(inputs=[x, grid], template=[("T", x.dtype)],
                              output_shapes=[out_shape], output_dtypes=[x.dtype],
                              grid=(int(np.prod(out_shape)), 1, 1), threadgroup=(256, 1, 1),
                              outputs=[poisoned(out_shape, x.dtype)], device=device)
    return out


def grid_sample_vjp(x, grid, cotangent, device):
    """The guide's grid_sample_vjp host code, on kjit: (x_grad, grid_grad)."""
    B, _, _, C = x.shape
    _, gN, gM, D = grid.shape
    assert D == 2
    # The guide pads the channels to the SIMD-group size so that its simd_sums do not overlap.
    simdgroup_size = 32
    C_padded = (C + simdgroup_size - 1) // simdgroup_size * simdgroup_size
    grid_size = B * gN * gM * C_padded
    x_grad, grid_grad = vjp_kernel()(
        inputs=[x, grid, cotangent], template=[("T", x.dtype)],
        output_shapes=[x.shape, grid.shape], output_dtypes=[x.dtype, x.dtype],
        grid=(grid_size, 1, 1), threadgroup=(256, 1, 1), init_value=0,
        outputs=[poisoned(x.shape, x.dtype), poisoned(grid.shape, x.dtype)], device=device)
    return x_grad, grid_grad


# --- the NumPy reference: bilinear sampling as a sum of tent functions --------------------------


def sample_positions(x_shape, grid):
    """The continuous pixel coordinates (ix, iy) that each grid point samples (align_corners=False:
    -1 and 1 are the outer edges of the edge pixels), and their d/dgrid factors."""
    _, H, W, _ = x_shape
    ix = ((grid[..., 0] + 1) * W - 1) / 2
    iy = ((grid[..., 1] + 1) * H - 1) / 2
    return ix, iy, W / 2, H / 2


def corners(x_shape, ix, iy):
    """For each of the four pixels around (ix, iy): its indices, whether it lies in x, and its
    tent weights max(0, 1 - |d|) along x and y with their derivatives in ix and iy."""
    _, H, W, _ = x_shape
    x0, y0 = np.floor(ix).astype(np.int64), np.floor(iy).astype(np.int64)
    for px in (x0, x0 + 1):
        for py in (y0, y0 + 1):
            dx, dy = ix - px, iy - py
            wx, wy = 1 - np.abs(dx), 1 - np.abs(dy)
            inside = (px >= 0) & (px < W) & (py >= 0) & (py < H)
            yield (np.clip(px, 0, W - 1), np.clip(py, 0, H - 1), inside, wx, wy,
                   -np.sign(dx), -np.sign(dy))


def reference_forward(x, grid):
    """Bilinear sampling of x (B, H, W, C) at grid (B, gN, gM, 2), zero outside x, in float64."""
    x, grid = x.astype(np.float64), grid.astype(np.float64)
    ix, iy, _, _ = sample_positions(x.shape, grid)
    batch = np.arange(x.shape[0])[:, None, None]
    out = np.zeros(grid.shape[:3] + x.shape[3:])
    for px, py, inside, wx, wy, _, _ in corners(x.shape, ix, iy):
        out += (inside * wx * wy)[..., None] * x[batch, py, px]
    return out


def reference_vjp(x, grid, cotangent):
    """The gradients of sum(cotangent * reference_forward(x, grid)) in x and in grid."""
    x, grid, cot = (a.astype(np.float64) for a in (x, grid, cotangent))
    ix, iy, dix, diy = sample_positions(x.shape, grid)
    batch = np.broadcast_to(np.arange(x.shape[0])[:, None, None], ix.shape)
    x_grad = np.zeros_like(x)
    grid_grad = np.zeros_like(grid)
    for px, py, inside, wx, wy, dwx, dwy in corners(x.shape, ix, iy):
        np.add.at(x_grad, (batch, py, px), (inside * wx * wy)[..., None] * cot)
        value_dot_cot = inside * np.sum(x[batch, py, px] * cot, axis=-1)
        grid_grad[..., 0] += dwx * wy * value_dot_cot * dix
        grid_grad[..., 1] += wx * dwy * value_dot_cot * diy
    return x_grad, grid_grad


def make_inputs(rng, B, H, W, C, gN, gM):
    """x, grid and cotangent in float32. The guide's forward kernel reads all four neighbours
    before it zeroes those outside x, so the points of the first and last batch keep all four
    inside x (their reads stay inside the buffer); the middle batches' points also fall past the
    edges, where the neighbours read are other rows' and batches' values that must be dropped.
    The first points of the second batch sample padding only, or x at one corner only."""
    x = rng.standard_normal((B, H, W, C)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (B, gN, gM, 2))
    inner = (1 / np.array([W, H]) - 1, 1 - 1 / np.array([W, H]))
    for b in (0, B - 1):
        grid[b] = rng.uniform(inner[0], inner[1], (gN, gM, 2))
    grid[1, 0, :4] = [(-1.25, 0.1), (0.2, 1.2), (-1, -1), (1, 1)]
    cotangent = rng.standard_normal((B, gN, gM, C)).astype(np.float32)
    return x, grid.astype(np.float32), cotangent


# W and H are even: the guide's kernel scales the grid gradient by the int W / 2 and H / 2.
SHAPES = [(4, 16, 20, 40, 12, 10), (3, 8, 6, 64, 7, 9), (3, 10, 12, 3, 5, 6)]


def test_reference_gradients_match_finite_differences(rng):
    B, H, W, C, gN, gM = 3, 6, 8, 5, 4, 5
    x, grid, cot = make_inputs(rng, B, H, W, C, gN, gM)
    x, grid, cot = (a.astype(np.float64) for a in (x, grid, cot))
    x_grad, grid_grad = reference_vjp(x, grid, cot)

    def loss(x, grid):
        return np.sum(cot * reference_forward(x, grid), axis=-1)

    # The loss is linear in x: central differences along each element are exact but rounding.
    h = 1e-3
    fd_x = np.empty_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        fd_x[i] = (loss(x + step, grid).sum() - loss(x - step, grid).sum()) / (2 * h)
    np.testing.assert_allclose(x_grad, fd_x, rtol=1e-9, atol=1e-9)
    assert np.any(x_grad != 0)

    # Each point's loss depends on its own coordinates only, so one step moves all points. The
    # derivative jumps where a coordinate crosses a pixel centre; points near one are left out.
    h = 1e-7
    ix, iy, _, _ = sample_positions(x.shape, grid)
    for axis, (pos, scale) in enumerate([(ix, W / 2), (iy, H / 2)]):
        step = np.zeros_like(grid)
        step[..., axis] = h
        fd = (loss(x, grid + step) - loss(x, grid - step)) / (2 * h)
        smooth = np.abs(pos - np.round(pos)) > 10 * h * scale
        assert smooth.mean() > 0.9
        np.testing.assert_allclose(grid_grad[..., axis][smooth], fd[smooth], rtol=1e-6,
                                   atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("B, H, W, C, gN, gM", SHAPES)
def test_guide_grid_sample_forward(B, H, W, C, gN, gM, device, rng):
    x, grid, _ = make_inputs(rng, B, H, W, C, gN, gM)
    out = np.asarray(grid_sample(x, grid, device))
    np.testing.assert_allclose(out, reference_forward(x, grid), rtol=1e-5, atol=1e-5)
    assert np.all(out[1, 0, :2] == 0)  # padding only
    np.testing.assert_allclose(out[1, 0, 2:4], [x[1, 0, 0] / 4, x[1, -1, -1] / 4], rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("B, H, W, C, gN, gM", SHAPES)
def test_guide_grid_sample_vjp(B, H, W, C, gN, gM, device, rng):
    x, grid, cot = make_inputs(rng, B, H, W, C, gN, gM)
    x_grad, grid_grad = (np.asarray(a) for a in grid_sample_vjp(x, grid, cot, device))
    ref_x_grad, ref_grid_grad = reference_vjp(x, grid, cot)
    np.testing.assert_allclose(x_grad, ref_x_grad, rtol=1e-4, atol=1e-4)
    # Each grid coordinate adds up C products of values of order 1.
    np.testing.assert_allclose(grid_grad, ref_grid_grad, rtol=1e-4, atol=1e-4 * np.sqrt(C) * W)
