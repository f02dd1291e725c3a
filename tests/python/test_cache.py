"""The compile caches: the in-memory cache of one process and the on-disk cache shared by
processes.

Every test runs kjit in fresh child processes (so that each starts with empty in-memory caches)
with a private KJIT_CACHE_DIR. A child reads a list of actions as JSON on stdin, runs them and
prints the kernels' outputs, kjit.cache_info() and the warnings it saw as JSON; the test checks
every output against NumPy on fresh random data, so that a wrongly loaded entry would show.
"""

import json
import os
import shutil
import stat
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kjit

CHILD = r"""
import json, os, sys, threading, warnings

_recorder = warnings.catch_warnings(record=True)
caught = _recorder.__enter__()
warnings.simplefilter("always")

import numpy as np
import kjit


def template_of(action):
    out = []
    for name, value in action.get("template", []):
        out.append((name, getattr(kjit, value) if isinstance(value, str) else value))
    return out or None


def run_kernel(action):
    options = {"math_mode": action["math_mode"]} if action.get("math_mode") else None
    # A new Kernel object every time: each call goes to the caches, not to a kernel's own plans.
    kernel = kjit.metal_kernel(name=action["name"], input_names=["x"], output_names=["y"],
                               source=action["source"], compile_options=options)
    x = np.asarray(action["x"], dtype=action["dtype"])
    y, = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                grid=(x.size, 1, 1), threadgroup=(32, 1, 1), template=template_of(action),
                device="cpu")
    return np.asarray(y).tolist()


def attempt(action):
    try:
        return {"ok": True, "y": run_kernel(action)}
    except Exception as e:  # reported to the test, which decides
        return {"ok": False, "type": type(e).__name__, "message": str(e),
                "runtime_error": isinstance(e, RuntimeError),
                "compile_error": isinstance(e, kjit.CompileError)}


def run_in_threads(action):
    barrier = threading.Barrier(action["threads"])
    results = [None] * action["threads"]

    def work(i):
        barrier.wait()
        results[i] = attempt(action)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(action["threads"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"ok": all(r["ok"] for r in results), "all": results}


print("READY", flush=True)
actions = json.loads(sys.stdin.readline())
results = []
for action in actions:
    op = action["op"]
    if op == "run":
        results.append(attempt(action))
    elif op == "threads":
        results.append(run_in_threads(action))
    elif op == "clear":
        kjit.clear_cache()
        results.append({"ok": True})
    elif op == "warnings_are_errors":
        warnings.simplefilter("error", RuntimeWarning)
        results.append({"ok": True})
    elif op == "info":
        results.append({"ok": True, "info": kjit.cache_info()})
    elif op == "chdir":
        os.chdir(action["path"])
        results.append({"ok": True})
    else:
        raise ValueError(op)
report = {
    "results": results,
    "info": kjit.cache_info(),
    "warnings": [{"category": w.category.__name__, "message": str(w.message)} for w in caught],
}
print(json.dumps(report), flush=True)
"""

# Knobs a test sets explicitly; inherited values would change what the tests mean.
OWN_VARS = ("KJIT_CACHE_DIR", "KJIT_CACHE", "KJIT_CACHE_MAX_BYTES", "KJIT_ASSERT_NO_COMPILE",
            "KJIT_KEEP_BUILD")

HEADER = struct.Struct("<8sQQQ")  # magic, key size, payload size, payload checksum
MAGIC = b"KJITCAC2"

LINEAR = "uint i = thread_position_in_grid.x;\ny[i] = x[i] * {a} + {b};\n"
# One body for the key tests: N comes from the template; fast math defines __FAST_MATH__ (as
# Metal's fast math does), which makes the fast entry's output tell itself apart.
SCALED = """
uint i = thread_position_in_grid.x;
#ifdef __FAST_MATH__
y[i] = x[i] * N + 1;
#else
y[i] = x[i] * N;
#endif
"""
BROKEN = "uint i = thread_position_in_grid.x;\ny[i] = x[i] * not_declared_anywhere;\n"


# ---------------------------------------------------------------------------------------------
# Running children, checking outputs, reading entries


def child_env(cache_dir, **extra):
    env = {k: v for k, v in os.environ.items() if k not in OWN_VARS}
    env["KJIT_CACHE_DIR"] = str(cache_dir)
    # The children run in other directories: kjit is found by its absolute path.
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(kjit.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_dir, env.get("PYTHONPATH")]))
    for k, v in extra.items():
        env[k] = str(v)
    return env


def start_child(cache_dir, cwd=None, **extra):
    """A fresh process (in |cwd|, if given); it prints READY once kjit is imported, then reads
    its actions."""
    return subprocess.Popen([sys.executable, "-c", CHILD], env=child_env(cache_dir, **extra),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd)


def finish_child(proc, actions=None, timeout=120):
    """Sends |actions| (unless sent already) and returns the child's report."""
    try:
        out, err = proc.communicate(None if actions is None else json.dumps(actions) + "\n",
                                    timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{out}\n{err}"
    lines = out.strip().splitlines()
    assert lines and lines[-1].startswith("{"), out
    return json.loads(lines[-1])


def run_child(cache_dir, actions, cwd=None, **extra):
    """Runs |actions| in a fresh process; returns its report."""
    return finish_child(start_child(cache_dir, cwd, **extra), actions)


def run_action(name, source, rng, *, dtype="float32", template=None, math_mode=None, n=100):
    if np.issubdtype(np.dtype(dtype), np.integer):
        x = rng.integers(-1000, 1000, size=n).astype(dtype)
    else:
        x = rng.standard_normal(n).astype(dtype) * 10
    return {"op": "run", "name": name, "source": source, "dtype": dtype, "x": x.tolist(),
            "template": template or [], "math_mode": math_mode}


def linear(name, a, b, rng, **kw):
    """A kernel y = x * a + b (a and b small ints), with its NumPy reference."""
    action = run_action(name, LINEAR.format(a=a, b=b), rng, **kw)
    return action, (lambda x: x * a + b)


def check(result, action, reference):
    assert result["ok"], f"kernel '{action['name']}' failed: {result}"
    dtype = np.dtype(action["dtype"])
    x = np.asarray(action["x"], dtype=dtype)
    y = np.asarray(result["y"])
    expected = np.asarray(reference(x)).astype(dtype)
    assert y.shape == expected.shape
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(y.astype(dtype), expected)
    else:
        tol = 1e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(y, expected, rtol=tol, atol=tol * 10)


def assert_refused(result):
    """The call needed a compile, which KJIT_ASSERT_NO_COMPILE=1 turns into an error."""
    assert not result["ok"], "the kernel ran: an entry that must be refused was used"
    assert result["runtime_error"] and not result["compile_error"], result
    assert "KJIT_ASSERT_NO_COMPILE" in result["message"], result


def entries(cache_dir):
    return sorted(p for p in Path(cache_dir).iterdir() if p.name.endswith(".kjit"))


def temporaries(cache_dir):
    return sorted(p.name for p in Path(cache_dir).iterdir() if not p.name.endswith(".kjit"))


def only_entry(cache_dir):
    found = entries(cache_dir)
    assert len(found) == 1, found
    return found[0]


def hash64(data):
    """cache/hash.h's hash, written out from its description so that assert_valid_entry checks
    the files' names and checksums against a second implementation (tests/cpp/hash_test.cpp
    tests the hash itself): FNV-1a's step over 8-byte little-endian words, each word's sum
    folded high half into low before the multiply, then FNV-1a over the last bytes, then
    MurmurHash3's final mix."""
    mask = 0xFFFFFFFFFFFFFFFF
    h = 0xCBF29CE484222325
    whole = len(data) // 8 * 8
    for (word,) in struct.iter_unpack("<Q", data[:whole]):
        x = h ^ word
        h = ((x ^ (x >> 32)) * 0x100000001B3) & mask
    for c in data[whole:]:
        h = ((h ^ c) * 0x100000001B3) & mask
    for multiplier in (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53):
        h = ((h ^ (h >> 33)) * multiplier) & mask
    return h ^ (h >> 33)


def split_entry(data):
    magic, key_size, payload_size, checksum = HEADER.unpack_from(data)
    key = data[HEADER.size:HEADER.size + key_size]
    payload = data[HEADER.size + key_size:]
    return magic, key_size, payload_size, checksum, key, payload


def assert_valid_entry(path):
    """The entry is whole and consistent: header, name, key and checksum all agree."""
    data = path.read_bytes()
    assert len(data) > HEADER.size
    magic, key_size, payload_size, checksum, key, payload = split_entry(data)
    assert magic == MAGIC
    assert HEADER.size + key_size + payload_size == len(data)
    assert path.name == f"{hash64(key):016x}.kjit"
    assert hash64(payload) == checksum
    assert payload.startswith(b"\x7fELF")
    st = path.lstat()
    assert stat.S_ISREG(st.st_mode)
    assert st.st_uid == os.geteuid()
    assert st.st_mode & 0o077 == 0, oct(st.st_mode)  # private to the user


def compiler_wrapper(tmp_path):
    """A compiler that logs each run and then runs the real one; returns (path, log path)."""
    real = os.environ.get("KJIT_CXX") or os.environ.get("CXX") or "c++"
    real_path = shutil.which(real)
    if real_path is None:
        pytest.skip(f"no host compiler '{real}' to wrap")
    log = tmp_path / "compiler-runs.log"
    log.write_text("")
    wrapper = tmp_path / "bin" / "logging-c++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho run >> "{log}"\nexec "{real_path}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def compiler_runs(log):
    return len(log.read_text().splitlines())


# A cooperative kernel: its coroutines need the C++ runtime (operator new and delete).
REVERSE_IN_GROUPS = r'''
import json, sys, numpy as np, kjit
k = kjit.metal_kernel("reverse4", ["inp"], ["out"], """
    threadgroup float t[4];
    t[thread_index_in_threadgroup] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[thread_position_in_grid.x] = t[3 - thread_index_in_threadgroup];
""")
x = np.random.default_rng().standard_normal(8).astype(np.float32)
out, = k(inputs=[x], output_shapes=[(8,)], output_dtypes=[np.float32], grid=(8, 1, 1),
         threadgroup=(4, 1, 1), device="cpu")
print(json.dumps({"ok": bool(np.array_equal(out, x.reshape(2, 4)[:, ::-1].reshape(8)))}))
'''


def run_reverse_in_groups(tmp_path, cxx) -> bool:
    env = dict(os.environ, KJIT_CACHE_DIR=str(tmp_path / "cache"), KJIT_CXX=str(cxx))
    run = subprocess.run([sys.executable, "-c", REVERSE_IN_GROUPS], env=env, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["ok"]


def test_the_host_compiler_runs_under_the_name_it_was_found_by(tmp_path):
    # Drivers such as clang++ (a link to clang) act on the name they are run by.
    real = shutil.which(os.environ.get("KJIT_CXX") or os.environ.get("CXX") or "c++")
    if real is None:
        pytest.skip("no host compiler")
    log = tmp_path / "names.log"
    script = tmp_path / "bin" / "some-compiler"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\necho "$0" >> "{log}"\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    link = tmp_path / "bin" / "named-c++"
    link.symlink_to(script)
    assert run_reverse_in_groups(tmp_path, link)
    names = log.read_text().split()
    assert names and all(n == str(link) for n in names), names


@pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ is not installed")
def test_clang_as_host_compiler_runs_cooperative_kernels(tmp_path):
    assert run_reverse_in_groups(tmp_path, shutil.which("clang++"))


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


# ---------------------------------------------------------------------------------------------
# A second process uses the disk cache


def test_second_process_loads_from_disk_without_running_the_compiler(tmp_path, cache_dir, rng):
    wrapper, log = compiler_wrapper(tmp_path)
    first, ref = linear("reuse", 3, 1, rng)
    report = run_child(cache_dir, [first], KJIT_CXX=wrapper)
    check(report["results"][0], first, ref)
    info = report["info"]
    assert (info["compiles"], info["disk_hits"]) == (1, 0)
    assert info["disk_enabled"] and info["directory"] == str(cache_dir)
    assert info["disk_entries"] == 1 and info["memory_entries"] == 1
    assert compiler_runs(log) == 1
    entry = only_entry(cache_dir)
    assert_valid_entry(entry)
    assert info["disk_bytes"] == entry.stat().st_size
    assert temporaries(cache_dir) == []

    # Fresh data; the second call of the same kernel in that process comes from memory.
    again = [linear("reuse", 3, 1, rng)[0] for _ in range(2)]
    report = run_child(cache_dir, again, KJIT_CXX=wrapper, KJIT_ASSERT_NO_COMPILE=1)
    for result, action in zip(report["results"], again):
        check(result, action, ref)
    info = report["info"]
    assert (info["compiles"], info["disk_hits"]) == (0, 1)
    assert info["memory_entries"] == 1
    assert compiler_runs(log) == 1  # the compiler never started
    assert entries(cache_dir) == [entry]


# ---------------------------------------------------------------------------------------------
# Damaged entries


def flip_payload_byte(path):
    data = bytearray(path.read_bytes())
    _, key_size, payload_size, *_ = split_entry(bytes(data))
    data[HEADER.size + key_size + payload_size // 2] ^= 0x5A
    path.write_bytes(bytes(data))


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - len(data) // 3])


def edit_key(path):
    """The header then claims another key (same size, one byte changed)."""
    data = bytearray(path.read_bytes())
    _, key_size, *_ = split_entry(bytes(data))
    data[HEADER.size + key_size - 2] ^= 0x01
    path.write_bytes(bytes(data))


def bad_magic(path):
    data = bytearray(path.read_bytes())
    data[7] ^= 0x01
    path.write_bytes(bytes(data))


def bad_checksum(path):
    data = bytearray(path.read_bytes())
    data[24] ^= 0x01  # first byte of the checksum field
    path.write_bytes(bytes(data))


def bigger_payload_size(path):
    data = bytearray(path.read_bytes())
    magic, key_size, payload_size, checksum, *_ = split_entry(bytes(data))
    data[: HEADER.size] = HEADER.pack(magic, key_size, payload_size + 16, checksum)
    path.write_bytes(bytes(data) + bytes(16))


def trailing_bytes(path):
    path.write_bytes(path.read_bytes() + b"\0" * 8)


def empty(path):
    path.write_bytes(b"")


def header_only(path):
    path.write_bytes(path.read_bytes()[: HEADER.size])


GIB = 1 << 30


def sparse(path, size):
    """Makes |path| |size| bytes long, the new bytes a hole (no disk space); skips where the
    file system cannot hold a file that long."""
    try:
        os.truncate(path, size)
    except OSError as e:
        pytest.skip(f"the file system cannot hold a {size}-byte file: {e}")


def extended_to_64_gib(path):
    sparse(path, 64 * GIB)  # as `truncate -s 64G` leaves it: the header is intact


def extended_to_1_tib(path):
    sparse(path, 1024 * GIB)


def zeros_of_1_tib(path):
    path.write_bytes(b"")
    sparse(path, 1024 * GIB)


def garbage_header_of_1_tib(path):
    path.write_bytes(np.random.default_rng(7).bytes(HEADER.size))
    sparse(path, 1024 * GIB)


def claims_its_64_gib(path):
    """The header's sizes add up to the file's: only the cap on entries refuses it."""
    magic, key_size, _, checksum, key, _ = split_entry(path.read_bytes())
    size = 64 * GIB
    path.write_bytes(HEADER.pack(magic, key_size, size - HEADER.size - key_size, checksum) + key)
    sparse(path, size)


def truncated_from_2_tib(path):
    """The header claims twice what the (1 TiB) file holds."""
    magic, key_size, _, checksum, key, _ = split_entry(path.read_bytes())
    path.write_bytes(HEADER.pack(magic, key_size, 2048 * GIB, checksum) + key)
    sparse(path, 1024 * GIB)


def assert_rebuilt(cache_dir, rng, damage, name):
    """A kernel whose entry |damage| spoilt is compiled again, right, into a valid entry that
    the next process uses."""
    action, ref = linear(name, 5, -2, rng)
    check(run_child(cache_dir, [action])["results"][0], action, ref)
    entry = only_entry(cache_dir)
    damage(entry)

    action = linear(name, 5, -2, rng)[0]
    report = run_child(cache_dir, [action])
    check(report["results"][0], action, ref)
    assert (report["info"]["compiles"], report["info"]["disk_hits"]) == (1, 0)
    assert entries(cache_dir) == [entry]
    assert_valid_entry(entry)
    assert temporaries(cache_dir) == []

    action = linear(name, 5, -2, rng)[0]
    report = run_child(cache_dir, [action], KJIT_ASSERT_NO_COMPILE=1)
    check(report["results"][0], action, ref)
    assert (report["info"]["compiles"], report["info"]["disk_hits"]) == (0, 1)


@pytest.mark.parametrize("damage", [flip_payload_byte, truncate, edit_key],
                         ids=["payload-byte", "truncated", "other-key"])
def test_damaged_entry_is_rebuilt(cache_dir, rng, damage):
    assert_rebuilt(cache_dir, rng, damage, "damaged")


@pytest.mark.parametrize("damage", [extended_to_64_gib, extended_to_1_tib, zeros_of_1_tib,
                                    garbage_header_of_1_tib, claims_its_64_gib,
                                    truncated_from_2_tib])
def test_huge_damaged_entry_is_rebuilt_without_reading_it(cache_dir, rng, damage):
    # A size taken from the file before its header was checked made every later process fail
    # to allocate it (MemoryError), for good.
    assert_rebuilt(cache_dir, rng, damage, "huge")


@pytest.mark.parametrize("damage", [flip_payload_byte, truncate, edit_key, bad_magic,
                                    bad_checksum, bigger_payload_size, trailing_bytes, empty,
                                    header_only])
def test_damaged_entry_is_never_run_and_is_deleted(cache_dir, rng, damage):
    action, ref = linear("never_run", 7, 3, rng)
    check(run_child(cache_dir, [action])["results"][0], action, ref)
    entry = only_entry(cache_dir)
    damage(entry)

    report = run_child(cache_dir, [linear("never_run", 7, 3, rng)[0]], KJIT_ASSERT_NO_COMPILE=1)
    assert_refused(report["results"][0])
    assert report["info"]["disk_hits"] == 0
    assert entries(cache_dir) == []


def test_entry_of_another_kernel_under_this_name_is_not_used(cache_dir, rng):
    """What a hash collision looks like: a valid entry, but for another key."""
    a, ref_a = linear("one", 2, 0, rng)
    b, ref_b = linear("two", 4, 0, rng)
    report = run_child(cache_dir, [a])
    check(report["results"][0], a, ref_a)
    entry_a = only_entry(cache_dir)
    entry_a.rename(cache_dir / "a.saved")
    report = run_child(cache_dir, [b])
    check(report["results"][0], b, ref_b)
    entry_b = only_entry(cache_dir)
    (cache_dir / "a.saved").rename(entry_b)  # kernel one's entry where kernel two's belongs

    report = run_child(cache_dir, [linear("two", 4, 0, rng)[0]], KJIT_ASSERT_NO_COMPILE=1)
    assert_refused(report["results"][0])

    b = linear("two", 4, 0, rng)[0]
    report = run_child(cache_dir, [b])
    check(report["results"][0], b, ref_b)
    assert report["info"]["compiles"] == 1
    assert_valid_entry(entry_b)


# ---------------------------------------------------------------------------------------------
# Concurrency


def test_two_processes_compiling_the_same_kernel_at_once(cache_dir, rng):
    actions = [linear("race", 6, 2, rng)[0] for _ in range(2)]
    ref = lambda x: x * 6 + 2  # noqa: E731
    procs = [start_child(cache_dir) for _ in actions]
    # Both have imported kjit before either gets its work.
    for p in procs:
        assert p.stdout.readline().strip() == "READY"
    for p, action in zip(procs, actions):
        p.stdin.write(json.dumps([action]) + "\n")
        p.stdin.flush()
    reports = [finish_child(p) for p in procs]

    for report, action in zip(reports, actions):
        check(report["results"][0], action, ref)
        assert report["info"]["compiles"] + report["info"]["disk_hits"] == 1
    entry = only_entry(cache_dir)
    assert temporaries(cache_dir) == []
    assert_valid_entry(entry)

    action = linear("race", 6, 2, rng)[0]
    report = run_child(cache_dir, [action], KJIT_ASSERT_NO_COMPILE=1)
    check(report["results"][0], action, ref)
    assert report["info"]["disk_hits"] == 1


def test_eight_processes_share_one_directory_for_twenty_kernels(cache_dir, rng):
    # Every process runs all twenty kernels, each in its own order, all started before any has
    # work: each kernel comes from one compile or a disk hit in each process, every result is
    # right (no partial entry is ever loaded), and the directory ends with one valid entry per
    # kernel. Then eight more processes run them all from the disk, compiling nothing.
    kernels = [(i + 2, i) for i in range(20)]
    for round_ in ("cold", "warm"):
        procs = [start_child(cache_dir, **({"KJIT_ASSERT_NO_COMPILE": 1}
                                           if round_ == "warm" else {})) for _ in range(8)]
        for p in procs:
            assert p.stdout.readline().strip() == "READY"
        work = []
        for p in procs:
            order = rng.permutation(len(kernels))
            made = [linear(f"shared{i}", *kernels[i], rng) for i in order]
            work.append(made)
            p.stdin.write(json.dumps([action for action, _ in made]) + "\n")
            p.stdin.flush()
        for p, made in zip(procs, work):
            report = finish_child(p, timeout=600)
            for result, (action, ref) in zip(report["results"], made):
                check(result, action, ref)
            info = report["info"]
            assert info["compiles"] + info["disk_hits"] == len(kernels), info
            if round_ == "warm":
                assert info["compiles"] == 0 and info["disk_hits"] == len(kernels)
        assert temporaries(cache_dir) == []
        found = entries(cache_dir)
        assert len(found) == len(kernels)
        for entry in found:
            assert_valid_entry(entry)


def test_threads_of_one_process_compile_once(cache_dir, rng):
    action, ref = linear("threads", 9, 4, rng)
    report = run_child(cache_dir, [dict(action, op="threads", threads=8)])
    for result in report["results"][0]["all"]:
        check(result, action, ref)
    assert report["info"]["compiles"] == 1
    assert report["info"]["memory_entries"] == 1
    assert_valid_entry(only_entry(cache_dir))


# ---------------------------------------------------------------------------------------------
# The cache directory


def test_unusable_directory_keeps_kernels_in_memory_with_one_warning(tmp_path, rng):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a regular file\n")
    cache_dir = blocker / "kjit"
    kernels = [linear(f"mem{i}", i + 2, i, rng) for i in range(3)]
    actions = [a for a, _ in kernels] + [linear("mem0", 2, 0, rng)[0]]
    refs = [r for _, r in kernels] + [kernels[0][1]]

    report = run_child(cache_dir, actions)
    for result, action, ref in zip(report["results"], actions, refs):
        check(result, action, ref)
    info = report["info"]
    assert info["disk_enabled"] is False
    assert info["disk_entries"] == 0
    assert info["compiles"] == 3 and info["disk_hits"] == 0
    assert info["memory_entries"] == 3  # the repeated kernel came from memory
    runtime_warnings = [w for w in report["warnings"] if w["category"] == "RuntimeWarning"]
    assert len(runtime_warnings) == 1, report["warnings"]
    assert str(cache_dir) in runtime_warnings[0]["message"]
    assert blocker.read_text() == "a regular file\n"


def test_unusable_directory_warning_raised_as_an_error(tmp_path, rng):
    """With warnings turned into errors the warning surfaces as a RuntimeWarning (or not at
    all), never as an unrelated error, and kjit keeps working."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    cache_dir = blocker / "kjit"
    first, ref = linear("strict0", 2, 0, rng)
    second = linear("strict1", 3, 0, rng)
    actions = [{"op": "warnings_are_errors"}, first, second[0], {"op": "info"}]
    report = run_child(cache_dir, actions)
    result = report["results"][1]
    if not result["ok"]:
        assert result["type"] == "RuntimeWarning", result
        assert str(cache_dir) in result["message"]
    else:
        check(result, first, ref)
    check(report["results"][2], second[0], second[1])
    assert report["results"][3]["info"]["disk_enabled"] is False


def test_new_directory_is_private(tmp_path, rng):
    cache_dir = tmp_path / "deeper" / "still" / "kjit"
    action, ref = linear("fresh_dir", 2, 1, rng)
    report = run_child(cache_dir, [action])
    check(report["results"][0], action, ref)
    assert report["info"]["disk_enabled"]
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert_valid_entry(only_entry(cache_dir))
    assert report["warnings"] == []


def test_open_directory_of_the_user_is_tightened(cache_dir, rng):
    cache_dir.mkdir()
    cache_dir.chmod(0o777)
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o777
    action, ref = linear("tighten", 2, 1, rng)
    report = run_child(cache_dir, [action])
    check(report["results"][0], action, ref)
    assert report["info"]["disk_enabled"]
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert_valid_entry(only_entry(cache_dir))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_directory_of_another_user_is_not_used(cache_dir, rng):
    cache_dir.mkdir()
    cache_dir.chmod(0o777)
    os.chown(cache_dir, 65534, 65534)
    actions = [linear("foreign_dir", 2, 1, rng), linear("foreign_dir2", 3, 1, rng)]
    report = run_child(cache_dir, [a for a, _ in actions])
    for result, (action, ref) in zip(report["results"], actions):
        check(result, action, ref)
    assert report["info"]["disk_enabled"] is False
    assert entries(cache_dir) == []
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o777  # not someone else's to change
    runtime_warnings = [w for w in report["warnings"] if w["category"] == "RuntimeWarning"]
    assert len(runtime_warnings) == 1 and str(cache_dir) in runtime_warnings[0]["message"]


def test_relative_directory_is_resolved_once(tmp_path, rng):
    """A relative KJIT_CACHE_DIR is taken from the working directory at first use: changing
    directory afterwards (into one another user may control) moves nothing."""
    first_dir, later_dir = tmp_path / "first", tmp_path / "later"
    first_dir.mkdir()
    later_dir.mkdir()
    a, ref_a = linear("relative_a", 2, 5, rng)
    b, ref_b = linear("relative_b", 3, 5, rng)
    actions = [a, {"op": "chdir", "path": str(later_dir)}, b, {"op": "info"}]
    report = run_child("rel/kjit", actions, cwd=first_dir)
    check(report["results"][0], a, ref_a)
    check(report["results"][2], b, ref_b)
    cache_dir = first_dir / "rel" / "kjit"
    for info in (report["results"][3]["info"], report["info"]):
        assert info["disk_enabled"] and info["directory"] == str(cache_dir)
    assert not (later_dir / "rel").exists()
    assert len(entries(cache_dir)) == 2
    for entry in entries(cache_dir):
        assert_valid_entry(entry)

    # A process elsewhere finds both through the directory's absolute path.
    actions = [linear("relative_a", 2, 5, rng)[0], linear("relative_b", 3, 5, rng)[0]]
    report = run_child(cache_dir, actions, cwd=later_dir, KJIT_ASSERT_NO_COMPILE=1)
    for result, action, ref in zip(report["results"], actions, (ref_a, ref_b)):
        check(result, action, ref)
    assert report["info"]["disk_hits"] == 2


def assert_directory_refused(cache_dir, rng, culprit):
    """Kernels run (compiled in memory), the disk cache is off with one warning naming the
    directory and |culprit|, and no entry is written."""
    actions = [linear("refused_a", 2, 1, rng), linear("refused_b", 3, 1, rng)]
    report = run_child(cache_dir, [a for a, _ in actions])
    for result, (action, ref) in zip(report["results"], actions):
        check(result, action, ref)
    assert report["info"]["disk_enabled"] is False
    assert report["info"]["compiles"] == 2
    assert not cache_dir.exists() or entries(cache_dir) == []
    runtime_warnings = [w for w in report["warnings"] if w["category"] == "RuntimeWarning"]
    assert len(runtime_warnings) == 1, report["warnings"]
    message = runtime_warnings[0]["message"]
    assert str(cache_dir) in message and f"'{culprit}'" in message, message


def open_parent(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    return shared / "kjit", shared


def open_grandparent(tmp_path):
    """The user's own directory inside one others can write: they could move it away and put
    theirs in its place."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "mine").mkdir(mode=0o700)
    return shared / "mine" / "kjit", shared


def link_to_open_directory(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (tmp_path / "link").symlink_to(shared)
    return tmp_path / "link" / "kjit", shared


def group_writable_parent(tmp_path):
    shared = tmp_path / "group"
    shared.mkdir()
    shared.chmod(0o770)
    return shared / "kjit", shared


@pytest.mark.parametrize("layout", [open_parent, open_grandparent, link_to_open_directory,
                                    group_writable_parent])
def test_directory_below_one_others_can_write_is_not_used(tmp_path, rng, layout):
    cache_dir, culprit = layout(tmp_path)
    assert_directory_refused(cache_dir, rng, culprit)

    # With the sticky bit (as /tmp has) others cannot move what is not theirs: it is used.
    culprit.chmod(culprit.stat().st_mode | stat.S_ISVTX)
    action, ref = linear("sticky", 4, 1, rng)
    report = run_child(cache_dir, [action])
    check(report["results"][0], action, ref)
    assert report["info"]["disk_enabled"] and report["warnings"] == []
    assert_valid_entry(only_entry(cache_dir))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_directory_below_one_of_another_user_is_not_used(tmp_path, rng):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    theirs.chmod(0o755)
    os.chown(theirs, 65534, 65534)
    assert_directory_refused(theirs / "kjit", rng, theirs)


# ---------------------------------------------------------------------------------------------
# Entries others could have written


@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602])
def test_entry_writable_by_others_is_refused(cache_dir, rng, mode):
    action, ref = linear("perm", 3, 3, rng)
    check(run_child(cache_dir, [action])["results"][0], action, ref)
    entry = only_entry(cache_dir)

    entry.chmod(mode)
    report = run_child(cache_dir, [linear("perm", 3, 3, rng)[0]], KJIT_ASSERT_NO_COMPILE=1)
    assert_refused(report["results"][0])

    # The same bytes with a private mode are used: the mode alone made the difference.
    entry.chmod(0o600)
    action = linear("perm", 3, 3, rng)[0]
    report = run_child(cache_dir, [action], KJIT_ASSERT_NO_COMPILE=1)
    check(report["results"][0], action, ref)
    assert report["info"]["disk_hits"] == 1

    # Without the assertion the kernel is compiled again and the entry replaced by a safe one.
    entry.chmod(mode)
    action = linear("perm", 3, 3, rng)[0]
    report = run_child(cache_dir, [action])
    check(report["results"][0], action, ref)
    assert (report["info"]["compiles"], report["info"]["disk_hits"]) == (1, 0)
    assert entries(cache_dir) == [entry]
    assert_valid_entry(entry)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give an entry to another user")
def test_entry_owned_by_another_user_is_refused(cache_dir, rng):
    action, ref = linear("owner", 3, -3, rng)
    check(run_child(cache_dir, [action])["results"][0], action, ref)
    entry = only_entry(cache_dir)

    os.chown(entry, 65534, 65534)
    report = run_child(cache_dir, [linear("owner", 3, -3, rng)[0]], KJIT_ASSERT_NO_COMPILE=1)
    assert_refused(report["results"][0])

    action = linear("owner", 3, -3, rng)[0]
    report = run_child(cache_dir, [action])
    check(report["results"][0], action, ref)
    assert report["info"]["compiles"] == 1
    assert_valid_entry(entry)  # now the user's own


# ---------------------------------------------------------------------------------------------
# Size cap


def make_lru_entries(cache_dir, rng):
    """Compiles kernels a and b in separate processes; returns their entries."""
    found = {}
    for name, a in (("lru_a", 2), ("lru_b", 3)):
        action, ref = linear(name, a, 1, rng)
        check(run_child(cache_dir, [action])["results"][0], action, ref)
        (new,) = set(entries(cache_dir)) - set(found.values())
        found[name] = new
    return found["lru_a"], found["lru_b"]


def compile_third_under_cap(cache_dir, rng, sizes):
    cap = sum(sizes) + min(sizes) // 2  # room for two entries, not for three
    action, ref = linear("lru_c", 4, 1, rng)
    report = run_child(cache_dir, [action], KJIT_CACHE_MAX_BYTES=cap)
    check(report["results"][0], action, ref)
    info = report["info"]
    assert info["disk_limit_bytes"] == cap
    assert info["compiles"] == 1
    assert info["disk_bytes"] <= cap
    assert sum(p.stat().st_size for p in entries(cache_dir)) <= cap
    left = set(entries(cache_dir))
    assert len(left) == 2, left
    return left


def test_size_cap_evicts_the_least_recently_used_entry(cache_dir, rng):
    entry_a, entry_b = make_lru_entries(cache_dir, rng)
    sizes = [entry_a.stat().st_size, entry_b.stat().st_size]
    # b was written last, but a is made the more recently used one.
    now = entry_b.stat().st_mtime
    os.utime(entry_b, (now - 200, now - 200))
    os.utime(entry_a, (now - 100, now - 100))

    left = compile_third_under_cap(cache_dir, rng, sizes)
    assert entry_a in left and entry_b not in left
    (entry_c,) = left - {entry_a}
    assert sum(sizes) + entry_c.stat().st_size > sum(sizes) + min(sizes) // 2  # had to evict
    for p in left:
        assert_valid_entry(p)


def test_disk_hit_counts_as_a_use_for_eviction(cache_dir, rng):
    entry_a, entry_b = make_lru_entries(cache_dir, rng)
    sizes = [entry_a.stat().st_size, entry_b.stat().st_size]
    now = entry_b.stat().st_mtime
    os.utime(entry_a, (now - 200, now - 200))
    os.utime(entry_b, (now - 100, now - 100))

    # A process uses a from disk: a becomes the most recently used of the two.
    action, ref = linear("lru_a", 2, 1, rng)
    report = run_child(cache_dir, [action], KJIT_ASSERT_NO_COMPILE=1)
    check(report["results"][0], action, ref)
    assert report["info"]["disk_hits"] == 1
    assert entry_a.stat().st_mtime > entry_b.stat().st_mtime

    left = compile_third_under_cap(cache_dir, rng, sizes)
    assert entry_a in left and entry_b not in left

    action = linear("lru_a", 2, 1, rng)[0]
    report = run_child(cache_dir, [action], KJIT_ASSERT_NO_COMPILE=1)
    check(report["results"][0], action, ref)


@pytest.mark.parametrize("value", ["lots", "-5", " -1", "0"])
def test_unusable_size_cap_is_named_in_a_warning(cache_dir, rng, value):
    action, ref = linear("bad_cap", 2, 1, rng)
    report = run_child(cache_dir, [action], KJIT_CACHE_MAX_BYTES=value)
    check(report["results"][0], action, ref)
    assert report["info"]["disk_limit_bytes"] == 1 << 30  # the default
    messages = [w["message"] for w in report["warnings"]]
    assert any(f"KJIT_CACHE_MAX_BYTES='{value}' is not a number of bytes" in m
               for m in messages), messages


# ---------------------------------------------------------------------------------------------
# Turning the disk cache off, clearing it


def test_cache_off_writes_nothing(cache_dir, rng):
    cache_dir.mkdir(mode=0o700)
    action, ref = linear("off", 8, 0, rng)
    report = run_child(cache_dir, [action, linear("off", 8, 0, rng)[0]], KJIT_CACHE=0)
    check(report["results"][0], action, ref)
    assert report["results"][1]["ok"]
    info = report["info"]
    assert info["disk_enabled"] is False
    assert info["compiles"] == 1 and info["memory_entries"] == 1
    assert list(cache_dir.iterdir()) == []
    assert report["warnings"] == []  # turned off on purpose: nothing to warn about


def test_cache_off_reads_nothing(cache_dir, rng):
    action, ref = linear("off_read", 8, 1, rng)
    check(run_child(cache_dir, [action])["results"][0], action, ref)
    entry = only_entry(cache_dir)
    report = run_child(cache_dir, [linear("off_read", 8, 1, rng)[0]], KJIT_CACHE=0,
                       KJIT_ASSERT_NO_COMPILE=1)
    assert_refused(report["results"][0])
    assert entries(cache_dir) == [entry]


def test_clear_cache_deletes_entries(cache_dir, rng):
    kernels = [linear("clear_a", 2, 2, rng), linear("clear_b", 3, 3, rng)]
    report = run_child(cache_dir, [a for a, _ in kernels])
    for result, (action, ref) in zip(report["results"], kernels):
        check(result, action, ref)
    assert len(entries(cache_dir)) == 2

    first = linear("clear_a", 2, 2, rng)[0]
    actions = [first, {"op": "info"}, {"op": "clear"}, {"op": "info"},
               linear("clear_a", 2, 2, rng)[0]]
    report = run_child(cache_dir, actions, KJIT_ASSERT_NO_COMPILE=1)
    check(report["results"][0], first, kernels[0][1])
    before, after = report["results"][1]["info"], report["results"][3]["info"]
    assert before["disk_entries"] == 2 and before["memory_entries"] == 1
    assert after["disk_entries"] == 0 and after["memory_entries"] == 0
    assert_refused(report["results"][4])  # neither cache holds it any more
    assert entries(cache_dir) == []


# ---------------------------------------------------------------------------------------------
# What the key covers


def test_key_separates_template_values_dtypes_and_math_modes(cache_dir, rng):
    variants = [
        (dict(template=[("N", 2)]), lambda x: x * 2),
        (dict(template=[("N", 3)]), lambda x: x * 3),
        (dict(template=[("N", 2)], dtype="float64"), lambda x: x * 2),
        (dict(template=[("N", 2)], dtype="int32"), lambda x: x * 2),
        (dict(template=[("N", 2)], math_mode="relaxed"), lambda x: x * 2),
        (dict(template=[("N", 2)], math_mode="fast"), lambda x: x * 2 + 1),
    ]
    actions = [run_action("keyed", SCALED, rng, **kw) for kw, _ in variants]
    report = run_child(cache_dir, actions)
    for result, action, (_, ref) in zip(report["results"], actions, variants):
        check(result, action, ref)
    assert report["info"]["compiles"] == len(variants)
    assert len(entries(cache_dir)) == len(variants)
    for p in entries(cache_dir):
        assert_valid_entry(p)

    # Each variant finds its own entry, in another order.
    order = list(reversed(range(len(variants))))
    actions = [run_action("keyed", SCALED, rng, **variants[i][0]) for i in order]
    report = run_child(cache_dir, actions, KJIT_ASSERT_NO_COMPILE=1)
    for result, action, i in zip(report["results"], actions, order):
        check(result, action, variants[i][1])
    assert report["info"]["disk_hits"] == len(variants)


def test_key_covers_the_compiler(tmp_path, cache_dir, rng):
    action, ref = linear("which_cxx", 2, 5, rng)
    check(run_child(cache_dir, [action])["results"][0], action, ref)
    default_entry = only_entry(cache_dir)

    wrapper, log = compiler_wrapper(tmp_path)
    report = run_child(cache_dir, [linear("which_cxx", 2, 5, rng)[0]], KJIT_CXX=wrapper,
                       KJIT_ASSERT_NO_COMPILE=1)
    assert_refused(report["results"][0])

    action = linear("which_cxx", 2, 5, rng)[0]
    report = run_child(cache_dir, [action], KJIT_CXX=wrapper)
    check(report["results"][0], action, ref)
    assert report["info"]["compiles"] == 1
    assert compiler_runs(log) == 1
    assert len(entries(cache_dir)) == 2 and default_entry in entries(cache_dir)


# ---------------------------------------------------------------------------------------------
# Failures are not cached


def test_failed_compile_leaves_no_entry(tmp_path, cache_dir, rng):
    build_tmp = tmp_path / "tmp"
    build_tmp.mkdir()
    bad = run_action("broken", BROKEN, rng)
    good, ref = linear("fine", 2, 7, rng)
    report = run_child(cache_dir, [bad, bad, good], TMPDIR=build_tmp)
    for result in report["results"][:2]:  # the failure is not remembered in memory either
        assert not result["ok"] and result["compile_error"], result
        assert "not_declared_anywhere" in result["message"]
    check(report["results"][2], good, ref)
    info = report["info"]
    assert info["compiles"] == 1 and info["memory_entries"] == 1
    assert info["disk_enabled"]
    assert_valid_entry(only_entry(cache_dir))
    assert temporaries(cache_dir) == []
    assert list(build_tmp.iterdir()) == []  # no build directories left behind

    good_entry = only_entry(cache_dir)
    report = run_child(cache_dir, [bad], TMPDIR=build_tmp)
    assert report["results"][0]["compile_error"], report["results"][0]
    assert entries(cache_dir) == [good_entry]
    report = run_child(cache_dir, [bad], KJIT_ASSERT_NO_COMPILE=1)
    assert_refused(report["results"][0])
    assert list(build_tmp.iterdir()) == []
