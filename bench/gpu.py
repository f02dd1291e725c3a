"""GPU benchmark, run on a machine with an NVIDIA GPU: kjit against the driver's floor and peers,
measured side by side in one run.

  1. per-call time of a cached tiny kernel from Python with torch tensors (output allocated by
     kjit, and with outputs=), against a bare C++ cuLaunchKernel loop (bench/launch_floor.cu,
     built by this script with nvcc), kjit's C++ API in the same loop (bench/cpp_call.cpp, when
     build/libkjit.a exists), torch.exp, CuPy RawKernel with the same body, and Triton; and what
     the torch entry points a call goes through cost alone;
  2. the seed myexp body on 2^28 float32: bandwidth against the same body as a CuPy RawKernel and
     the device copy ceiling;
  3. cold compile of myexp and load from the disk cache in a fresh process (the first call),
     against CuPy.
Usage: PYTHONPATH=build/python python bench/gpu.py [--floor path/to/launch_floor]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings
from typing import Callable

import numpy as np
import torch

import kjit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from seed_kernels import MYEXP  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import child_report, device_time, per_call_each  # noqa: E402
RAW = r"""
extern "C" __global__ void myexp(const float* inp, float* out, unsigned n) {
    unsigned elem = blockIdx.x * blockDim.x + threadIdx.x;
    if (elem < n) out[elem] = expf(inp[elem]);
}
"""


def per_call_us(cases: list[tuple[Callable[[], object], int]]) -> list[float]:
    """Host time per call in us of each (fn, calls), queued GPU work included, measured in turns
    (timing.per_call_each)."""
    return [t * 1e6 for t in per_call_each(cases, warmup=200, sync=torch.cuda.synchronize)]


def run_cpp_call() -> dict | None:
    """kjit's C++ API in the floor's loop (bench/cpp_call.cpp), when the library is built."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    lib = os.path.join(root, "build", "libkjit.a")
    if not os.path.exists(lib):
        return None
    exe = os.path.join(tempfile.mkdtemp(), "cpp_call")
    subprocess.run(["nvcc", "-O2", "-std=c++20", "-arch=sm_90", "-I", os.path.join(root, "include"),
                    "-o", exe, os.path.join(root, "bench", "cpp_call.cpp"), lib, "-lcuda", "-ldl"],
                   check=True)
    return json.loads(subprocess.run([exe, MYEXP], check=True, capture_output=True,
                                     text=True).stdout)


def build_floor(path: str | None) -> dict:
    exe = path or os.path.join(tempfile.mkdtemp(), "launch_floor")
    if not path:
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch_floor.cu")
        subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", exe, src, "-lcuda"], check=True)
    return json.loads(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)


# Both children create their CUDA context before the timed region (as a running program has).
# kjit's child times its first call (building what the call needs, then launching), CuPy's its
# compile.
KJIT_CHILD = """
import json, sys, time
import kjit
x = kjit.zeros((16,), device="cuda")
k = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
t1 = time.perf_counter()
k(inputs=[x], template=[("T", kjit.float32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
  output_shapes=[(16,)], output_dtypes=[kjit.float32])
t2 = time.perf_counter()
print(json.dumps({"build": t2 - t1, "info": kjit.cache_info()}))
"""
CUPY_CHILD = """
import json, sys, time
import cupy
cupy.cuda.runtime.getDeviceCount()
cupy.zeros(1)
t0 = time.perf_counter()
k = cupy.RawKernel(sys.argv[1], "myexp")
k.compile()
t1 = time.perf_counter()
print(json.dumps({"build": t1 - t0}))
"""


def main() -> None:
    warnings.simplefilter("ignore", DeprecationWarning)  # CuPy's ExternalStream
    floor_path = sys.argv[sys.argv.index("--floor") + 1] if "--floor" in sys.argv else None
    rows: list[tuple[str, str, str]] = []
    dev = torch.device("cuda")
    side = torch.cuda.Stream()
    torch.cuda.set_stream(side)  # every timed launch goes to one non-blocking stream

    floor = build_floor(floor_path)
    rows.append(("bare cuLaunchKernel (C++)", f"{floor['floor_us']:.2f} us", "1.00 (floor)"))
    rows.append(("  + cuMemAllocAsync/FreeAsync", f"{floor['floor_alloc_us']:.2f} us",
                 f"{floor['floor_alloc_us'] / floor['floor_us']:.2f}"))
    cpp = run_cpp_call()
    if cpp:
        rows.append(("kjit C++ API, new output", f"{cpp['alloc_us']:.2f} us",
                     f"{cpp['alloc_us'] / floor['floor_us']:.2f}"))
        rows.append(("kjit C++ API, outputs=", f"{cpp['outputs_us']:.2f} us",
                     f"{cpp['outputs_us'] / floor['floor_us']:.2f}"))

    x = torch.randn(16, device=dev)
    out = torch.empty_like(x)
    k = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=MYEXP)
    kw = dict(inputs=[x], template=[("T", kjit.float32)], grid=(16, 1, 1),
              threadgroup=(16, 1, 1), output_shapes=[(16,)], output_dtypes=[torch.float32])
    (y,) = k(**kw)
    torch.cuda.synchronize()
    assert torch.allclose(y, torch.exp(x), rtol=1e-6)
    # Every per-call case, timed in turns; a peer that cannot run here is reported, not fatal.
    current_stream, index = torch._C._cuda_getCurrentRawStream, x.device.index
    cases: list[tuple[str, Callable[[], object], int]] = [
        ("kjit, torch in/out, new output", lambda: k(**kw), 20000),
        ("kjit, torch in/out, outputs=", lambda: k(**kw, outputs=[out]), 20000),
        ("torch.exp (new output)", lambda: torch.exp(x), 20000),
        ("torch.exp(out=)", lambda: torch.exp(x, out=out), 20000),
        # The torch entry points a kjit call goes through, alone.
        ("  torch._C._to_dlpack(x)", lambda: torch._C._to_dlpack(x), 20000),
        ("  x.is_neg()", lambda: x.is_neg(), 20000),
        ("  to and from DLPack", lambda: torch._C._from_dlpack(torch._C._to_dlpack(x)), 20000),
        ("  torch's current stream", lambda: current_stream(index), 20000),
    ]
    peers_missing: list[tuple[str, str, str]] = []
    try:
        import cupy

        cupy_stream = cupy.cuda.ExternalStream(side.cuda_stream)
        cupy_stream.use()  # CuPy allocates for and launches on the timed stream
        raw = cupy.RawKernel(RAW, "myexp")
        cx = cupy.asarray(x)
        cout = cupy.empty(16, dtype=cupy.float32)
        n16 = np.uint32(16)
        raw((1,), (16,), (cx, cout, n16))

        def cupy_alloc():
            o = cupy.empty(16, dtype=cupy.float32)
            raw((1,), (16,), (cx, o, n16))
            return o

        cases += [("CuPy RawKernel, preallocated", lambda: raw((1,), (16,), (cx, cout, n16)), 20000),
                  ("CuPy RawKernel, with allocation", cupy_alloc, 20000)]
    except Exception as e:
        peers_missing.append(("CuPy RawKernel", "n/a", repr(e)[:60]))
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def texp(X, Y, N, BLOCK: tl.constexpr):
            i = tl.arange(0, BLOCK)
            m = i < N
            tl.store(Y + i, tl.exp(tl.load(X + i, mask=m)), mask=m)

        texp[(1,)](x, out, 16, BLOCK=16)
        cases.append(("Triton, preallocated", lambda: texp[(1,)](x, out, 16, BLOCK=16), 5000))
    except Exception as e:
        peers_missing.append(("Triton", "n/a", repr(e)[:60]))
    times = per_call_us([(fn, calls) for _, fn, calls in cases])
    for (what, _, _), t in zip(cases, times):
        ratio = f"{t / floor['floor_us']:.2f}"
        if what == "kjit, torch in/out, new output":
            ratio += f" (vs alloc floor {t / floor['floor_alloc_us']:.2f})"
        rows.append((what, f"{t:.2f} us", ratio))
    rows += peers_missing

    # Bandwidth on 2^28 float32.
    n = 1 << 28
    big = torch.randn(n, device=dev)
    bout = torch.empty_like(big)
    bkw = dict(inputs=[big], template=[("T", kjit.float32)], grid=(n, 1, 1),
               threadgroup=(256, 1, 1), output_shapes=[(n,)], output_dtypes=[torch.float32],
               outputs=[bout])
    k(**bkw)
    torch.cuda.synchronize()
    sample = torch.randint(0, n, (1 << 20,), device=dev)
    err = ((bout[sample].double() - big[sample].double().exp()).abs() /
           big[sample].double().exp()).max().item()
    assert err < 3e-7, err
    bytes_moved = 2 * 4 * n
    t_kjit = device_time(lambda: k(**bkw))
    t_copy = device_time(lambda: bout.copy_(big))
    rows.append(("myexp 2^28 f32: kjit", f"{bytes_moved / t_kjit / 1e12:.2f} TB/s",
                 f"{t_copy / t_kjit:.2f} of copy ceiling"))
    rows.append(("device copy ceiling", f"{bytes_moved / t_copy / 1e12:.2f} TB/s", "1.00"))
    try:
        import cupy

        with cupy.cuda.ExternalStream(side.cuda_stream):
            raw = cupy.RawKernel(RAW, "myexp")
            cb, co = cupy.asarray(big), cupy.asarray(bout)
            nn = np.uint32(n)
            t_cupy = device_time(lambda: raw(((n + 255) // 256,), (256,), (cb, co, nn)))
            rows.append(("myexp 2^28 f32: CuPy RawKernel", f"{bytes_moved / t_cupy / 1e12:.2f} TB/s",
                         f"kjit/CuPy = {t_cupy / t_kjit:.3f}"))
    except Exception as e:
        rows.append(("CuPy RawKernel bandwidth", "n/a", repr(e)[:60]))

    # Cold compile and disk-cache load, in fresh processes.
    cold, warm, cupy_cold, cupy_warm = [], [], [], []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as c:
            env = dict(os.environ, KJIT_CACHE_DIR=d, CUPY_CACHE_DIR=c)
            r = child_report(KJIT_CHILD, [MYEXP], env)
            assert r["info"]["compiles"] == 1
            cold.append(r["build"])
            r = child_report(KJIT_CHILD, [MYEXP], dict(env, KJIT_ASSERT_NO_COMPILE="1"))
            assert r["info"]["compiles"] == 0 and r["info"]["disk_hits"] == 1
            warm.append(r["build"])
            try:
                cupy_cold.append(child_report(CUPY_CHILD, [RAW], env)["build"])
                cupy_warm.append(child_report(CUPY_CHILD, [RAW], env)["build"])
            except Exception:
                pass
    rows.append(("cold compile of myexp (NVRTC)", f"{min(cold) * 1e3:.1f} ms",
                 f"CuPy {min(cupy_cold) * 1e3:.1f} ms" if cupy_cold else "CuPy n/a"))
    rows.append(("disk-cache load, fresh process", f"{min(warm) * 1e3:.2f} ms",
                 f"CuPy {min(cupy_warm) * 1e3:.1f} ms" if cupy_warm else "CuPy n/a"))

    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    print(f"\n{'what'.ljust(widths[0])} | {'result'.ljust(widths[1])} | ratio")
    print("-" * (sum(widths) + 12))
    for r in rows:
        print(f"{r[0].ljust(widths[0])} | {r[1].ljust(widths[1])} | {r[2]}")
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}, kjit {kjit.__version__}")


if __name__ == "__main__":
    main()
