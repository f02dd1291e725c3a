"""GPU benchmark, run on a machine with an NVIDIA GPU: kjit against the driver's floor and peers,
measured side by side in one run.

  1. per-call time of a cached tiny kernel from Python with torch tensors (output allocated by
     kjit, and with outputs=), against a bare C++ cuLaunchKernel loop (bench/launch_floor.cu,
     built by this script with nvcc), kjit's C++ API in the same loop (bench/cpp_call.cpp, when
     build/libkjit.a exists), a C extension that only launches, called from Python
     (bench/python_floor.cu: the least any Python API can cost; and the same reading two torch
     tensors as kjit reads them, on torch's current stream: the least a bound call can cost),
     torch.exp, CuPy RawKernel with
     the same body, and Triton; and the same calls with torch tensors read and made through
     DLPack instead of kjit._torch;
  2. the kernel as a torch operator (kjit.torch.op) called eagerly and through torch's
     dispatcher, against the torch.library.custom_op recipe around a bound call; and a loop of
     100 small ops eagerly, under torch.compile(mode="reduce-overhead") and captured by hand;
  3. the seed myexp body on 2^28 float32: bandwidth against the same body as a CuPy RawKernel and
     the device copy ceiling;
  4. cold compile of myexp (with NVRTC loaded first, as importing CuPy loads it, and with kjit
     loading it in the call) and load from the disk cache in a fresh process (the first call),
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
import kjit.torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from seed_kernels import MYEXP  # noqa: E402

sys.path.insert(0, HERE)
from timing import child_report, device_time, host_per_call, per_call_each  # noqa: E402
RAW = r"""
extern "C" __global__ void myexp(const float* inp, float* out, unsigned n) {
    unsigned elem = blockIdx.x * blockDim.x + threadIdx.x;
    if (elem < n) out[elem] = expf(inp[elem]);
}
"""


def per_call_us(cases: list[tuple[Callable[[], object], int]], warmup: int) -> list[float]:
    """Host time per call in us of each (fn, calls), queued GPU work included: one loop each, in
    turns (timing.per_call_each)."""
    return [t * 1e6 for t in per_call_each(cases, repeats=1, warmup=warmup,
                                           sync=torch.cuda.synchronize)]


def nvcc(source: str, output: str, *flags: str, libraries: tuple[str, ...] = ()) -> str:
    """Builds bench/|source| for sm_90 into a fresh directory's |output|, linked with
    |libraries| and the CUDA driver; returns its path."""
    path = os.path.join(tempfile.mkdtemp(), output)
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", *flags, "-o", path, os.path.join(HERE, source),
                    *libraries, "-lcuda"], check=True)
    return path


def build_cpp_call() -> str | None:
    """kjit's C++ API in the floor's loop (bench/cpp_call.cpp), when the library is built."""
    root = os.path.join(HERE, "..")
    lib = os.path.join(root, "build", "libkjit.a")
    if not os.path.exists(lib):
        return None
    return nvcc("cpp_call.cpp", "cpp_call", "-std=c++20", "-I", os.path.join(root, "include"),
                libraries=(lib, "-ldl"))


def build_python_floor() -> object:
    """The Python floor (bench/python_floor.cu): a C extension that only launches."""
    import importlib.util
    import sysconfig

    root = os.path.join(HERE, "..")
    so = nvcc("python_floor.cu", "python_floor" + sysconfig.get_config_var("EXT_SUFFIX"),
              "-std=c++20", "-shared", "-Xcompiler", "-fPIC", "-I", sysconfig.get_paths()["include"],
              "-I", os.path.join(root, "include"), "-I", os.path.join(root, "python", "src"))
    spec = importlib.util.spec_from_file_location("python_floor", so)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_json(command: list[str]) -> dict:
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def best_of_runs(runs: list[dict]) -> dict:
    return {key: min(r[key] for r in runs) for key in runs[0]}


# Both children create their CUDA context before the timed region (as a running program has).
# kjit's child times its first call (building what the call needs, then launching), CuPy's its
# compile. Importing CuPy loads NVRTC; kjit loads it when it first compiles, in the timed call,
# unless asked to load it first (argv[2] == "nvrtc loaded"), which makes the two comparable.
KJIT_CHILD = """
import json, sys, time
import kjit
x = kjit.zeros((16,), device="cuda")
if sys.argv[2] == "nvrtc loaded":
    assert kjit._kjit.cuda_status()["nvrtc"]
k = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
t1 = time.perf_counter()
k(inputs=[x], template=[("T", kjit.float32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
  output_shapes=[(16,)], output_dtypes=[kjit.float32])
t2 = time.perf_counter()
print(json.dumps({"build": t2 - t1, "info": kjit.cache_info()}))
"""
# kjit's calls with torch tensors read and made through DLPack, timed in a process of their own
# (whether kjit._torch is used is settled once per process).
DLPACK_CHILD = """
import json, os, sys
import torch
import kjit
sys.path.insert(0, sys.argv[2])
from timing import per_call_each
torch.cuda.set_stream(torch.cuda.Stream())
x = torch.randn(16, device="cuda")
out = torch.empty_like(x)
f32 = torch.float32
k = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
new_output = lambda: k(inputs=[x], template=[("T", f32)], grid=(16, 1, 1),
                       threadgroup=(16, 1, 1), output_shapes=[(16,)], output_dtypes=[f32])
outputs = lambda: k(inputs=[x], template=[("T", f32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                    output_shapes=[(16,)], output_dtypes=[f32], outputs=[out])
t = per_call_each([(new_output, 20000), (outputs, 20000)], warmup=200,
                  sync=torch.cuda.synchronize)
print(json.dumps({"new output": t[0] * 1e6, "outputs=": t[1] * 1e6}))
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


CHAIN_LENGTH = 100
AFFINE = "uint i = thread_position_in_grid.x; if (i < inp_shape[0]) out[i] = inp[i] * 0.5f + 1.0f;"


def reduce_overhead_rows() -> list[tuple[str, str, str]]:
    """A loop of CHAIN_LENGTH small kjit ops: eager, under torch.compile(mode="reduce-overhead")
    (replayed as a CUDA graph), and captured by hand in a CUDA graph; us per kernel."""
    k = kjit.metal_kernel(name="affine", input_names=["inp"], output_names=["out"], source=AFFINE)
    op = kjit.torch.op(k, "kjit_bench::affine", grid=(1024, 1, 1), threadgroup=(256, 1, 1),
                       output_shapes=lambda t: [t.shape], output_dtypes=lambda t: [t.dtype])

    def chain(t: torch.Tensor) -> torch.Tensor:
        for _ in range(CHAIN_LENGTH):
            t = op(t)
        return t

    x = torch.randn(1024, device="cuda")
    expected = x.clone()
    for _ in range(CHAIN_LENGTH):
        expected = expected * 0.5 + 1
    compiled = torch.compile(chain, mode="reduce-overhead", fullgraph=True)
    for _ in range(3):  # compiled, then recorded as a graph
        got = compiled(x)
    assert torch.allclose(got, expected, rtol=1e-5), "reduce-overhead result"
    assert torch.allclose(chain(x), expected, rtol=1e-5), "eager result"
    static_in = x.clone()
    chain(static_in)  # warm-up before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = chain(static_in)
    graph.replay()
    assert torch.allclose(static_out, expected, rtol=1e-5), "captured result"
    eager, reduced, captured = per_call_us(
        [(lambda: chain(x), 200), (lambda: compiled(x), 200), (graph.replay, 200)], warmup=5)
    per = [t / CHAIN_LENGTH for t in (eager, reduced, captured)]
    return [
        (f"{CHAIN_LENGTH} kjit ops, eager", f"{per[0]:.2f} us/kernel", "1.00"),
        (f"{CHAIN_LENGTH} kjit ops, reduce-overhead", f"{per[1]:.2f} us/kernel",
         f"{per[1] / per[0]:.2f} of eager"),
        (f"{CHAIN_LENGTH} kjit ops, torch.cuda.graph replay", f"{per[2]:.2f} us/kernel",
         f"{per[2] / per[0]:.2f} of eager"),
    ]


def main() -> None:
    warnings.simplefilter("ignore", DeprecationWarning)  # CuPy's ExternalStream
    floor_path = sys.argv[sys.argv.index("--floor") + 1] if "--floor" in sys.argv else None
    rows: list[tuple[str, str, str]] = []
    dev = torch.device("cuda")
    side = torch.cuda.Stream()
    torch.cuda.set_stream(side)  # every timed launch goes to one non-blocking stream

    floor_exe = floor_path or nvcc("launch_floor.cu", "launch_floor")
    cpp_exe = build_cpp_call()
    python_floor = build_python_floor()

    x = torch.randn(16, device=dev)
    out = torch.empty_like(x)
    k = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=MYEXP)
    f32 = torch.float32

    # The calls as a program writes them: keyword arguments, new lists each call.
    def kjit_new_output():
        return k(inputs=[x], template=[("T", f32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                 output_shapes=[(16,)], output_dtypes=[f32])

    def kjit_outputs():
        return k(inputs=[x], template=[("T", f32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                 output_shapes=[(16,)], output_dtypes=[f32], outputs=[out])

    # The same calls through a bound kernel (Kernel.bind): the arrays alone each call.
    bound = k.bind(template=[("T", f32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                   output_shapes=[(16,)], output_dtypes=[f32])

    def kjit_bound_new_output():
        return bound(x)

    def kjit_bound_outputs():
        return bound(x, out)

    # What any Python API called this way pays before it does anything: the same arguments, built
    # the same way, passed to a do-nothing builtin.
    def call_form():
        return dict(inputs=[x], template=[("T", f32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                    output_shapes=[(16,)], output_dtypes=[f32], outputs=[out])

    # The least a Python call that launches can cost: a C function that only launches, called
    # with no arguments, and called with kjit's call's arguments (built each call, then ignored).
    python_floor.setup(x.data_ptr(), out.data_ptr(), side.cuda_stream)

    def python_floor_bare():
        return python_floor.launch()

    def python_floor_torch():
        return python_floor.launch_torch(x, out)

    def python_floor_call_form():
        return python_floor.launch_kw(inputs=[x], template=[("T", f32)], grid=(16, 1, 1),
                                      threadgroup=(16, 1, 1), output_shapes=[(16,)],
                                      output_dtypes=[f32], outputs=[out])

    # The kernel as a torch operator (kjit.torch.op): called eagerly, through torch's dispatcher
    # (as torch.compile's graphs call it), and the recipe users write by hand around a bound
    # call (torch.library.custom_op with a fake).
    op = kjit.torch.op(k, "kjit_bench::myexp", template=[("T", f32)], grid=(16, 1, 1),
                       threadgroup=(16, 1, 1), output_shapes=[(16,)], output_dtypes=[f32])

    shaped = kjit.torch.op(k, "kjit_bench::myexp_shaped", template=[("T", f32)],
                           grid=lambda t: (t.size, 1, 1), threadgroup=(16, 1, 1),
                           output_shapes=lambda t: [t.shape], output_dtypes=lambda t: [t.dtype])

    @torch.library.custom_op("kjit_bench::myexp_recipe", mutates_args=())
    def recipe(t: torch.Tensor) -> torch.Tensor:
        result = torch.empty_like(t)
        bound(t, result)
        return result

    @recipe.register_fake
    def _(t: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(t)

    assert torch.allclose(op(x), torch.exp(x), rtol=1e-6)
    assert torch.allclose(op.overload(x), torch.exp(x), rtol=1e-6)
    assert torch.allclose(shaped(x), torch.exp(x), rtol=1e-6)
    assert torch.allclose(recipe(x), torch.exp(x), rtol=1e-6)
    (y,) = kjit_new_output()
    torch.cuda.synchronize()
    assert torch.allclose(y, torch.exp(x), rtol=1e-6)
    out.fill_(float("nan"))
    (yb,) = kjit_bound_new_output()
    kjit_bound_outputs()
    torch.cuda.synchronize()
    assert torch.allclose(yb, torch.exp(x), rtol=1e-6) and torch.allclose(out, yb)
    # Every per-call case, timed in turns; a peer that cannot run here is reported, not fatal.
    cases: list[tuple[str, Callable[[], object], int]] = [
        ("kjit, torch in/out, new output", kjit_new_output, 20000),
        ("kjit, torch in/out, outputs=", kjit_outputs, 20000),
        ("kjit bound, torch in/out, new output", kjit_bound_new_output, 20000),
        ("kjit bound, torch in/out, outputs", kjit_bound_outputs, 20000),
        ("kjit.torch.op, eager (new output)", lambda: op(x), 20000),
        ("kjit.torch.op with shape functions, eager", lambda: shaped(x), 20000),
        ("kjit.torch.op through torch's dispatcher", lambda: op.overload(x), 20000),
        ("custom_op recipe around the bound call", lambda: recipe(x), 20000),
        ("Python floor: a C function that launches, no arguments", python_floor_bare, 20000),
        ("Python floor: the same, kjit's call's arguments", python_floor_call_form, 20000),
        ("Python floor: two torch tensors read, torch's stream", python_floor_torch, 20000),
        ("torch.exp (new output)", lambda: torch.exp(x), 20000),
        ("torch.exp(out=)", lambda: torch.exp(x, out=out), 20000),
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
        # kjit as a CuPy program calls it: CuPy arrays in and out, on CuPy's current stream.
        cases += [
            ("kjit, CuPy in/out, new output",
             lambda: k(inputs=[cx], template=[("T", f32)], grid=(16, 1, 1),
                       threadgroup=(16, 1, 1), output_shapes=[(16,)], output_dtypes=[f32]),
             20000),
            ("kjit, CuPy in/out, outputs=",
             lambda: k(inputs=[cx], template=[("T", f32)], grid=(16, 1, 1),
                       threadgroup=(16, 1, 1), output_shapes=[(16,)], output_dtypes=[f32],
                       outputs=[cout]), 20000)]
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
    # The floor, kjit's C++ loop and the Python cases take turns, round by round, so that the
    # machine's slow spells (they move every figure by up to 30% within minutes) fall on all of
    # them alike; each figure is its best round.
    floors, cpps, times = [], [], [float("inf")] * len(cases)
    for round_index in range(5):
        floors.append(run_json([floor_exe, "1"]))
        if cpp_exe:
            cpps.append(run_json([cpp_exe, MYEXP, "1"]))
        this_round = per_call_us([(fn, calls) for _, fn, calls in cases],
                                 warmup=200 if round_index == 0 else 20)
        times = [min(t, u) for t, u in zip(times, this_round)]
    floor = best_of_runs(floors)
    cpp = best_of_runs(cpps) if cpps else None
    rows.append(("bare cuLaunchKernel (C++)", f"{floor['floor_us']:.2f} us", "1.00 (floor)"))
    rows.append(("  + cuMemAllocAsync/FreeAsync", f"{floor['floor_alloc_us']:.2f} us",
                 f"{floor['floor_alloc_us'] / floor['floor_us']:.2f}"))
    if cpp:
        rows.append(("kjit C++ API, new output", f"{cpp['alloc_us']:.2f} us",
                     f"{cpp['alloc_us'] / floor['floor_us']:.2f}"))
        rows.append(("kjit C++ API, outputs=", f"{cpp['outputs_us']:.2f} us",
                     f"{cpp['outputs_us'] / floor['floor_us']:.2f}"))
    for (what, _, _), t in zip(cases, times):
        ratio = f"{t / floor['floor_us']:.2f}"
        if what.endswith("new output") and what.startswith("kjit"):
            ratio += f" (vs alloc floor {t / floor['floor_alloc_us']:.2f})"
        rows.append((what, f"{t:.2f} us", ratio))
    rows += peers_missing
    # The host's part alone (short bursts, no wait): where the time goes when the GPU keeps up.
    host = {"bare cuLaunchKernel (C++)": floor["floor_host_us"]}
    if cpp:
        host["kjit C++ API, outputs="] = cpp["outputs_host_us"]
        host["kjit C++ API, new output"] = cpp["alloc_host_us"]
    host_timed = [
        ("Python floor, no arguments", python_floor_bare),
        ("Python floor, kjit's call's arguments", python_floor_call_form),
        ("Python floor, two torch tensors read, torch's stream", python_floor_torch),
        ("kjit, torch in/out, outputs=", kjit_outputs),
        ("kjit, torch in/out, new output", kjit_new_output),
        ("kjit bound, torch in/out, outputs", kjit_bound_outputs),
        ("kjit bound, torch in/out, new output", kjit_bound_new_output),
        ("kjit.torch.op, eager (new output)", lambda: op(x)),
    ]
    # Where the Python call's host time goes: the same call with the stream given as a handle
    # (no query of torch's current stream), then also with kjit.Arrays over the same memory (no
    # torch tensors read or returned).
    handle = side.cuda_stream
    kx, kout = kjit.array(x), kjit.array(out)

    def kjit_outputs_on(inputs, outputs):
        return k(inputs=inputs, template=[("T", f32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                 output_shapes=[(16,)], output_dtypes=[f32], outputs=outputs, stream=handle)

    host_timed += [
        ("kjit, torch in/out, outputs=, stream given", lambda: kjit_outputs_on([x], [out])),
        ("kjit, kjit.Array in/out, outputs=, stream given", lambda: kjit_outputs_on([kx], [kout])),
    ]
    for what, fn in host_timed:
        host[what] = host_per_call(fn, torch.cuda.synchronize) * 1e6
    for what, t in host.items():
        rows.append((f"host part: {what}", f"{t:.2f} us", f"{t / floor['floor_host_us']:.2f}"))
    form = host_per_call(call_form, torch.cuda.synchronize) * 1e6
    rows.append(("the call's own Python (into dict())", f"{form:.2f} us",
                 f"{form / floor['floor_host_us']:.2f} of the floor"))
    # The same two calls where torch tensors go through DLPack (kjit._torch turned off).
    dlpack = child_report(DLPACK_CHILD, [MYEXP, HERE], dict(os.environ, KJIT_TORCH_BRIDGE="0"))
    for what in ("new output", "outputs="):
        t = dlpack[what]
        rows.append((f"kjit, torch via DLPack, {what}", f"{t:.2f} us",
                     f"{t / floor['floor_us']:.2f} (separate process)"))

    rows += reduce_overhead_rows()

    # Bandwidth on 2^28 float32.
    n = 1 << 28
    big = torch.randn(n, device=dev)
    bout = torch.empty_like(big)
    bkw = dict(inputs=[big], template=[("T", f32)], grid=(n, 1, 1),
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
    cold, cold_loading, warm, cupy_cold, cupy_warm = [], [], [], [], []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as c:
            env = dict(os.environ, KJIT_CACHE_DIR=d, CUPY_CACHE_DIR=c)
            with tempfile.TemporaryDirectory() as first:
                r = child_report(KJIT_CHILD, [MYEXP, "lazy"], dict(env, KJIT_CACHE_DIR=first))
                assert r["info"]["compiles"] == 1
                cold_loading.append(r["build"])
            r = child_report(KJIT_CHILD, [MYEXP, "nvrtc loaded"], env)
            assert r["info"]["compiles"] == 1
            cold.append(r["build"])
            r = child_report(KJIT_CHILD, [MYEXP, "lazy"], dict(env, KJIT_ASSERT_NO_COMPILE="1"))
            assert r["info"]["compiles"] == 0 and r["info"]["disk_hits"] == 1
            warm.append(r["build"])
            try:
                cupy_cold.append(child_report(CUPY_CHILD, [RAW], env)["build"])
                cupy_warm.append(child_report(CUPY_CHILD, [RAW], env)["build"])
            except Exception:
                pass
    cupy_compile = f"CuPy {min(cupy_cold) * 1e3:.1f} ms" if cupy_cold else "CuPy n/a"
    rows.append(("cold compile of myexp (NVRTC loaded)", f"{min(cold) * 1e3:.1f} ms",
                 cupy_compile))
    rows.append(("  the same, kjit loading NVRTC", f"{min(cold_loading) * 1e3:.1f} ms",
                 cupy_compile + " (its import loads NVRTC)"))
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
