"""The in-memory program cache's limits (KJIT_MEMORY_CACHE_MAX_ENTRIES and _MAX_BYTES).

Each test runs a fresh child process that creates many distinct kernels (bodies built with
f-strings), each dropped after its call, and reports what stayed loaded: kjit.cache_info(), and
the memory maps of the kernels' shared objects, which the CPU backend loads from files in
TMPDIR (a private one here, so that the child's own maps tell them apart). Every kernel's output
is checked against NumPy in the child. On a GPU the same runs check the modules kept loaded, and
that a module is unloaded only once the launches queued on it have run.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import needs_gpu

CHILD = r"""
import json, os, sys
import numpy as np
import kjit

LOAD_DIR = os.environ["TMPDIR"]
KERNELS = int(sys.argv[1])
DEVICE = sys.argv[3]


def program_maps():
    with open("/proc/self/maps") as f:
        return [line for line in f if LOAD_DIR in line]


def program_files():
    return sorted({line.split(None, 5)[5].strip() for line in program_maps()})


x = np.random.default_rng(int(sys.argv[2])).integers(-1000, 1000, 256).astype(np.float32)


def make(i):
    return kjit.metal_kernel(f"many_{i}", ["x"], ["y"],
                             f"uint i = thread_position_in_grid.x;\ny[i] = x[i] * {i} + 1;\n")


def right(outputs, i):
    (y,) = outputs
    return bool(np.array_equal(np.asarray(y), x * np.float32(i) + 1))  # exact: small integers


settings = dict(output_shapes=[x.shape], output_dtypes=[np.float32], grid=(x.size, 1, 1),
                threadgroup=(64, 1, 1), device=DEVICE)
report = {"ok": []}

# One kernel the program holds, one whose kernel is gone but whose bound call (and its recorded
# launch) the program holds.
held = make(0)
report["ok"].append(right(held(inputs=[x], **settings), 0))
held_files = program_files()
report["maps_of_one"] = len(program_maps())
bound = make(1).bind(**settings)
report["ok"].append(right(bound(x), 1))
bound_files = sorted(set(program_files()) - set(held_files))

most_files, most_maps, most_entries = 0, 0, 0
for i in range(2, KERNELS):
    report["ok"].append(right(make(i)(inputs=[x], **settings), i))
    most_files = max(most_files, len(program_files()))
    most_maps = max(most_maps, len(program_maps()))
    most_entries = max(most_entries, kjit.cache_info()["memory_entries"])
report.update(most_files=most_files, most_maps=most_maps, most_entries=most_entries,
              churned=kjit.cache_info())

# Still loaded, and still right.
report["held_loaded"] = set(held_files) <= set(program_files())
report["bound_loaded"] = set(bound_files) <= set(program_files())
report["ok"].append(right(held(inputs=[x], **settings), 0))
report["ok"].append(right(bound(x), 1))

# A kernel whose program was unloaded is made again from the disk cache.
report["ok"].append(right(make(2)(inputs=[x], **settings), 2))
report["reloaded"] = kjit.cache_info()

# Once released, they are unloaded as new kernels come.
del held, bound
for i in range(KERNELS, KERNELS + 4):
    report["ok"].append(right(make(i)(inputs=[x], **settings), i))
left = set(program_files())
report["held_unloaded"] = not (set(held_files) & left)
report["bound_unloaded"] = not (set(bound_files) & left)
report["files_found"] = bool(held_files) and bool(bound_files)
print(json.dumps(report))
"""

OWN_VARS = ("KJIT_CACHE_DIR", "KJIT_CACHE", "KJIT_MEMORY_CACHE_MAX_ENTRIES",
            "KJIT_MEMORY_CACHE_MAX_BYTES", "KJIT_ASSERT_NO_COMPILE", "TMPDIR")
KERNELS = 12


def run_child(tmp_path, rng, device="cpu", **limits):
    env = {k: v for k, v in os.environ.items() if k not in OWN_VARS}
    env["KJIT_CACHE_DIR"] = str(tmp_path / "cache")
    env["TMPDIR"] = str(tmp_path / "load")
    (tmp_path / "load").mkdir()
    env.update({k: str(v) for k, v in limits.items()})
    seed = int(rng.integers(1 << 31))
    run = subprocess.run([sys.executable, "-c", CHILD, str(KERNELS), str(seed), device],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("limits, most_loaded", [
    ({"KJIT_MEMORY_CACHE_MAX_ENTRIES": 4}, 4),
    # Smaller than any program: only those in use stay (the held ones and the one running).
    ({"KJIT_MEMORY_CACHE_MAX_BYTES": 1}, 3),
], ids=["entries", "bytes"])
def test_many_kernels_keep_the_loaded_programs_bounded(tmp_path, rng, limits, most_loaded):
    report = run_child(tmp_path, rng, **limits)
    assert all(report["ok"]), report["ok"]
    assert len(report["ok"]) == KERNELS + 7
    assert report["files_found"]

    # Loaded programs (their shared objects' files, and the memory maps of those) stay bounded.
    assert report["most_files"] <= most_loaded, report
    assert report["most_entries"] <= most_loaded, report
    assert report["most_maps"] <= most_loaded * report["maps_of_one"], report
    info = report["churned"]
    assert info["memory_entries"] <= most_loaded
    assert 0 < info["memory_bytes"]
    assert info["memory_evictions"] >= KERNELS - most_loaded
    assert info["compiles"] == KERNELS and info["disk_hits"] == 0
    expected_limits = (int(limits.get("KJIT_MEMORY_CACHE_MAX_ENTRIES", 1024)),
                       int(limits.get("KJIT_MEMORY_CACHE_MAX_BYTES", 256 << 20)))
    assert (info["memory_limit_entries"], info["memory_limit_bytes"]) == expected_limits
    if "KJIT_MEMORY_CACHE_MAX_BYTES" not in limits:
        assert info["memory_bytes"] <= info["memory_limit_bytes"]

    # What the program held stayed loaded (and ran right) until it let go.
    assert report["held_loaded"] and report["bound_loaded"]
    assert report["held_unloaded"] and report["bound_unloaded"]

    # The evicted kernel came back from the disk cache, not the compiler.
    reloaded = report["reloaded"]
    assert reloaded["compiles"] == KERNELS and reloaded["disk_hits"] == 1


@needs_gpu
def test_many_gpu_kernels_keep_the_loaded_modules_bounded(tmp_path, rng):
    report = run_child(tmp_path, rng, "cuda", KJIT_MEMORY_CACHE_MAX_ENTRIES=4)
    assert all(report["ok"]), report["ok"]
    assert len(report["ok"]) == KERNELS + 7
    assert report["most_entries"] <= 4, report
    info = report["churned"]
    assert info["memory_entries"] <= 4
    assert info["memory_evictions"] >= KERNELS - 4
    assert info["compiles"] == KERNELS and info["disk_hits"] == 0
    assert report["reloaded"]["disk_hits"] == 1


# Run twice: the first run fills the disk cache, so that in the second the other kernel comes
# from it at once, and evicts the first kernel's module while its launch still waits.
QUEUED = r"""
import json, numpy as np, torch, kjit

x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
torch.cuda.synchronize()
torch.cuda._sleep(2_000_000_000)  # about a second: the kernel below waits behind this
k = kjit.metal_kernel("queued", ["x"], ["y"], "uint i = thread_position_in_grid.x; y[i] = x[i] + 1;")
(y,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[torch.float32],
         grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1))
del k  # nothing holds its module but the memory cache now
other = kjit.metal_kernel("other", ["x"], ["y"], "uint i = thread_position_in_grid.x; y[i] = x[i] * 2;")
(z,) = other(inputs=[x], output_shapes=[x.shape], output_dtypes=[torch.float32],
             grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1))
info = kjit.cache_info()
host = np.arange(1 << 20, dtype=np.float32)
print(json.dumps({"y": bool(np.array_equal(y.cpu().numpy(), host + 1)),
                  "z": bool(np.array_equal(z.cpu().numpy(), host * 2)),
                  "entries": info["memory_entries"], "evictions": info["memory_evictions"]}))
"""


@needs_gpu
def test_gpu_module_is_unloaded_only_after_its_queued_launches(tmp_path):
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k not in OWN_VARS}
    env.update(KJIT_CACHE_DIR=str(tmp_path / "cache"), KJIT_MEMORY_CACHE_MAX_ENTRIES="1")
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", QUEUED], env=env, capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        report = json.loads(run.stdout.strip().splitlines()[-1])
        assert report == {"y": True, "z": True, "entries": 1, "evictions": 1}, report


def test_default_limits_are_reported(tmp_path, rng):
    report = run_child(tmp_path, rng)
    assert all(report["ok"])
    info = report["churned"]
    assert (info["memory_limit_entries"], info["memory_limit_bytes"]) == (1024, 256 << 20)
    assert info["memory_evictions"] == 0
    assert info["memory_entries"] == KERNELS  # every one fits: none unloaded


@pytest.mark.parametrize("name, value", [("KJIT_MEMORY_CACHE_MAX_ENTRIES", "0"),
                                         ("KJIT_MEMORY_CACHE_MAX_ENTRIES", "many"),
                                         ("KJIT_MEMORY_CACHE_MAX_BYTES", "-5")])
def test_unusable_limit_is_named_in_a_warning(tmp_path, name, value):
    code = ("import warnings, json, kjit\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    info = kjit.cache_info()\n"
            "print(json.dumps({'info': info, 'warnings': [str(w.message) for w in caught]}))\n")
    env = {k: v for k, v in os.environ.items() if k not in OWN_VARS}
    env.update(KJIT_CACHE_DIR=str(tmp_path / "cache"), **{name: value})
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert (report["info"]["memory_limit_entries"], report["info"]["memory_limit_bytes"]) == (
        1024, 256 << 20)
    assert any(name in w and value in w for w in report["warnings"]), report["warnings"]
