"""Per-call cost of two kjit builds side by side on the CPU.

Fresh processes of each build take turns, round after round. Each times, with 16-element NumPy
arrays, a tiny numpy.exp (the floor: the same interpreter's cost of one small NumPy call), the
keyword call with its output given and making it, and the bound call both ways (best of 5 loops
of 20,000 calls, the cases in turns). The table gives, for each build, the median over the
rounds of each call's time over the floor measured in the same process, so that machine-wide
slow spells fall on both sides of a ratio, the new build's median against the old one's, and
the medians of the times themselves.

Usage: python bench/cpu_calls_ab.py --builds OLD_TREE NEW_TREE [--rounds 10]
(each tree built with `make build`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, sys
import numpy as np
import kjit
sys.path.insert(0, sys.argv[2])
from timing import per_call_each
x = np.random.default_rng().standard_normal(16, dtype=np.float32)
out = np.empty_like(x)
f32 = np.float32
k = kjit.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=sys.argv[1])
bound = k.bind(template=[("T", f32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
               output_shapes=[(16,)], output_dtypes=[f32])
settings = dict(template=[("T", f32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                output_shapes=[(16,)], output_dtypes=[f32])
cases = {
    "floor: numpy.exp of 16 f32": lambda: np.exp(x),
    "keyword, outputs=": lambda: k(inputs=[x], outputs=[out], **settings),
    "keyword, new output": lambda: k(inputs=[x], **settings),
    "bound, outputs": lambda: bound(x, out),
    "bound, new output": lambda: bound(x),
}
(y,) = cases["keyword, new output"]()
assert np.allclose(y, np.exp(x.astype(np.float64)), rtol=1e-6)
times = per_call_each([(fn, 20000) for fn in cases.values()], repeats=5, warmup=200)
print(json.dumps({name: t * 1e6 for name, t in zip(cases, times)}))
"""


def run_child(tree: str) -> dict[str, float]:
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    from seed_kernels import MYEXP

    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(tree), "build", "python"))
    done = subprocess.run([sys.executable, "-c", CHILD, MYEXP, HERE], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the child of {tree} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", nargs=2, required=True, metavar="TREE")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    # By the builds' places in --builds: the same tree may be given twice (to see the noise).
    over_floor: list[dict[str, list[float]]] = [{}, {}]
    absolute: list[dict[str, list[float]]] = [{}, {}]
    floors: list[list[float]] = [[], []]
    for _ in range(args.rounds):
        for side, tree in enumerate(args.builds):
            times = run_child(tree)
            floor = times.pop("floor: numpy.exp of 16 f32")
            floors[side].append(floor)
            for case, t in times.items():
                over_floor[side].setdefault(case, []).append(t / floor)
                absolute[side].setdefault(case, []).append(t)
    old, new = args.builds
    print(f"median over {args.rounds} rounds of each call's time over numpy.exp(16 f32) "
          f"in the same process (old: {old}, new: {new})")
    print(f"{'call':<22} | {'old':>6} | {'new':>6} | new/old | old µs | new µs")
    for case in over_floor[0]:
        a = statistics.median(over_floor[0][case])
        b = statistics.median(over_floor[1][case])
        ta = statistics.median(absolute[0][case])
        tb = statistics.median(absolute[1][case])
        print(f"{case:<22} | {a:6.3f} | {b:6.3f} | {b / a:7.3f} | {ta:6.3f} | {tb:6.3f}")
    print(f"floor (µs): old {statistics.median(floors[0]):.3f}, "
          f"new {statistics.median(floors[1]):.3f}")

if __name__ == "__main__":
    main()
