"""Memory of a process that makes many distinct CPU kernels, each dropped after its call (bodies
built with f-strings, as several real projects do): resident memory, memory maps and programs
kept loaded every tenth of the way, with the in-memory cache at its default bound and with no
bound (KJIT_MEMORY_CACHE_MAX_ENTRIES and _MAX_BYTES past any need), side by side in one run.

First the kernels are compiled into a fresh disk cache by one process per core; then each
configuration runs in a fresh process that makes every kernel, calls it once (a disk-cache hit)
and checks its result against NumPy.

Usage: PYTHONPATH=build/python python bench/many_kernels.py [--kernels 10000] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# A kernel of its own for each i, and its check.
KERNELS = r"""
import numpy as np
import kjit


def make(i):
    return kjit.metal_kernel(f"many_{i}", ["x"], ["y"],
                             f"uint i = thread_position_in_grid.x;\ny[i] = x[i] * {i % 997} + {i};\n")
"""

BUILD = KERNELS + r"""
import sys
first, step, count = map(int, sys.argv[1:4])
for i in range(first, count, step):
    make(i).build(inputs=[(kjit.float32, 1)], output_dtypes=[kjit.float32])
"""

RUN = KERNELS + r"""
import json, sys, time
count, samples = int(sys.argv[1]), int(sys.argv[2])


def resident_mib():
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def maps():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


x = np.arange(256, dtype=np.float32)
rows, wrong = [], 0
start = time.perf_counter()
for i in range(count):
    (y,) = make(i)(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                   grid=(x.size, 1, 1), threadgroup=(64, 1, 1), device="cpu")
    wrong += not np.array_equal(y, x * np.float32(i % 997) + np.float32(i))
    if (i + 1) % max(1, count // samples) == 0:
        info = kjit.cache_info()
        rows.append({"kernels": i + 1, "resident_mib": resident_mib(), "maps": maps(),
                     "loaded": info["memory_entries"], "evictions": info["memory_evictions"],
                     "seconds": time.perf_counter() - start})
info = kjit.cache_info()
print(json.dumps({"rows": rows, "wrong": wrong, "compiles": info["compiles"],
                  "disk_hits": info["disk_hits"], "limit": info["memory_limit_entries"]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernels", type=int, default=10000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, KJIT_CACHE_DIR=cache, KJIT_CACHE_MAX_BYTES=str(16 << 30))
        start = time.perf_counter()
        builders = [subprocess.Popen([sys.executable, "-c", BUILD, str(j), str(args.jobs),
                                      str(args.kernels)], env=env) for j in range(args.jobs)]
        if any(b.wait() != 0 for b in builders):
            sys.exit("a build process failed")
        print(f"compiled {args.kernels} kernels with {args.jobs} processes in "
              f"{time.perf_counter() - start:.0f} s")
        runs = {}
        for name, limits in (("default bound", {}),
                             ("no bound", {"KJIT_MEMORY_CACHE_MAX_ENTRIES": str(10**9),
                                           "KJIT_MEMORY_CACHE_MAX_BYTES": str(1 << 50)})):
            done = subprocess.run([sys.executable, "-c", RUN, str(args.kernels), "10"],
                                  env=dict(env, **limits), check=True, capture_output=True,
                                  text=True)
            runs[name] = json.loads(done.stdout)
            if runs[name]["compiles"] or runs[name]["wrong"]:
                sys.exit(f"{name}: a kernel was compiled again or computed a wrong result")
    bounded, unbounded = runs["default bound"], runs["no bound"]
    for name, run in runs.items():
        print(f"{name}: memory_limit_entries {run['limit']}, {run['compiles']} compiles, "
              f"{run['disk_hits']} disk hits, {run['wrong']} wrong results")
    print()
    print("kernels | default bound: resident MiB, maps, loaded, evictions | "
          "no bound: resident MiB, maps, loaded | resident ratio (no bound / bound)")
    print("---|---|---|---")
    for b, u in zip(bounded["rows"], unbounded["rows"]):
        print(f"{b['kernels']} | {b['resident_mib']:.0f}, {b['maps']}, {b['loaded']}, "
              f"{b['evictions']} | {u['resident_mib']:.0f}, {u['maps']}, {u['loaded']} | "
              f"{u['resident_mib'] / b['resident_mib']:.2f}x")
    last_b, last_u = bounded["rows"][-1], unbounded["rows"][-1]
    print(f"\nper kernel: {last_b['seconds'] / last_b['kernels'] * 1e3:.2f} ms (bound), "
          f"{last_u['seconds'] / last_u['kernels'] * 1e3:.2f} ms (no bound), make, load, call")


if __name__ == "__main__":
    main()
