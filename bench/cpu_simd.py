"""SIMD-group and warp operations on the CPU, measured side by side.

Kernels of the kind language-model code writes (norms, softmaxes, a quantized matrix-vector
product, a scan, an argmax, a CUDA warp reduction), each run by kjit in region mode (loops over
a group's threads, split where the lanes of a simdgroup meet), by kjit in cooperative mode (a
coroutine per thread, as KJIT_CPU_REGIONS=0 asks), and by NumPy. Every result is checked
against NumPy in float64 first. The row softmax is also compared with the same softmax written
without SIMD-group operations, a thread per row, which runs in loop mode.
Usage: PYTHONPATH=build/python python bench/cpu_simd.py [--repeats N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import kjit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cooperative import ROW_SOFTMAX  # noqa: E402  (a simdgroup per row of 32)
from timing import best_of, comparison_table  # noqa: E402

RMS_NORM = """
    threadgroup float partial[8];
    const uint row = threadgroup_position_in_grid.x, t = thread_index_in_threadgroup;
    float acc = 0.0f;
    for (uint i = 0; i < 1024; i += 256) {
        const float v = inp[row * 1024 + i + t];
        acc += v * v;
    }
    acc = simd_sum(acc);
    if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = acc;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float total = 0.0f;
    for (uint s = 0; s < 8; ++s) total += partial[s];
    const float scale = metal::rsqrt(total / 1024.0f + 1e-5f);
    for (uint i = 0; i < 1024; i += 256) {
        out[row * 1024 + i + t] = inp[row * 1024 + i + t] * scale * w[i + t];
    }
"""

LAYER_NORM = """
    threadgroup float sums[8];
    threadgroup float squares[8];
    const uint row = threadgroup_position_in_grid.x, t = thread_index_in_threadgroup;
    float s = 0.0f, q = 0.0f;
    for (uint i = 0; i < 1024; i += 256) {
        const float v = inp[row * 1024 + i + t];
        s += v;
        q += v * v;
    }
    s = simd_sum(s);
    q = simd_sum(q);
    if (thread_index_in_simdgroup == 0) {
        sums[simdgroup_index_in_threadgroup] = s;
        squares[simdgroup_index_in_threadgroup] = q;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float total = 0.0f, total_sq = 0.0f;
    for (uint k = 0; k < 8; ++k) {
        total += sums[k];
        total_sq += squares[k];
    }
    const float mean = total / 1024.0f;
    const float inv = metal::rsqrt(total_sq / 1024.0f - mean * mean + 1e-5f);
    for (uint i = 0; i < 1024; i += 256) {
        const uint c = i + t;
        out[row * 1024 + c] = (inp[row * 1024 + c] - mean) * inv * w[c] + b[c];
    }
"""

# The same softmax with a thread per row and no SIMD-group operations: loop mode.
ROW_SOFTMAX_THREAD_PER_ROW = """
    const uint row = thread_position_in_grid.x;
    float m = inp[row * 32];
    for (uint k = 1; k < 32; ++k) m = metal::max(m, inp[row * 32 + k]);
    float s = 0.0f;
    for (uint k = 0; k < 32; ++k) s += metal::exp(inp[row * 32 + k] - m);
    for (uint k = 0; k < 32; ++k) out[row * 32 + k] = metal::exp(inp[row * 32 + k] - m) / s;
"""

# 4-bit weights, eight to a word, a scale per 32 of a row: a simdgroup per output row.
Q4_MATVEC = """
    const uint row = thread_position_in_grid.y, lane = thread_index_in_simdgroup;
    float acc = 0.0f;
    for (uint k0 = 0; k0 < 512; k0 += 32) {
        const uint k = k0 + lane;
        const uint word = wq[row * 512 + k];
        float part = 0.0f;
        for (uint j = 0; j < 8; ++j) {
            part += (float((word >> (4 * j)) & 15u) - 8.0f) * x[k * 8 + j];
        }
        acc += part * scales[row * 128 + k / 4];
    }
    acc = simd_sum(acc);
    if (lane == 0) out[row] = acc;
"""

# An exclusive scan of each group of 256: within simdgroups, then across them.
BLOCK_SCAN = """
    threadgroup float totals[8];
    const uint i = thread_position_in_grid.x;
    const float v = inp[i];
    const float within = simd_prefix_exclusive_sum(v);
    if (thread_index_in_simdgroup == 31) totals[simdgroup_index_in_threadgroup] = within + v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float before = 0.0f;
    for (uint s = 0; s < simdgroup_index_in_threadgroup; ++s) before += totals[s];
    out[i] = before + within;
"""

# The first index of each row's largest value: a simdgroup per row, lanes combined by shuffles.
ARGMAX = """
    const uint row = thread_position_in_grid.y, lane = thread_index_in_simdgroup;
    float best = -INFINITY;
    uint at = 0;
    for (uint k0 = 0; k0 < 1024; k0 += 32) {
        const uint k = k0 + lane;
        const float v = inp[row * 1024 + k];
        if (v > best) {
            best = v;
            at = k;
        }
    }
    for (ushort d = 16; d > 0; d /= 2) {
        const float other = simd_shuffle_xor(best, d);
        const uint other_at = simd_shuffle_xor(at, d);
        if (other > best || (other == best && other_at < at)) {
            best = other;
            at = other_at;
        }
    }
    if (lane == 0) out[row] = at;
"""

# Row sums in the CUDA dialect: a warp per row, reduced with __shfl_down_sync.
WARP_SUM = """
    const unsigned row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    float s = 0.0f;
    for (unsigned k = 0; k < 1024; k += 32) s += inp[row * 1024 + k + lane];
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (lane == 0) out[row] = s;
"""


@dataclass
class Case:
    what: str
    make: Callable[..., Any]  # kjit.metal_kernel or kjit.cuda_kernel
    inputs: dict[str, np.ndarray]
    output: np.ndarray  # written in place
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    source: str
    reference: np.ndarray  # float64
    numpy: Callable[[], object]
    tolerance: float = 1e-4
    numpy_what: str = "numpy"
    extra: list[tuple[str, Callable[[], object]]] = field(default_factory=list)


def mode_of(call: Callable[..., Any]) -> str:
    """The CPU mode that verbose output names for |call|."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        call(verbose=True)
    line = [ln for ln in text.getvalue().splitlines() if ln.startswith("On the CPU")][-1]
    return line.split(" run in ")[1].split(" mode")[0]


def run_case(case: Case, repeats: int) -> list[tuple[str, str, str, str, str]]:
    names = list(case.inputs)
    arrays = list(case.inputs.values())

    def kernel_named(suffix: str) -> Any:
        return case.make(name=case.what.split()[0].replace("-", "_") + suffix, input_names=names,
                         output_names=["out"], source=case.source)

    def caller(kernel: Any) -> Callable[..., Any]:
        def call(**extra: Any) -> Any:
            return kernel(inputs=arrays, output_shapes=[case.output.shape],
                          output_dtypes=[case.output.dtype], outputs=[case.output],
                          grid=case.grid, threadgroup=case.threadgroup, **extra)
        return call

    regions = caller(kernel_named("_regions"))
    modes = {"region mode": mode_of(regions)}
    # The same body in cooperative mode: a kernel built while KJIT_CPU_REGIONS=0.
    os.environ["KJIT_CPU_REGIONS"] = "0"
    coroutines = caller(kernel_named("_coroutines"))
    modes["cooperative mode"] = mode_of(coroutines)
    del os.environ["KJIT_CPU_REGIONS"]
    assert modes == {"region mode": "region", "cooperative mode": "cooperative"}, modes
    results = {}
    for label, fn in (("region", regions), ("cooperative", coroutines)):
        case.output.fill(np.nan if case.output.dtype.kind == "f" else 0)
        fn()
        np.testing.assert_allclose(case.output, case.reference, rtol=case.tolerance,
                                   atol=case.tolerance, err_msg=f"{case.what}, {label} mode")
        results[label] = case.output.copy()
    t_regions = best_of(regions, repeats)
    t_coroutines = best_of(coroutines, max(1, repeats // 2))
    t_numpy = best_of(case.numpy, repeats)
    rows = [
        (case.what, ms(t_regions), "cooperative mode", ms(t_coroutines),
         ratio(t_coroutines, t_regions)),
        (case.what, ms(t_regions), case.numpy_what, ms(t_numpy), ratio(t_numpy, t_regions)),
    ]
    for what, fn in case.extra:
        t = best_of(fn, repeats)
        rows.append((case.what, ms(t_regions), what, ms(t), ratio(t, t_regions)))
    return rows


def ms(t: float) -> str:
    return f"{t * 1e3:.2f} ms"


def ratio(other: float, ours: float) -> str:
    """How many times faster kjit's region mode is (below 1: slower), to three digits."""
    return f"{other / ours:.3g}x"


def cases() -> list[Case]:
    rng = np.random.default_rng()
    out: list[Case] = []

    rows = 4096
    x = rng.standard_normal((rows, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    x64 = x.astype(np.float64)
    y = np.empty_like(x)
    rms = x64 / np.sqrt((x64 * x64).mean(1, keepdims=True) + 1e-5) * w
    out.append(Case("rms-norm 4096x1024 f32", kjit.metal_kernel, {"inp": x, "w": w}, y,
                    (256 * rows, 1, 1), (256, 1, 1), RMS_NORM, rms,
                    lambda: np.multiply(x * (1 / np.sqrt((x * x).mean(1, keepdims=True)
                                                         + 1e-5)), w, out=y)))
    mean = x64.mean(1, keepdims=True)
    ln = (x64 - mean) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * w + b
    out.append(Case("layer-norm 4096x1024 f32", kjit.metal_kernel, {"inp": x, "w": w, "b": b}, y,
                    (256 * rows, 1, 1), (256, 1, 1), LAYER_NORM, ln,
                    lambda: np.add((x - x.mean(1, keepdims=True))
                                   / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w, b, out=y),
                    tolerance=1e-3))

    n_rows = 1 << 18
    xs = rng.standard_normal((n_rows, 32)).astype(np.float32)
    ys = np.empty_like(xs)
    e = np.exp(xs.astype(np.float64) - xs.max(1, keepdims=True))
    thread_per_row = kjit.metal_kernel(name="softmax_thread_per_row", input_names=["inp"],
                                       output_names=["out"], source=ROW_SOFTMAX_THREAD_PER_ROW)

    def run_thread_per_row() -> None:
        thread_per_row(inputs=[xs], output_shapes=[ys.shape], output_dtypes=[ys.dtype],
                       outputs=[ys], grid=(n_rows, 1, 1), threadgroup=(256, 1, 1))

    def numpy_softmax() -> None:
        np.subtract(xs, xs.max(1, keepdims=True), out=ys)
        np.exp(ys, out=ys)
        np.divide(ys, ys.sum(1, keepdims=True), out=ys)

    out.append(Case("row-softmax 2^18x32 f32", kjit.metal_kernel, {"inp": xs}, ys,
                    (32, n_rows, 1), (32, 8, 1), ROW_SOFTMAX, e / e.sum(1, keepdims=True),
                    numpy_softmax, tolerance=1e-5,
                    extra=[("loop mode, a thread per row", run_thread_per_row)]))

    q_rows = 4096
    nibbles = rng.integers(0, 16, (q_rows, 4096), dtype=np.uint32)
    wq = np.zeros((q_rows, 512), np.uint32)
    for j in range(8):
        wq |= nibbles[:, j::8] << np.uint32(4 * j)
    scales = (rng.random((q_rows, 128)) * 0.1).astype(np.float32)
    xv = rng.standard_normal(4096).astype(np.float32)
    dense = (nibbles.astype(np.float64) - 8) * np.repeat(scales, 32, axis=1)
    dense32 = dense.astype(np.float32)
    yq = np.empty(q_rows, np.float32)
    out.append(Case("q4-matvec 4096x4096", kjit.metal_kernel,
                    {"wq": wq, "scales": scales, "x": xv}, yq, (32, q_rows, 1), (32, 8, 1),
                    Q4_MATVEC, dense @ xv, lambda: np.matmul(dense32, xv, out=yq),
                    tolerance=2e-3, numpy_what="numpy matmul, dequantized f32"))

    n = 1 << 22
    v = rng.standard_normal(n).astype(np.float32)
    blocks = v.astype(np.float64).reshape(-1, 256)
    scanned = (np.cumsum(blocks, axis=1) - blocks).reshape(-1)
    vs = np.empty_like(v)
    out.append(Case("block-scan 2^22 f32", kjit.metal_kernel, {"inp": v}, vs, (n, 1, 1),
                    (256, 1, 1), BLOCK_SCAN, scanned,
                    lambda: np.subtract(np.cumsum(v.reshape(-1, 256), axis=1),
                                        v.reshape(-1, 256), out=vs.reshape(-1, 256)),
                    tolerance=1e-3))

    a = rng.standard_normal((8192, 1024)).astype(np.float32)
    arg = np.empty(8192, np.uint32)
    out.append(Case("argmax 8192x1024 f32", kjit.metal_kernel, {"inp": a}, arg, (32, 8192, 1),
                    (32, 8, 1), ARGMAX, np.argmax(a, axis=1).astype(np.float64),
                    lambda: np.argmax(a, axis=1, out=arg.view(np.int32)), tolerance=0))

    sums = np.empty(8192, np.float32)
    out.append(Case("warp-sum 8192x1024 f32 (CUDA dialect)", kjit.cuda_kernel, {"inp": a}, sums,
                    (32 * 8192, 1, 1), (256, 1, 1), WARP_SUM, a.astype(np.float64).sum(1),
                    lambda: np.sum(a, axis=1, out=sums), tolerance=1e-3))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows: list[tuple[str, str, str, str, str]] = []
    for case in cases():
        rows += run_case(case, args.repeats)
    comparison_table(rows)
    print(f"\nkjit {kjit.__version__}, numpy {np.__version__}, {os.cpu_count()} cores, "
          f"{kjit.devices()[0]}")


if __name__ == "__main__":
    main()
