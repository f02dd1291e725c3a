"""CPU benchmark: kjit against NumPy, measured side by side in one run.

Prints a table of times and ratios:
  - the seed myexp kernel on 2^24 float32 against numpy.exp (fresh outputs, and out=);
  - invert_3x3 on 10^6 float32 matrices against numpy.linalg.inv;
  - cold compile of myexp (empty cache, fresh process) and load from the disk cache in a fresh
    process (no compiler run);
  - the per-call time of a cached tiny kernel with NumPy in and out, against a tiny numpy.exp.
With --debug: the same kernels built with compile_options={"debug": True} (checked indices,
poisoned outputs checked after each launch) against their plain builds.
Ends with the vector extension the kernels were compiled for (KJIT_CPU_ARCH, default native)
and this CPU's own.
Usage: PYTHONPATH=build/python [KJIT_CPU_ARCH=haswell] python bench/cpu.py [--quick] [--debug]
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

import kjit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from seed_kernels import INVERT_3X3 as INVERT  # noqa: E402
from seed_kernels import MYEXP  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import best_of, child_report, comparison_table, per_call  # noqa: E402


CHILD = """
import json, sys, time
t0 = time.perf_counter()
import kjit
k = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
t1 = time.perf_counter()
k.build(inputs=[(kjit.float32, 1)], output_dtypes=[kjit.float32], template=[("T", kjit.float32)])
t2 = time.perf_counter()
print(json.dumps({"build": t2 - t1, "info": kjit.cache_info()}))
"""


# Writes the widest x86 vector extension the kernel was compiled for, from the compiler's
# predefined macros: what KJIT_CPU_ARCH (default native) gave the compiler. An index into
# ISA_NAMES.
VECTOR_ISA = """
#if defined(__AVX512F__)
isa[0] = 4;
#elif defined(__AVX2__) && defined(__FMA__)
isa[0] = 3;
#elif defined(__AVX__)
isa[0] = 2;
#elif defined(__SSE2__)
isa[0] = 1;
#else
isa[0] = 0;
#endif
"""
ISA_NAMES = ["no x86 vectors", "SSE2", "AVX", "AVX2+FMA", "AVX-512"]


def kernel_vector_isa() -> str:
    """The vector extension CPU kernels are compiled for, as a kernel sees it."""
    probe = kjit.metal_kernel(name="vector_isa", input_names=[], output_names=["isa"],
                              source=VECTOR_ISA)
    (isa,) = probe(inputs=[], output_shapes=[(1,)], output_dtypes=[np.int32], grid=(1, 1, 1),
                   threadgroup=(1, 1, 1), device="cpu")
    return ISA_NAMES[int(np.asarray(isa)[0])]


def cpu_vector_isa() -> str:
    """This CPU's widest vector extension, from /proc/cpuinfo's flags."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((set(line.split(":", 1)[1].split()) for line in f
                          if line.startswith("flags")), set())
    except OSError:
        return "unknown"
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"),
                       ("sse2", "SSE2")):
        if flag in flags:
            return name
    return "no x86 vectors"


def vector_isa_line() -> str:
    """What the kernels were built for and what this CPU has, for the benchmark's footer."""
    arch = os.environ.get("KJIT_CPU_ARCH") or ""
    target = f"KJIT_CPU_ARCH={arch}" if arch else "-march=native"
    return f"kernels built for {kernel_vector_isa()} ({target}); this CPU has {cpu_vector_isa()}"


def fresh_process_build(cache_dir: str, no_compile: bool) -> dict:
    env = dict(os.environ, KJIT_CACHE_DIR=cache_dir)
    if no_compile:
        env["KJIT_ASSERT_NO_COMPILE"] = "1"
    return child_report(CHILD, [MYEXP], env)


def debug_rows(repeats: int, calls: int, rng: np.random.Generator) -> None:
    """Debug builds of the benchmark's kernels against their plain builds, in one run."""
    def pair(name: str, source: str, input_name: str) -> tuple[kjit.Kernel, kjit.Kernel]:
        plain, debug = (kjit.metal_kernel(name=name, input_names=[input_name],
                                          output_names=["out"], source=source,
                                          compile_options={"debug": d}) for d in (False, True))
        return plain, debug

    rows: list[tuple[str, str, str, str, str]] = []

    def row(what: str, plain: float, debug: float, unit: float, suffix: str) -> None:
        rows.append((f"{what}, debug build", f"{debug/unit:.2f} {suffix}", "plain build",
                     f"{plain/unit:.2f} {suffix}", f"{plain/debug:.2f}x"))

    plain, debug = pair("myexp", MYEXP, "inp")
    x = rng.standard_normal(1 << 24, dtype=np.float32)
    kw = dict(inputs=[x], template=[("T", kjit.float32)], grid=(x.size, 1, 1),
              threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    assert np.array_equal(plain(**kw)[0], debug(**kw)[0])
    row("myexp 2^24 f32, new output", best_of(lambda: plain(**kw), repeats),
        best_of(lambda: debug(**kw), repeats), 1e-3, "ms")
    out = np.empty_like(x)
    row("myexp 2^24 f32, out=", best_of(lambda: plain(**kw, outputs=[out]), repeats),
        best_of(lambda: debug(**kw, outputs=[out]), repeats), 1e-3, "ms")
    plain_inv, debug_inv = pair("invert_3x3", INVERT, "a")
    n = 10**6
    a = (np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    ikw = dict(inputs=[a], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape],
               output_dtypes=[a.dtype])
    assert np.array_equal(plain_inv(**ikw)[0], debug_inv(**ikw)[0])
    row("invert_3x3 10^6 f32", best_of(lambda: plain_inv(**ikw), repeats),
        best_of(lambda: debug_inv(**ikw), repeats), 1e-3, "ms")
    small = rng.standard_normal(16, dtype=np.float32)
    skw = dict(inputs=[small], template=[("T", kjit.float32)], grid=(16, 1, 1),
               threadgroup=(16, 1, 1), output_shapes=[small.shape], output_dtypes=[small.dtype])
    row("tiny kernel per call (16 f32)", per_call(lambda: plain(**skw), calls),
        per_call(lambda: debug(**skw), calls), 1e-6, "us")
    comparison_table(rows)


def main() -> None:
    quick = "--quick" in sys.argv
    repeats = 3 if quick else 7
    rng = np.random.default_rng()
    if "--debug" in sys.argv:
        debug_rows(repeats, 2000 if quick else 20000, rng)
        print(vector_isa_line())
        return
    rows: list[tuple[str, str, str, str, str]] = []

    # myexp on 2^24 float32.
    myexp = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                              source=MYEXP)
    x = rng.standard_normal(1 << 24, dtype=np.float32)
    kw = dict(inputs=[x], template=[("T", kjit.float32)], grid=(x.size, 1, 1),
              threadgroup=(256, 1, 1), output_shapes=[x.shape], output_dtypes=[x.dtype])
    (y,) = myexp(**kw)
    ref = np.exp(x.astype(np.float64))
    assert np.max(np.abs(y - ref) / ref) < 3e-7
    out = np.empty_like(x)
    t_kjit = best_of(lambda: myexp(**kw), repeats)
    t_np = best_of(lambda: np.exp(x), repeats)
    rows.append(("myexp 2^24 f32, new output", f"{t_kjit*1e3:.2f} ms", "numpy.exp",
                 f"{t_np*1e3:.2f} ms", f"{t_np/t_kjit:.2f}x"))
    t_kjit = best_of(lambda: myexp(**kw, outputs=[out]), repeats)
    t_np = best_of(lambda: np.exp(x, out=out), repeats)
    rows.append(("myexp 2^24 f32, out=", f"{t_kjit*1e3:.2f} ms", "numpy.exp(out=)",
                 f"{t_np*1e3:.2f} ms", f"{t_np/t_kjit:.2f}x"))

    # invert_3x3 on 10^6 matrices.
    invert = kjit.metal_kernel(name="invert_3x3", input_names=["a"], output_names=["out"],
                               source=INVERT)
    n = 10**6
    a = (np.eye(3) + 0.1 * rng.standard_normal((n, 3, 3))).astype(np.float32)
    ikw = dict(inputs=[a], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape],
               output_dtypes=[a.dtype])
    (inv,) = invert(**ikw)
    assert np.max(np.abs(inv - np.linalg.inv(a.astype(np.float64)))) < 1e-3
    t_kjit = best_of(lambda: invert(**ikw), repeats)
    t_np = best_of(lambda: np.linalg.inv(a), max(1, repeats // 2))
    rows.append(("invert_3x3 10^6 f32", f"{t_kjit*1e3:.2f} ms", "numpy.linalg.inv",
                 f"{t_np*1e3:.2f} ms", f"{t_np/t_kjit:.2f}x"))

    # Cold compile and disk-cache load, each in a fresh process.
    colds, loads = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as d:
            cold = fresh_process_build(d, no_compile=False)
            assert cold["info"]["compiles"] == 1
            warm = fresh_process_build(d, no_compile=True)
            assert warm["info"]["compiles"] == 0 and warm["info"]["disk_hits"] == 1
            colds.append(cold["build"])
            loads.append(warm["build"])
    rows.append(("cold compile of myexp", f"{min(colds)*1e3:.1f} ms", "goal", "400 ms",
                 f"{0.4/min(colds):.2f}x"))
    rows.append(("disk-cache load, fresh process", f"{min(loads)*1e3:.2f} ms", "goal", "5 ms",
                 f"{0.005/min(loads):.2f}x"))

    # Per-call time of a cached tiny kernel, NumPy in and out.
    small = rng.standard_normal(16, dtype=np.float32)
    skw = dict(inputs=[small], template=[("T", kjit.float32)], grid=(16, 1, 1),
               threadgroup=(16, 1, 1), output_shapes=[small.shape], output_dtypes=[small.dtype])
    calls = 2000 if quick else 20000
    t_kjit = per_call(lambda: myexp(**skw), calls)
    t_np = per_call(lambda: np.exp(small), calls)
    rows.append(("tiny kernel per call (16 f32)", f"{t_kjit*1e6:.2f} us", "numpy.exp (16 f32)",
                 f"{t_np*1e6:.2f} us", f"{t_np/t_kjit:.2f}x"))
    sout = np.empty_like(small)
    t_kjit = per_call(lambda: myexp(**skw, outputs=[sout]), calls)
    rows.append(("tiny kernel per call, out=", f"{t_kjit*1e6:.2f} us", "goal", "5 us",
                 f"{5e-6/t_kjit:.2f}x"))

    comparison_table(rows)
    print(f"\nkjit {kjit.__version__}, numpy {np.__version__}, {os.cpu_count()} cores")
    print(vector_isa_line())


if __name__ == "__main__":
    main()
