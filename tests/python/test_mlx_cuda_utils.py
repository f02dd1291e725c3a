"""MLX's CUDA device utilities (device/utils.cuh and the headers it includes) in cuda_kernel
bodies: Shape and Strides, the elem_to_loc family of several arrays and of a fixed rank,
LoopedElemToLoc in CUDA's parameter order, AlignedVector with load_vector and store_vector,
complex64_t with real() and imag(), Limits as functions, and the cuda::std names kernels use.
Each against NumPy in float64 or a closed form."""

import numpy as np
import pytest

import kjit
from conftest import DEVICES, poisoned


def run(source, inputs, outputs, grid, device, header="", group=32):
    """Runs a cuda_kernel of |source| with inputs named a, b, c... and outputs o0, o1...,
    each poisoned first, over |grid| threads."""
    k = kjit.cuda_kernel(name="mlx_cuda_utils", input_names=list("abcdefgh"[:len(inputs)]),
                         output_names=[f"o{i}" for i in range(len(outputs))], source=source,
                         header=header, ensure_row_contiguous=False)
    return k(inputs=inputs, output_shapes=[s for s, _ in outputs],
             output_dtypes=[d for _, d in outputs], grid=(grid, 1, 1),
             threadgroup=(group, 1, 1), device=device,
             outputs=[poisoned(s, d) for s, d in outputs])


ELEM_TO_LOC = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    o0[i] = a[elem_to_loc_nd<3>(i, a_shape.data(), a_strides.data())];
    auto [x, y] = elem_to_loc_nd<3>(i, a_shape.data(), a_strides.data(), b_strides.data());
    o1[i] = a[x] + 10.0f * b[y];
    auto [p, q, r] = elem_to_loc_nd<3>(i, a_shape.data(), a_strides.data(), b_strides.data(),
                                       c_strides.data());
    o2[i] = a[p] * b[q] + c[r];
    auto [u, v] = elem_to_loc(int64_t(i), a_shape.data(), a_strides.data(), b_strides.data(),
                              a_ndim);
    o3[i] = a[u] - b[v];
    const auto t = elem_to_loc(i, a_shape.data(), a_strides.data(), b_strides.data(),
                               c_strides.data(), a_ndim);
    o4[i] = a[cuda::std::get<0>(t)] - b[cuda::std::get<1>(t)] * c[cuda::std::get<2>(t)];
    o5[i] = a[elem_to_loc(i, a_shape.data(), a_strides.data(), a_ndim)];
"""


@pytest.mark.parametrize("device", DEVICES)
def test_elem_to_loc_nd_and_of_several_arrays_over_strided_views(device, rng):
    # Three views of one 3-D shape: reversed (negative strides reached from a uint index),
    # transposed, broadcast.
    shape = (5, 6, 7)
    a = rng.standard_normal(shape).astype(np.float32)[::-1, :, ::-1]
    b = np.ascontiguousarray(rng.standard_normal(shape[::-1]).astype(np.float32)).T
    c = np.broadcast_to(rng.standard_normal((1, 6, 1)).astype(np.float32), shape)
    n = a.size
    outs = run(ELEM_TO_LOC, [a, b, c], [(shape, np.float32)] * 6, n, device)
    a64, b64, c64 = (x.astype(np.float64) for x in (a, b, c))
    refs = [a64, a64 + 10 * b64, a64 * b64 + c64, a64 - b64, a64 - b64 * c64, a64]
    for got, ref in zip(outs, refs):
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("general", ["true", "false"])
def test_looped_elem_to_loc_in_cudas_parameter_order(device, general, rng):
    # <DIM, General, OffsetT>: each thread walks four consecutive elements of a transposed
    # (general) or a contiguous 1-D array.
    if general == "true":
        a = np.ascontiguousarray(rng.standard_normal((8, 6)).astype(np.float32)).T
    else:
        a = rng.standard_normal(48).astype(np.float32)
    source = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    LoopedElemToLoc<DIM, GENERAL, int64_t> loop(a_ndim);
    loop.next(int(4 * i), a_shape.data(), a_strides.data());
    for (int k = 0; k < 4; ++k) {
        o0[4 * i + k] = a[loop.location()];
        loop.next(a_shape.data(), a_strides.data());
    }
    """.replace("DIM", str(a.ndim)).replace("GENERAL", general)
    (out,) = run(source, [a], [((48,), np.float32)], 12, device, group=4)
    np.testing.assert_array_equal(out, a.reshape(-1))


VECTORS = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const int n = a_shape[0];
    // With a tail: elements past n read as -1 and are not written.
    AlignedVector<float, 4> v = load_vector<4>(a, i, n, -1.0f);
    unsafe_store_vector<4>(o1, i, v);
    for (int k = 0; k < 4; ++k) v[k] = 2.0f * v[k] + 1.0f;
    store_vector<4>(o0, i, v, n);
    // Every other element, stored three apart; and a pointer one element off alignment.
    const int half_n = (n + 1) / 2;
    store_vector<4>(o2, i, load_vector<4>(a, i, half_n, 2, 0.0f), half_n, 3);
    store_vector<4>(o3, i, load_vector<4>(a + 1, i, n - 1, 5.0f), n - 1);
    // Whole vectors only: the loads and stores without a size.
    if (4 * (i + 1) <= unsigned(n)) store_vector<4>(o4 + 1, i, load_vector<4>(a, i));
    if (i == 0) {
        o5[0] = sizeof(AlignedVector<float, 4>) == 16 && alignof(AlignedVector<float, 4>) == 16 &&
                alignof(AlignedVector<__half, 8>) == 16 && is_aligned<4>(a) && !is_aligned<4>(a + 1);
    }
"""


@pytest.mark.parametrize("device", DEVICES)
def test_load_and_store_vector_with_a_tail(device, rng):
    n = 1003
    a = rng.standard_normal(n).astype(np.float32)
    vectors = -(-n // 4)
    half_n = (n + 1) // 2
    o0, o1, o2, o3, o4, o5 = run(
        VECTORS, [a], [((n + 8,), np.float32), ((4 * vectors,), np.float32),
                       ((3 * half_n,), np.float32), ((n + 8,), np.float32),
                       ((n + 1,), np.float32), ((1,), np.int32)], vectors, device)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(o0[:n], 2 * a64 + 1, rtol=1e-7)
    assert np.isnan(o0[n:]).all()
    np.testing.assert_array_equal(o1, np.concatenate([a, np.full(4 * vectors - n, -1.0)]))
    np.testing.assert_array_equal(o2[::3], a[::2])
    assert np.isnan(o2[1::3]).all() and np.isnan(o2[2::3]).all()
    np.testing.assert_array_equal(o3[:n - 1], a[1:])
    assert np.isnan(o3[n - 1:]).all()
    whole = 4 * (n // 4)
    np.testing.assert_array_equal(o4[1:whole + 1], a[:whole])
    assert np.isnan(o4[0]) and np.isnan(o4[whole + 1:]).all()
    assert o5[0] == 1


COMPLEX = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const complex64_t x = a[i], y = b[i];
    o0[i] = x * y + c[i];
    o1[i] = x / y - 2.0f * x;
    o2[i] = x.real() * y.imag() - x.imag();
    complex64_t z;
    z.real(y.imag());
    z.imag(-x.real());
    z += x;
    o3[i] = z;
    o4[i] = cuda::std::abs(x);
    o5[i] = cuda::std::exp(x) + cuda::std::sqrt(y) * cuda::std::conj(x);
    o6[i] = (x < y) + 2 * (x == x) + 4 * is_complex_v<complex64_t> +
            8 * (Limits<complex64_t>::max().imag() == cuda::std::numeric_limits<float>::infinity());
"""


@pytest.mark.parametrize("device", DEVICES)
def test_complex64_t_real_and_imag_arithmetic(device, rng):
    n = 200
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    y = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    y[:3] = [-4, -1j, 9]  # the square root's branch cut and the real axis
    x[3] = y[3].real + 0.5j  # equal real parts: ordered by the imaginary
    s = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    outs = run(COMPLEX, [x, y, s], [((n,), np.complex64), ((n,), np.complex64),
                                    ((n,), np.float32), ((n,), np.complex64),
                                    ((n,), np.float32), ((n,), np.complex64),
                                    ((n,), np.int32)], n, device)
    x64, y64 = x.astype(np.complex128), y.astype(np.complex128)
    refs = [x64 * y64 + s, x64 / y64 - 2 * x64,
            x64.real * y64.imag - x64.imag, x64 + (y64.imag - 1j * x64.real), np.abs(x64),
            np.exp(x64) + np.sqrt(y64) * np.conj(x64)]
    for got, ref in zip(outs, refs):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
    less = (x.real < y.real) | ((x.real == y.real) & (x.imag < y.imag))
    np.testing.assert_array_equal(outs[6], less + 2 + 4 + 8)


STD_HEADER = """
template <class T, cuda::std::enable_if_t<cuda::std::is_floating_point_v<T>, int> = 0>
__device__ T twice(T x) { return x + x; }
template <class T, cuda::std::enable_if_t<cuda::std::is_integral_v<T>, int> = 0>
__device__ T twice(T x) { return T(x << 1); }
"""

STD = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i != 0) return;
    using limits = cuda::std::numeric_limits<float>;
    o0[0] = limits::infinity();
    o0[1] = -limits::infinity();
    o0[2] = limits::max();
    o0[3] = limits::lowest();
    o0[4] = limits::epsilon();
    o0[5] = limits::min();
    o0[6] = limits::quiet_NaN();
    o0[7] = float(cuda::std::numeric_limits<__half>::max());
    o0[8] = Limits<float>::max();
    o0[9] = Limits<float>::finite_min();
    o0[10] = float(Limits<__half>::finite_max());
    o0[11] = F8E4M3_MAX + F4E2M1_MAX;
    o1[0] = cuda::std::numeric_limits<double>::epsilon();
    o1[1] = cuda::std::numeric_limits<double>::max();
    o2[0] = cuda::std::numeric_limits<int>::max();
    o2[1] = cuda::std::numeric_limits<int8_t>::min();
    o2[2] = Limits<int16_t>::min();
    o2[3] = Limits<uint8_t>::max();
    cuda::std::array<float, 4> arr = {1.5f, -2.0f, 4.0f, 0.25f};
    float sum = 0;
    for (float v : arr) sum += v;
    o0[12] = sum;
    o0[13] = cuda::std::max(arr[0], arr.back()) - cuda::std::min(arr.front(), arr[1]);
    o2[4] = int(arr.size());
    Shape shape{};
    Strides strides{};
    shape.fill(3);
    strides[MAX_NDIM - 1] = 7;
    o2[5] = int(shape.size()) + shape[MAX_NDIM - 1] + int(strides.back()) + sizeof(Strides);
    o2[6] = cuda::std::is_same_v<cuda::std::conditional_t<true, int, float>, int> +
            2 * cuda::std::is_signed_v<unsigned> + 4 * cuda::std::is_unsigned_v<unsigned> +
            8 * cuda::std::is_convertible_v<int, float> + 16 * cuda::std::is_pointer_v<int> +
            32 * cuda::std::is_integral_v<const bool> + 64 * cuda::std::is_arithmetic_v<float*>;
    const auto t = cuda::std::make_tuple(2, 3.5f, int64_t(-9));
    o0[14] = cuda::std::get<0>(t) * cuda::std::get<1>(t) + cuda::std::get<2>(t);
    o0[15] = twice(1.25f) + twice(3);
    o0[16] = cuda::std::isnan(limits::quiet_NaN()) + cuda::std::floor(-2.5f) +
             cuda::std::exp(1.0f);
"""


@pytest.mark.parametrize("device", DEVICES)
def test_cuda_std_names_and_limits(device):
    o0, o1, o2 = run(STD, [np.zeros(1, np.float32)], [((17,), np.float32), ((2,), np.float64),
                                                       ((7,), np.int64)], 1, device,
                     header=STD_HEADER, group=1)
    f32 = np.finfo(np.float32)
    expected = [np.inf, -np.inf, f32.max, f32.min, f32.eps, f32.tiny, np.nan, 65504.0, np.inf,
                f32.min, 65504.0, 454.0, 3.75, 1.5 + 2.0, 7.0 - 9.0, 2.5 + 6, 1 - 3 + np.e]
    np.testing.assert_allclose(o0, np.array(expected, np.float32), rtol=1e-7)
    np.testing.assert_array_equal(o1, [np.finfo(np.float64).eps, np.finfo(np.float64).max])
    np.testing.assert_array_equal(o2, [2**31 - 1, -128, -32768, 255, 4, 10 + 3 + 7 + 80,
                                       1 + 4 + 8 + 32])


SHAPE_AS_MLX_DECLARES_IT = """
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    // Bound to MLX's types, as MLX's own helpers take them.
    const Shape& shape = a_shape;
    const Strides& strides = a_strides;
    o0[i] = a[offset_of(i, shape, strides, a_ndim)];
    // A copy is a plain Shape, which may be changed.
    Shape first_row = a_shape;
    first_row[0] = 1;
    o1[i] = product(first_row, a_ndim);
    // MLX's size() and iteration: all MAX_NDIM entries.
    int64_t sum = 0;
    for (int64_t s : a_strides) sum += s;
    o2[i] = int64_t(a_shape.size()) * 1000 + sum;
    // A pointer where one is expected, as in the Metal dialect, and through data() as in MLX.
    o3[i] = a[elem_to_loc(i, a_shape, a_strides, a_ndim)] -
            a[elem_to_loc(i, a_shape.data(), a_strides.data(), a_ndim)];
"""

SHAPE_HELPERS = """
__device__ int64_t offset_of(int64_t elem, const Shape& shape, const Strides& strides, int ndim) {
    int64_t loc = 0;
    for (int d = ndim - 1; d >= 0; --d) {
        loc += (elem % shape[d]) * strides[d];
        elem /= shape[d];
    }
    return loc;
}
__device__ int64_t product(Shape shape, int ndim) {
    int64_t p = 1;
    for (int d = 0; d < ndim; ++d) p *= shape[d];
    return p;
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_shape_and_strides_are_mlxs_shape_and_strides(device, rng):
    # MLX declares them `const __grid_constant__ Shape a_shape` and `... Strides a_strides`: a
    # body or a header helper may bind them to `const Shape&`, copy them, iterate them.
    a = rng.standard_normal((3, 4, 5)).astype(np.float32).transpose(2, 0, 1)[::-1]
    n = a.size
    outs = run(SHAPE_AS_MLX_DECLARES_IT, [a],
               [((n,), np.float32), ((n,), np.int64), ((n,), np.int64), ((n,), np.float32)],
               n, device, header=SHAPE_HELPERS)
    # A host array copied over for a GPU kernel arrives row-contiguous; on the CPU the kernel
    # reads it where it is, with its own strides.
    where = a if device == "cpu" else np.ascontiguousarray(a)
    strides = [s // a.itemsize for s in where.strides]
    np.testing.assert_array_equal(outs[0], a.reshape(-1))
    np.testing.assert_array_equal(outs[1], np.full(n, a.shape[1] * a.shape[2]))
    # Entries past ndim are 0.
    np.testing.assert_array_equal(outs[2], np.full(n, 10 * 1000 + sum(strides)))
    np.testing.assert_array_equal(outs[3], np.zeros(n, np.float32))
