"""Inputs of every kind: scalar inputs, broadcast inputs read through elem_to_loc, and
read-only inputs."""

import math

import numpy as np
import pytest

import kjit
from conftest import DIALECTS, make_kernel, poisoned


# --- scalar inputs -----------------------------------------------------------------------------

SCALAR_SOURCE = {
    "metal": """
        uint i = thread_position_in_grid.x;
        vals[i] = inp[i] * x;
        if (i == 0) {
            big_out[0] = big;
            big_out[1] = big / 3;
            n_out[0] = n;
            n_out[1] = n / 7;
            b_out[0] = flag;
            b_out[1] = !flag;
            f_out[0] = x;
            f_out[1] = x / 3;
            sizes[0] = sizeof(flag);
            sizes[1] = sizeof(n);
            sizes[2] = sizeof(big);
            sizes[3] = sizeof(x);
            sizes[4] = decltype(n)(-1) < 0;
            sizes[5] = decltype(big)(-1) < 0;
            sizes[6] = decltype(x)(1) / decltype(x)(2) > 0;
            sizes[7] = decltype(n)(1) / decltype(n)(2) > 0;
        }
    """,
    "cuda": """
        auto i = cooperative_groups::this_grid().thread_rank();
        vals[i] = inp[i] * x[0];
        if (i == 0) {
            big_out[0] = big[0];
            big_out[1] = big[0] / 3;
            n_out[0] = n[0];
            n_out[1] = n[0] / 7;
            b_out[0] = flag[0];
            b_out[1] = !flag[0];
            f_out[0] = *x;
            f_out[1] = x[0] / 3;
            sizes[0] = sizeof(flag[0]);
            sizes[1] = sizeof(n[0]);
            sizes[2] = sizeof(big[0]);
            sizes[3] = sizeof(x[0]);
            sizes[4] = static_cast<decltype(n[0] + 0)>(-1) < 0;
            sizes[5] = static_cast<decltype(big[0] + 0)>(-1) < 0;
            sizes[6] = static_cast<decltype(x[0] + 0)>(1) / 2 > 0;
            sizes[7] = static_cast<decltype(n[0] + 0)>(1) / 2 > 0;
        }
    """,
}


def trunc_div(a, b):
    """Integer division truncating toward zero, as in C++."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@pytest.mark.parametrize("dialect", DIALECTS)
def test_scalar_inputs(dialect, rng):
    kernel = make_kernel(dialect, name="scalars", input_names=["inp", "flag", "n", "big", "x"],
                         output_names=["vals", "big_out", "n_out", "b_out", "f_out", "sizes"],
                         source=SCALAR_SOURCE[dialect])
    inp = rng.standard_normal(50).astype(np.float32)
    for _ in range(2):
        flag = bool(rng.integers(0, 2))
        n = int(rng.integers(-2 ** 31, 2 ** 31))
        big = int(rng.integers(2 ** 31, 2 ** 62)) * int(rng.choice([-1, 1]))
        x = float(rng.standard_normal() * 10)
        outs = [poisoned((50,), np.float32), poisoned((2,), np.int64), poisoned((2,), np.int32),
                np.array([not flag, flag]), poisoned((2,), np.float32), poisoned((8,), np.int32)]
        kernel(inputs=[inp, flag, n, big, x], grid=(50, 1, 1), threadgroup=(16, 1, 1),
               output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
               outputs=outs)
        vals, big_out, n_out, b_out, f_out, sizes = outs
        x32 = np.float32(x)
        np.testing.assert_array_equal(vals, inp * x32)
        # C++ division truncates toward zero.
        assert big_out.tolist() == [big, trunc_div(big, 3)]
        assert n_out.tolist() == [n, trunc_div(n, 7)]
        assert b_out.tolist() == [flag, not flag]
        assert f_out[0] == x32
        assert f_out[1] == x32 / np.float32(3)
        # bool (1 byte), int32, int64 (beyond 2^31), float32; signedness and integer division.
        assert sizes.tolist() == [1, 4, 8, 4, 1, 1, 1, 0]


# --- elem_to_loc on broadcast inputs ----------------------------------------------------------

BROADCAST_SOURCE = {
    "metal": """
        uint elem = thread_position_in_grid.x;
        int64_t loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        out[elem] = inp[loc] * 3;
        locs[elem] = loc;
        if (elem < uint(inp_ndim)) {
            st[elem] = inp_strides[elem];
        }
    """,
    "cuda": """
        auto elem = cooperative_groups::this_grid().thread_rank();
        auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
        out[elem] = inp[loc] * 3;
        locs[elem] = loc;
        if (elem < inp_ndim) {
            st[elem] = inp_strides[elem];
        }
    """,
}


def writable_broadcast(base, shape):
    """np.broadcast_to's view (stride 0 along broadcast dimensions), left writable."""
    ro = np.broadcast_to(base, shape)
    return np.lib.stride_tricks.as_strided(base, shape=ro.shape, strides=ro.strides,
                                           writeable=True)


@pytest.mark.parametrize(
    "base_shape,shape",
    [((1, 5), (4, 5)), ((4, 1), (4, 5)), ((3, 1, 5), (3, 4, 5)), ((1,), (37,)),
     ((2, 1, 1, 3), (2, 3, 4, 3))],
)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_elem_to_loc_broadcast(dialect, base_shape, shape, rng):
    kernel = make_kernel(dialect, name="broadcast", input_names=["inp"],
                         output_names=["out", "locs", "st"], source=BROADCAST_SOURCE[dialect],
                         ensure_row_contiguous=False)
    base = rng.standard_normal(base_shape).astype(np.float32)
    inp = writable_broadcast(base, shape)
    np.testing.assert_array_equal(inp, np.broadcast_to(base, shape))
    size = math.prod(shape)
    outs = [poisoned(shape, np.float32), poisoned(shape, np.int64),
            poisoned((len(shape),), np.int64)]
    kernel(inputs=[inp], grid=(size, 1, 1), threadgroup=(16, 1, 1),
           output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
           outputs=outs)
    out, locs, st = outs
    strides = np.array(inp.strides) // inp.itemsize
    np.testing.assert_array_equal(st, strides)
    assert 0 in st.tolist()
    expected_locs = np.stack(np.indices(shape), axis=-1) @ strides
    np.testing.assert_array_equal(locs, expected_locs)
    np.testing.assert_array_equal(out, inp * np.float32(3))


# --- read-only inputs ------------------------------------------------------------------------

def read_only_input(rng, kind):
    base = rng.standard_normal((3, 1, 5)).astype(np.float32)
    if kind == "broadcast_to":
        return np.broadcast_to(base, (3, 4, 5))
    a = np.ascontiguousarray(np.broadcast_to(base, (3, 4, 5)))
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("kind", ["broadcast_to", "read_only_contiguous"])
@pytest.mark.parametrize("contig", [False, True])
def test_read_only_inputs(kind, contig, rng):
    """Inputs are only read: NumPy's read-only arrays, such as np.broadcast_to's views, are
    accepted like any other."""
    kernel = kjit.metal_kernel(name="broadcast", input_names=["inp"],
                               output_names=["out", "locs", "st"],
                               source=BROADCAST_SOURCE["metal"], ensure_row_contiguous=contig)
    inp = read_only_input(rng, kind)
    assert not inp.flags.writeable
    outs = [poisoned(inp.shape, np.float32), poisoned(inp.shape, np.int64),
            poisoned((3,), np.int64)]
    kernel(inputs=[inp], grid=(inp.size, 1, 1), threadgroup=(16, 1, 1),
           output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
           outputs=outs)
    np.testing.assert_array_equal(outs[0], inp * np.float32(3))
    seen = inp.strides if not contig else np.ascontiguousarray(inp).strides
    np.testing.assert_array_equal(outs[2], np.array(seen) // inp.itemsize)
    ka = kjit.array(inp)
    np.testing.assert_array_equal(np.asarray(ka), inp)
