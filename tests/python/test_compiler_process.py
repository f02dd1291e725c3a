"""The host compiler runs under limits: a time limit (KJIT_COMPILE_TIMEOUT), a memory limit
(KJIT_COMPILE_MEMORY), and a limit on the errors it reports; and a compile ends with the call
that started it, on SIGINT, and with the process, however that ends. NVRTC, which runs in the
process, refuses files that are not regular."""

import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kjit
from conftest import NVRTC, CUDA_TARGET


def processes_naming(marker):
    """The command lines of the processes whose command line holds |marker|."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and str(os.getpid()) != entry.name:
            found.append(cmdline)
    return found


def slow_compiler(tmp_path):
    """A compiler that first runs a process of its own for a minute, as the driver runs
    cc1plus, named by a path in |tmp_path| so that it can be found."""
    stand_in = tmp_path / "cc1plus-stand-in"
    stand_in.symlink_to("/bin/sleep")
    slow = tmp_path / "slow-c++"
    real = kjit._kjit.host_compiler()[0]
    slow.write_text(f"#!/bin/sh\n{stand_in} 60\nexec {real} \"$@\"\n")
    slow.chmod(0o755)
    return slow


# Compiles a kernel; prints what came of it and how long it took.
COMPILE = textwrap.dedent("""
    import os, signal, sys, threading, time
    import numpy as np, kjit
    signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the parent had
    k = kjit.metal_kernel(name="slow_to_build", input_names=["x"], output_names=["out"],
                          header=sys.argv[1], source="out[thread_position_in_grid.x] = 1.0f;")
    if sys.argv[2] == "interrupt":
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    try:
        k(inputs=[np.ones(4, np.float32)], output_shapes=[(4,)], output_dtypes=[np.float32],
          grid=(4, 1, 1), threadgroup=(4, 1, 1), device="cpu")
        print("built")
    except KeyboardInterrupt:
        print("interrupted")
    except kjit.CompileError as e:
        print("CompileError", e)
    print("seconds", time.monotonic() - start)
""")


def compile_in_child(tmp_path, env, header="", how="plain"):
    """Runs COMPILE with a TMPDIR of its own, no disk cache and |env|; returns its output and
    TMPDIR."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = subprocess.run([sys.executable, "-c", COMPILE, header, how], capture_output=True,
                          text=True, timeout=240,
                          env={**os.environ, "KJIT_CACHE": "0", "TMPDIR": str(tmp), **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, tmp


def seconds(out):
    return float(out.split("\nseconds ")[1])


def test_sigint_to_the_process_stops_a_compile_at_once_and_its_compiler(tmp_path):
    # kill -INT (or Jupyter's interrupt) reaches this process only, not the compiler's group:
    # kjit stops the compiler and raises KeyboardInterrupt without waiting for it.
    out, tmp = compile_in_child(tmp_path, {"KJIT_CXX": str(slow_compiler(tmp_path))},
                                how="interrupt")
    assert out.startswith("interrupted\n") and seconds(out) < 10, out
    assert processes_naming(str(tmp_path)) == []
    assert list(tmp.iterdir()) == []


def test_a_compile_past_the_time_limit_is_stopped(tmp_path):
    out, tmp = compile_in_child(tmp_path, {"KJIT_CXX": str(slow_compiler(tmp_path)),
                                           "KJIT_COMPILE_TIMEOUT": "1.5"})
    assert out.startswith(
        "CompileError [kjit.metal_kernel] kernel 'slow_to_build' failed to compile for the CPU: "
        "the compiler was stopped after KJIT_COMPILE_TIMEOUT=1.5 seconds (set it higher, or to 0 "
        "for no limit, for a kernel that takes longer)\n"), out
    assert seconds(out) < 10, out
    assert processes_naming(str(tmp_path)) == []
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("sent", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_compile_ends_with_its_process_and_leaves_no_build_directory(tmp_path, sent):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", COMPILE, "", "plain"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "KJIT_CACHE": "0", "TMPDIR": str(tmp),
             "KJIT_CXX": str(slow_compiler(tmp_path))})
    try:
        deadline = time.monotonic() + 60
        while not any("stand-in" in p for p in processes_naming(str(tmp_path))):
            assert time.monotonic() < deadline and child.poll() is None, child.communicate()
            time.sleep(0.05)
        assert [p.name for p in tmp.iterdir()][0].startswith("kjit-build-")
        child.send_signal(sent)
        assert child.wait(timeout=30) == -sent
        deadline = time.monotonic() + 10
        while (processes_naming(str(tmp_path)) or list(tmp.iterdir())) and (
                time.monotonic() < deadline):
            time.sleep(0.05)
        assert processes_naming(str(tmp_path)) == []
        assert list(tmp.iterdir()) == []
    finally:
        child.kill()
        child.wait()


def test_a_compiler_over_the_memory_limit_fails_in_seconds(tmp_path):
    # The compiler reads /dev/zero for ever, its buffer doubling, until it runs out of memory.
    limit = 1 << 30
    out, tmp = compile_in_child(tmp_path, {"KJIT_COMPILE_MEMORY": str(limit)},
                                header='#include "/dev/zero"\n')
    assert out.startswith(
        "CompileError [kjit.metal_kernel] kernel 'slow_to_build' failed to compile for the CPU: "
        f"the compiler ran out of memory: kjit allows it {limit} bytes of address space "
        "(KJIT_COMPILE_MEMORY; 0 for no limit)"), out
    assert seconds(out) < 60, out
    assert list(tmp.iterdir()) == []


def test_an_error_flood_is_cut_short():
    source = "\n".join(f"undeclared_{i} = 0;" for i in range(300))
    k = kjit.metal_kernel(name="flood", input_names=["x"], output_names=["out"], source=source)
    with pytest.raises(kjit.CompileError) as raised:
        k(inputs=[np.ones(4, np.float32)], output_shapes=[(4,)], output_dtypes=[np.float32],
          grid=(4, 1, 1), threadgroup=(4, 1, 1), device="cpu")
    reported = [int(n) for n in re.findall(r"source line (\d+): error", str(raised.value))]
    assert reported[:3] == [1, 2, 3] and len(reported) <= 20, reported


@pytest.mark.skipif(not NVRTC, reason="NVRTC is not available")
def test_nvrtc_refuses_an_include_of_dev_zero_at_once():
    k = kjit.cuda_kernel(name="zeros_forever", input_names=["x"], output_names=["out"],
                         header='#include "/dev/zero"\n', source="out[0] = x[0];")
    start = time.monotonic()
    with pytest.raises(kjit.CompileError, match='cannot open source file "/dev/zero": not a '
                                                'regular file'):
        k.build(inputs=[(np.float32, 1)], output_dtypes=[np.float32], target=CUDA_TARGET)
    assert time.monotonic() - start < 30
