"""Launch geometry: partial edge groups, zero-sized grids and init_value, grids beyond
65,535 groups in y, every way a launch lays groups out as blocks, and kernels built ahead
launching every way."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kjit
from conftest import DIALECTS, EXP, make_kernel, needs_gpu, poisoned


# --- partial edge groups ---------------------------------------------------------------------

PARTIAL_SOURCE = {
    "metal": """
        uint3 p = thread_position_in_grid;
        uint3 n = threads_per_grid;
        if (p.x >= uint(gx) || p.y >= uint(gy) || p.z >= uint(gz)) {
            escaped[0] = escaped[0] + 1;
            return;
        }
        uint i = p.x + n.x * (p.y + n.y * p.z);
        count[i] = count[i] + 1;
        device uint* r = info + 6 * i;
        r[0] = threads_per_threadgroup.x;
        r[1] = threads_per_threadgroup.y;
        r[2] = threads_per_threadgroup.z;
        r[3] = threadgroup_position_in_grid.x;
        r[4] = threadgroup_position_in_grid.y;
        r[5] = threadgroup_position_in_grid.z;
    """,
    "cuda": """
        unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
        unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
        if (x >= unsigned(gx[0]) || y >= unsigned(gy[0]) || z >= unsigned(gz[0])) {
            escaped[0] = escaped[0] + 1;
            return;
        }
        unsigned i = x + unsigned(gx[0]) * (y + unsigned(gy[0]) * z);
        count[i] = count[i] + 1;
        unsigned* r = info + 6 * i;
        r[0] = threads_per_threadgroup.x;
        r[1] = threads_per_threadgroup.y;
        r[2] = threads_per_threadgroup.z;
        r[3] = blockIdx.x;
        r[4] = blockIdx.y;
        r[5] = blockIdx.z;
    """,
}


@pytest.fixture(scope="module")
def partial_kernels():
    return {d: make_kernel(d, name="partial_groups", input_names=["gx", "gy", "gz"],
                           output_names=["count", "info", "escaped"], source=PARTIAL_SOURCE[d])
            for d in DIALECTS}


@pytest.mark.parametrize(
    "grid,threadgroup",
    [
        ((37, 1, 1), (8, 1, 1)),
        ((13, 7, 1), (4, 3, 1)),
        ((5, 6, 7), (2, 4, 3)),
        ((3, 2, 2), (8, 8, 8)),  # the group is larger than the grid in every dimension
    ],
)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_partial_edge_groups(partial_kernels, dialect, grid, threadgroup):
    gx, gy, gz = grid
    shape = (gz, gy, gx)  # exactly the grid: x is the fastest dimension
    count = np.zeros(shape, np.int32)
    info = poisoned(shape + (6,), np.uint32)
    escaped = np.zeros((1,), np.int32)
    partial_kernels[dialect](
        inputs=[gx, gy, gz], grid=grid, threadgroup=threadgroup,
        output_shapes=[shape, shape + (6,), (1,)],
        output_dtypes=[np.int32, np.uint32, np.int32], outputs=[count, info, escaped])
    assert escaped[0] == 0
    np.testing.assert_array_equal(count, np.ones(shape, np.int32))
    G = np.array(grid)
    T = np.minimum(np.array(threadgroup), G)
    z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    pos = np.stack([x, y, z], axis=-1)
    gid = pos // T
    part = np.minimum(T, G - gid * T)
    np.testing.assert_array_equal(info[..., 0:3], part)
    np.testing.assert_array_equal(info[..., 3:6], gid)
    # Every partial size occurs where expected: full groups inside, the remainder at the edge.
    for d in range(3):
        sizes = set(np.unique(info[..., d]).tolist())
        assert sizes == {int(T[d])} | ({int(G[d] % T[d])} if G[d] % T[d] else set())


# --- zero-sized grids and init_value ---------------------------------------------------------

ONE_PER_THREAD = """
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] * 3;
    flag[i] = 5;
"""


@pytest.fixture(scope="module")
def one_per_thread():
    return kjit.metal_kernel(name="one_per_thread", input_names=["inp"],
                             output_names=["out", "flag"], source=ONE_PER_THREAD)


@pytest.mark.parametrize("grid", [(0, 1, 1), (16, 0, 1), (16, 4, 0), (0, 0, 0)])
def test_zero_grid_launches_nothing(one_per_thread, grid, rng):
    a = rng.standard_normal(16).astype(np.float32)
    init = float(rng.uniform(-50, 50))
    out, flag = one_per_thread(inputs=[a], grid=grid, threadgroup=(8, 1, 1),
                               output_shapes=[(16,), (4, 4)],
                               output_dtypes=[np.float32, np.int32], init_value=init)
    assert out.shape == (16,) and out.dtype == np.float32
    assert flag.shape == (4, 4) and flag.dtype == np.int32
    np.testing.assert_array_equal(out, np.full(16, np.float32(init)))
    np.testing.assert_array_equal(flag, np.full((4, 4), int(init), np.int32))
    # Without init_value, preallocated outputs stay as they were: no thread ran.
    outs = [poisoned((16,), np.float32), poisoned((4, 4), np.int32)]
    one_per_thread(inputs=[a], grid=grid, threadgroup=(8, 1, 1), output_shapes=[(16,), (4, 4)],
                   output_dtypes=[np.float32, np.int32], outputs=outs)
    assert np.all(np.isnan(outs[0]))
    np.testing.assert_array_equal(outs[1], np.full((4, 4), -7, np.int32))


def test_zero_grid_with_empty_outputs(one_per_thread):
    out, flag = one_per_thread(inputs=[np.zeros(0, np.float32)], grid=(0, 1, 1),
                               threadgroup=(8, 1, 1), output_shapes=[(0,), (0, 3)],
                               output_dtypes=[np.float32, np.int32], init_value=1.0)
    assert out.shape == (0,) and flag.shape == (0, 3)


EVERY_OTHER = """
    uint i = thread_position_in_grid.x;
    if (i % 2 == 0) {
        out[i] = inp[i];
    }
"""


@pytest.fixture(scope="module")
def every_other():
    return kjit.metal_kernel(name="every_other", input_names=["inp"],
                             output_names=["out", "untouched"], source=EVERY_OTHER)


@pytest.mark.parametrize("preallocated", [False, True])
def test_init_value_fills_before_launch(every_other, preallocated, rng):
    n = 101
    a = rng.standard_normal(n).astype(np.float32)
    init = float(np.round(rng.uniform(-100, 100), 2))
    kwargs = dict(inputs=[a], grid=(n, 1, 1), threadgroup=(16, 1, 1),
                  output_shapes=[(n,), (3, 5)], output_dtypes=[np.float32, np.int64],
                  init_value=init)
    if preallocated:
        outs = [poisoned((n,), np.float32), poisoned((3, 5), np.int64)]
        res = every_other(**kwargs, outputs=outs)
        assert res[0] is outs[0] and res[1] is outs[1]
    else:
        res = every_other(**kwargs)
    out, untouched = res
    expected = np.full(n, np.float32(init))
    expected[::2] = a[::2]
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(untouched, np.full((3, 5), int(init), np.int64))


@needs_gpu
def test_grid_beyond_65535_groups_in_y(rng):
    kernel = kjit.metal_kernel(name="rows", input_names=["inp"], output_names=["out"], source="""
        const uint2 p = uint2(thread_position_in_grid.x, thread_position_in_grid.y);
        out[p.y * 4 + p.x] = inp[p.y * 4 + p.x] + float(p.y);
    """)
    rows = 200_000
    x = rng.standard_normal((rows, 4)).astype(np.float32)
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                    grid=(4, rows, 1), threadgroup=(4, 1, 1), device="cuda",
                    outputs=None)
    np.testing.assert_array_equal(out, x + np.arange(rows, dtype=np.float32)[:, None])


WHERE_AND_HOW_BIG = """
    const uint3 p = thread_position_in_grid, n = threads_per_grid;
    const ulong i = 10 * ((ulong(p.z) * n.y + p.y) * n.x + p.x);
    const uint3 g = threadgroup_position_in_grid, s = threads_per_threadgroup;
    out[i + 0] = p.x; out[i + 1] = p.y; out[i + 2] = p.z;
    out[i + 3] = g.x; out[i + 4] = g.y; out[i + 5] = g.z;
    out[i + 6] = s.x; out[i + 7] = s.y; out[i + 8] = s.z;
    out[i + 9] = thread_index_in_threadgroup;
"""

# Each way a launch lays its groups out as blocks, with every group full and with partial ones.
LAUNCH_SHAPES = [
    ((1024, 1, 1), (256, 1, 1)),    # x only, full
    ((1000, 1, 1), (256, 1, 1)),    # x only, partial
    ((16, 12, 4), (4, 3, 2)),       # within the caps, full
    ((15, 13, 5), (4, 3, 2)),       # within the caps, partial in x, y and z
    ((4, 65537, 2), (4, 1, 2)),     # one column of groups beyond the caps, full
    ((4, 65537, 3), (4, 1, 2)),     # one column of groups beyond the caps, partial in z
    ((4, 65537, 1), (2, 1, 1)),     # beyond the caps and several groups wide, full
    ((5, 65537, 1), (2, 1, 1)),     # beyond the caps and several groups wide, partial in x
    ((3, 2, 65537), (2, 1, 1)),     # beyond the caps in z, partial in x
]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_every_launch_shape_places_and_sizes_threads(device):
    # One kernel launched every way: each launch shape gets its entry point on the GPU.
    kernel = kjit.metal_kernel(name="where_and_how_big", input_names=[], output_names=["out"],
                               source=WHERE_AND_HOW_BIG)
    for grid, threadgroup in LAUNCH_SHAPES:
        gx, gy, gz = grid
        (out,) = kernel(inputs=[], output_shapes=[(gz, gy, gx, 10)], output_dtypes=[np.uint32],
                        grid=grid, threadgroup=threadgroup, device=device, init_value=0xFFFFFFF9)
        out = np.asarray(out.to("cpu"))
        z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
        pos = np.stack([x, y, z], axis=-1)
        tg = np.minimum(np.array(threadgroup), np.array(grid))
        group = pos // tg
        size = np.minimum(tg, np.array(grid) - group * tg)
        local = pos - group * tg
        index = local[..., 0] + size[..., 0] * (local[..., 1] + size[..., 1] * local[..., 2])
        where = f"grid {grid}, threadgroup {threadgroup}"
        np.testing.assert_array_equal(out[..., 0:3], pos, err_msg=where)
        np.testing.assert_array_equal(out[..., 3:6], group, err_msg=where)
        np.testing.assert_array_equal(out[..., 6:9], size, err_msg=where)
        np.testing.assert_array_equal(out[..., 9], index, err_msg=where)


AHEAD = r"""
import json, sys, numpy as np, kjit
k = kjit.metal_kernel(name="gpu_exp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
if sys.argv[2] == "build":
    k.build(inputs=[(kjit.float32, 1)], output_dtypes=[kjit.float32], target="cuda")
else:
    x = np.linspace(-3, 3, 4096, dtype=np.float32)
    for group in (256, 100):  # every group full, then a partial one: two entry points
        out, = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                 grid=(x.size, 1, 1), threadgroup=(group, 1, 1), device="cuda")
        assert np.max(np.abs(out - np.exp(x)) / np.exp(x)) < 3e-7
print(json.dumps(kjit.cache_info()))
"""


@needs_gpu
def test_a_kernel_built_ahead_launches_every_way_without_compiling(tmp_path):
    env = dict(os.environ, KJIT_CACHE_DIR=str(tmp_path))
    built = json.loads(subprocess.run([sys.executable, "-c", AHEAD, EXP, "build"], env=env,
                                      check=True, capture_output=True, text=True).stdout)
    assert built["compiles"] == 1
    env["KJIT_ASSERT_NO_COMPILE"] = "1"
    run = json.loads(subprocess.run([sys.executable, "-c", AHEAD, EXP, "run"], env=env,
                                    check=True, capture_output=True, text=True).stdout)
    assert run["compiles"] == 0 and run["disk_hits"] == 1
