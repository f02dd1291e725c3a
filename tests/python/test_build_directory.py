"""Where the CPU backend builds and loads kernels: a TMPDIR that is missing, unwritable, full or
mounted noexec is passed over (with a warning that says why) for /tmp, /var/tmp and the cache
directory; where none works, or the disk fills during a compile, kjit.CompileError names the
directories and the cause."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import kjit

# Compiles and runs a kernel, checks its result against NumPy, and prints what it saw.
PROGRAM = textwrap.dedent("""
    import os, sys, warnings
    import numpy as np, kjit
    warnings.simplefilter("always")
    k = kjit.metal_kernel(name="shifted_square", input_names=["x"], output_names=["out"],
                          source="uint i = thread_position_in_grid.x; out[i] = x[i] * x[i] + 3;")
    x = np.linspace(-4, 4, 1000, dtype=np.float32)
    with warnings.catch_warnings(record=True) as seen:
        try:
            (out,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32],
                       grid=(1000, 1, 1), threadgroup=(256, 1, 1), device="cpu")
            print("result", np.array_equal(out, x * x + 3))
        except kjit.CompileError as e:
            print("CompileError", e)
    for w in seen:
        print("warning", w.message)
    tmp = os.environ.get("TMPDIR")
    print("left", sorted(os.listdir(tmp)) if tmp and os.path.isdir(tmp) else [])
""")


def run_program(env, command=None):
    """Runs PROGRAM in a fresh interpreter (no disk cache unless |env| sets one) with |env|
    added; |command| wraps it (a shell line ending in the interpreter's command)."""
    env = {**os.environ, "KJIT_CACHE": "0", **env}
    argv = [sys.executable, "-c", PROGRAM]
    if command:
        argv = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-ec",
                command + ' exec "$@"', "sh", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_missing_tmpdir_is_passed_over_for_tmp(tmp_path):
    missing = tmp_path / "missing"
    out = run_program({"TMPDIR": str(missing)})
    assert "result True" in out, out
    assert (f"kernels for the CPU are built in '/tmp' instead of TMPDIR '{missing}': "
            "No such file or directory") in out, out


def test_a_tmpdir_that_is_a_file_is_passed_over_for_tmp(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    out = run_program({"TMPDIR": str(a_file)})
    assert "result True" in out, out
    assert f"instead of TMPDIR '{a_file}': Not a directory" in out, out


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write to any directory")
def test_an_unwritable_tmpdir_is_passed_over_for_tmp(tmp_path):
    unwritable = tmp_path / "unwritable"
    unwritable.mkdir(mode=0o500)
    out = run_program({"TMPDIR": str(unwritable)})
    assert "result True" in out, out
    assert f"instead of TMPDIR '{unwritable}': Permission denied" in out, out
    assert "left []" in out, out


def mounts_work():
    """Whether this user may make a user and mount namespace, and mount tmpfs in it."""
    if not shutil.which("unshare") or not shutil.which("mount"):
        return False
    try:
        return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-ec",
                               "d=$(mktemp -d); mount -t tmpfs -o size=4k tmpfs $d"],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


needs_mounts = pytest.mark.skipif(not mounts_work(),
                                  reason="no unprivileged user and mount namespaces here")


def tmpfs(path, options):
    """A shell line that mounts a tmpfs with |options| at |path| (made first). Skips the test
    where that would hide the interpreter or kjit (a checkout under /tmp)."""
    hidden = os.path.abspath(path) + os.sep
    for needed in (sys.executable, sys.prefix, os.path.dirname(kjit.__file__)):
        if os.path.abspath(needed).startswith(hidden):
            pytest.skip(f"a tmpfs on {path} would hide {needed}")
    return f"mkdir -p {path}; mount -t tmpfs -o {options} tmpfs {path};"


@needs_mounts
def test_a_noexec_tmpdir_is_passed_over_for_tmp(tmp_path):
    noexec = tmp_path / "noexec"
    out = run_program({"TMPDIR": str(noexec)}, tmpfs(noexec, "size=4m,noexec"))
    assert "result True" in out, out
    assert f"instead of TMPDIR '{noexec}': it is mounted noexec" in out, out
    assert "left []" in out, out


@needs_mounts
def test_a_read_only_tmpdir_is_passed_over_for_tmp(tmp_path):
    read_only = tmp_path / "read_only"
    out = run_program({"TMPDIR": str(read_only)}, tmpfs(read_only, "size=4m,ro"))
    assert "result True" in out, out
    assert f"instead of TMPDIR '{read_only}': Read-only file system" in out, out


@needs_mounts
def test_a_tmpdir_too_full_for_the_source_is_passed_over_for_tmp(tmp_path):
    full = tmp_path / "full"
    out = run_program({"TMPDIR": str(full)}, tmpfs(full, "size=4k"))
    assert "result True" in out, out
    assert f"instead of TMPDIR '{full}': cannot write {full}/kjit-build-" in out, out
    assert "kjit_kernel.cpp: No space left on device" in out, out
    assert "left []" in out, out


@needs_mounts
def test_a_disk_that_fills_during_the_compile_says_so(tmp_path):
    # Room for the generated source and a page more: the compiler's own files do not fit.
    kept = tmp_path / "kept"
    kept.mkdir()
    run_program({"TMPDIR": str(kept), "KJIT_KEEP_BUILD": "1"})
    (source,) = kept.glob("kjit-build-*/kjit_kernel.cpp")
    page = os.sysconf("SC_PAGESIZE")
    room = (source.stat().st_size // page + 2) * page
    full = tmp_path / "full"
    out = run_program({"TMPDIR": str(full)}, tmpfs(full, f"size={room}"))
    assert "CompileError [kjit.metal_kernel] kernel 'shifted_square' failed to compile for the " \
           f"CPU: the compiler could not write its files in {full}/kjit-build-" in out, out
    assert ": no space left on device" in out.lower(), out
    assert "left []" in out, out


@needs_mounts
def test_the_cache_directory_is_the_last_resort_and_else_every_place_is_named(tmp_path):
    # /tmp and /var/tmp read-only, TMPDIR missing: only the cache directory (on a file system
    # that allows executables) is left; without a disk cache, nothing.
    hide = tmpfs("/tmp", "size=4k,ro") + tmpfs("/var/tmp", "size=4k,noexec") + tmpfs(
        "/mnt", "size=64m")
    env = {"TMPDIR": "/nowhere", "KJIT_CACHE": "1", "KJIT_CACHE_DIR": "/mnt/cache"}
    out = run_program(env, hide)
    assert "result True" in out, out
    assert ("kernels for the CPU are built in '/mnt/cache' instead of TMPDIR '/nowhere': No such "
            "file or directory; '/tmp': Read-only file system; '/var/tmp': it is mounted noexec"
            ) in out, out
    out = run_program({"TMPDIR": "/nowhere"}, hide)
    assert ("CompileError [kjit.metal_kernel] kernel 'shifted_square' failed to compile for the "
            "CPU: cannot make a build directory for the CPU backend (TMPDIR '/nowhere': No such "
            "file or directory; '/tmp': Read-only file system; '/var/tmp': it is mounted noexec, "
            "and kernels are loaded from there); set TMPDIR to a writable directory on a file "
            "system that allows executables") in out, out
