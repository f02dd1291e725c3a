"""Per-call cost of two kjit builds side by side, on a machine with an NVIDIA GPU.

Fresh processes of each build take turns, round after round. Each times, on one non-blocking
torch stream with 16-element torch tensors, the Python floor that reads two tensors and launches
(bench/python_floor.cu, built against that build's tree), the keyword call and the bound call,
each with its output given and making it (best of 5 loops of 20,000 calls, the cases in turns).
The table gives, for each build, the median over the rounds of each call's time over the floor
measured in the same process (machine-wide slow spells fall on both sides of a ratio), and over
the bare C++ cuLaunchKernel loop (bench/launch_floor.cu) run just before that process.

Usage: python bench/calls_ab.py --builds OLD_TREE NEW_TREE [--rounds 6]
(each tree built with `make build`; bench/gpu.py measures one build against the peers).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import importlib.util, json, sys
import torch
import kjit
sys.path.insert(0, sys.argv[3])
from timing import per_call_each
spec = importlib.util.spec_from_file_location("python_floor", sys.argv[2])
floor = importlib.util.module_from_spec(spec)
spec.loader.exec_module(floor)
side = torch.cuda.Stream()
torch.cuda.set_stream(side)
x = torch.randn(16, device="cuda")
out = torch.empty_like(x)
f32 = torch.float32
k = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
bound = k.bind(template=[("T", f32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
               output_shapes=[(16,)], output_dtypes=[f32])
floor.setup(x.data_ptr(), out.data_ptr(), side.cuda_stream)
cases = {
    "Python floor: two torch tensors read": lambda: floor.launch_torch(x, out),
    "keyword, outputs=": lambda: k(inputs=[x], template=[("T", f32)], grid=(16, 1, 1),
                                   threadgroup=(16, 1, 1), output_shapes=[(16,)],
                                   output_dtypes=[f32], outputs=[out]),
    "keyword, new output": lambda: k(inputs=[x], template=[("T", f32)], grid=(16, 1, 1),
                                     threadgroup=(16, 1, 1), output_shapes=[(16,)],
                                     output_dtypes=[f32]),
    "bound, outputs": lambda: bound(x, out),
    "bound, new output": lambda: bound(x),
}
(y,) = cases["keyword, new output"]()
torch.cuda.synchronize()
assert torch.allclose(y, torch.exp(x), rtol=1e-6)
times = per_call_each([(fn, 20000) for fn in cases.values()], repeats=5, warmup=200,
                      sync=torch.cuda.synchronize)
print(json.dumps({name: t * 1e6 for name, t in zip(cases, times)}))
"""


def nvcc(source: str, output: str, *flags: str) -> str:
    """bench/|source| built for sm_90 with |flags| into a fresh directory's |output|."""
    path = os.path.join(tempfile.mkdtemp(), output)
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", *flags, "-o", path, os.path.join(HERE, source),
                    "-lcuda"], check=True)
    return path


def build_floor(tree: str) -> str:
    """bench/python_floor.cu built against |tree|'s headers; returns the module's path."""
    return nvcc("python_floor.cu", "python_floor" + sysconfig.get_config_var("EXT_SUFFIX"),
                "-std=c++20", "-shared", "-Xcompiler", "-fPIC", "-I",
                sysconfig.get_paths()["include"], "-I", os.path.join(tree, "include"), "-I",
                os.path.join(tree, "python", "src"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", nargs=2, required=True, metavar="TREE")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    from seed_kernels import MYEXP

    floors = {tree: build_floor(tree) for tree in args.builds}
    launch_floor = nvcc("launch_floor.cu", "launch_floor")
    ratios: dict[str, dict[str, list[float]]] = {tree: {} for tree in args.builds}
    cpp_ratios: dict[str, dict[str, list[float]]] = {tree: {} for tree in args.builds}
    floor_us: dict[str, list[float]] = {tree: [] for tree in args.builds}
    cpp_floor_us: dict[str, list[float]] = {tree: [] for tree in args.builds}
    for r in range(args.rounds):
        for tree in args.builds:
            cpp_floor = json.loads(subprocess.run([launch_floor, "5"], check=True,
                                                  capture_output=True, text=True).stdout)
            cpp_floor_us[tree].append(cpp_floor["floor_us"])
            env = dict(os.environ, PYTHONPATH=os.path.join(tree, "build", "python"))
            child = subprocess.run([sys.executable, "-c", CHILD, MYEXP, floors[tree], HERE],
                                   env=env, capture_output=True, text=True)
            if child.returncode != 0:
                sys.exit(f"round {r + 1} {tree} failed:\n{child.stderr}")
            result = json.loads(child.stdout)
            floor = result.pop("Python floor: two torch tensors read")
            floor_us[tree].append(floor)
            for name, t in result.items():
                ratios[tree].setdefault(name, []).append(t / floor)
                cpp_ratios[tree].setdefault(name, []).append(t / cpp_floor["floor_us"])
            print(f"round {r + 1} {tree}: floor {floor:.2f} us, " +
                  ", ".join(f"{n} {t / floor:.3f}" for n, t in result.items()), flush=True)
    names = list(ratios[args.builds[0]])
    width = max(len(n) for n in names) + 16
    for title, table, floors_us in (("the Python floor", ratios, floor_us),
                                    ("the C++ floor", cpp_ratios, cpp_floor_us)):
        heading = f"over {title}, median of {args.rounds}"
        print(f"\n{heading:{width}}" + "".join(f" | {t:>12}" for t in args.builds))
        print(f"{title + ' (us)':{width}}" +
              "".join(f" | {statistics.median(floors_us[t]):12.2f}" for t in args.builds))
        for name in names:
            print(f"{name:{width}}" +
                  "".join(f" | {statistics.median(table[t][name]):12.3f}" for t in args.builds))

if __name__ == "__main__":
    main()
