"""Metal's 8x8 SIMD-group matrices on both backends: products of tiles against NumPy in float64,
the fragment layout MLX reads through thread_elements(), the constructors, transposed and offset
loads and stores, mixed precisions, helpers of the header, and the same bits on CPU and GPU."""

import ml_dtypes
import numpy as np
import pytest

import kjit
from conftest import DEVICES, needs_gpu

# One SIMD-group per 8x8 tile of c = a @ b (a is M x K, b is K x N), four per threadgroup.
MATMUL = """
    const uint tiles_n = N / 8;
    const uint tile = simdgroup_index_in_threadgroup + threadgroup_position_in_grid.x * 4;
    if (tile >= (M / 8) * tiles_n) return;  // whole SIMD-groups past the last tile
    const uint tm = tile / tiles_n, tn = tile % tiles_n;
    simdgroup_matrix<Acc, 8, 8> acc = make_filled_simdgroup_matrix<Acc, 8, 8>(Acc(0));
    for (uint k = 0; k < K; k += 8) {
        simdgroup_matrix<T, 8, 8> ma, mb;
        simdgroup_load(ma, a, K, ulong2(k, tm * 8));
        simdgroup_load(mb, b, N, ulong2(tn * 8, k));
        simdgroup_multiply_accumulate(acc, ma, mb, acc);
    }
    simdgroup_store(acc, c, N, ulong2(tn * 8, tm * 8));
"""


def matmul(a, b, element, accumulator, device):
    m, k = a.shape
    n = b.shape[1]
    groups = ((m // 8) * (n // 8) + 3) // 4
    kernel = kjit.metal_kernel(name="simdgroup_matmul", input_names=["a", "b"],
                               output_names=["c"], source=MATMUL)
    return kernel(inputs=[a, b], template=[("M", m), ("N", n), ("K", k), ("T", element),
                                           ("Acc", accumulator)],
                  grid=(groups * 128, 1, 1), threadgroup=(128, 1, 1), output_shapes=[(m, n)],
                  output_dtypes=[accumulator], init_value=float("nan"), device=device)[0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("element", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_tiled_product(device, element, rng):
    m, k, n = 24, 40, 16  # 6 tiles over two threadgroups, the second half empty
    a = rng.standard_normal((m, k)).astype(element)
    b = rng.standard_normal((k, n)).astype(element)
    c = matmul(a, b, kjit.bfloat16 if element is ml_dtypes.bfloat16 else element, np.float32,
               device)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # Products of float32 values accumulated in float32: ~1 ulp per add of the largest term.
    bound = (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) * k * 2.0 ** -23
    assert np.all(np.abs(c - exact) <= bound), np.abs(c - exact).max()


@pytest.mark.parametrize("device", DEVICES)
def test_half_accumulators_round_each_step(device, rng):
    m, k, n = 8, 24, 8
    a = (rng.standard_normal((m, k)) / 4).astype(np.float16)
    b = (rng.standard_normal((k, n)) / 4).astype(np.float16)
    c = matmul(a, b, np.float16, np.float16, device)
    # Each step of 8 adds its products in float to the half accumulator, then rounds to half.
    acc = np.zeros((m, n), np.float64)
    for s in range(0, k, 8):
        step = a[:, s:s + 8].astype(np.float64) @ b[s:s + 8].astype(np.float64)
        acc = (acc + step).astype(np.float16).astype(np.float64)
    spacing = np.spacing(np.abs(acc).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(c.astype(np.float64) - acc) <= spacing), np.abs(c - acc).max()


@pytest.mark.parametrize("device", DEVICES)
def test_layout_constructors_transposes_and_origins(device, rng):
    src = rng.standard_normal((16, 16)).astype(np.float32)
    k = kjit.metal_kernel(name="simdgroup_layout", input_names=["s"],
                          output_names=["elements", "diagonal", "filled", "moved", "lanes"],
                          source="""
    const uint l = thread_index_in_simdgroup;
    simdgroup_float8x8 m;
    simdgroup_load(m, s, 16, ulong2(8, 0));  // columns 8..15 of rows 0..7
    elements[2 * l] = m.thread_elements()[0];
    elements[2 * l + 1] = m.thread_elements()[1];
    simdgroup_store(simdgroup_float8x8(3.0f), diagonal, 8);
    simdgroup_store(make_filled_simdgroup_matrix<float, 8, 8>(-2.0f), filled, 8);
    // Rows 8..15, columns 0..7, transposed on the way in and again on the way out, at (4, 2)
    // of a 16-wide output.
    simdgroup_float8x8 t;
    simdgroup_load(t, s, 16, ulong2(0, 8), true);
    simdgroup_store(t, moved, 16, ulong2(4, 2), true);
    // Writing through thread_elements.
    simdgroup_float8x8 w;
    w.thread_elements() = float2(float(l), float(100 + l));
    simdgroup_store(w, lanes, 8);
""")
    elements, diagonal, filled, moved, lanes = k(
        inputs=[src], grid=(32, 1, 1), threadgroup=(32, 1, 1), device=device,
        output_shapes=[(64,), (8, 8), (8, 8), (16, 16), (8, 8)], output_dtypes=[np.float32] * 5,
        init_value=float("nan"))
    lane = np.arange(32)
    row, col = lane // 16 * 4 + lane // 2 % 4, lane // 8 % 2 * 4 + lane % 2 * 2  # MLX's mma.h
    block = src[0:8, 8:16]
    np.testing.assert_array_equal(elements, np.stack([block[row, col], block[row, col + 1]], 1)
                                  .reshape(-1))
    np.testing.assert_array_equal(diagonal, 3.0 * np.eye(8))
    np.testing.assert_array_equal(filled, np.full((8, 8), -2.0))
    expected = np.full((16, 16), np.nan, np.float32)
    expected[2:10, 4:12] = src[8:16, 0:8]  # transposed twice
    np.testing.assert_array_equal(moved, expected)
    expected_lanes = np.full((8, 8), np.nan)
    expected_lanes[row, col], expected_lanes[row, col + 1] = lane, 100 + lane
    np.testing.assert_array_equal(lanes, expected_lanes)


@pytest.mark.parametrize("device", DEVICES)
def test_products_in_helpers_of_the_header(device, rng):
    k = kjit.metal_kernel(name="simdgroup_helper", input_names=["a"], output_names=["c"],
                          header="""
void square(thread simdgroup_float8x8& d, const thread simdgroup_float8x8& m) {
    simdgroup_multiply(d, m, m);
}
""", source="simdgroup_float8x8 m, r; simdgroup_load(m, a, 8); square(r, m); "
            "simdgroup_store(r, c, 8);")
    a = rng.integers(-8, 8, 64).astype(np.float32)  # products and sums exact in float
    (c,) = k(inputs=[a], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(8, 8)],
             output_dtypes=[np.float32], device=device)
    m = a.reshape(8, 8).astype(np.float64)
    np.testing.assert_array_equal(c, m @ m)


@needs_gpu
def test_the_same_bits_on_cpu_and_gpu(rng):
    a = (rng.standard_normal((32, 64)) * 10.0 ** rng.integers(-3, 4, (32, 64))).astype(np.float32)
    b = rng.standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_array_equal(matmul(a, b, np.float32, np.float32, "cpu"),
                                  matmul(a, b, np.float32, np.float32, "cuda"))


def test_sizes_other_than_8x8_are_refused():
    k = kjit.metal_kernel(name="simdgroup_16", input_names=["a"], output_names=["c"],
                          source="simdgroup_matrix<float, 16, 16> m;\nc[0] = a[0];")
    with pytest.raises(kjit.CompileError, match=r"source line 1.*8x8 matrices only"):
        k(inputs=[np.zeros(4, np.float32)], grid=(32, 1, 1), threadgroup=(32, 1, 1),
          output_shapes=[(4,)], output_dtypes=[np.float32], device="cpu")
