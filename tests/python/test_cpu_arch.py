"""KJIT_CPU_ARCH: the -march= value CPU kernels are compiled for. It reaches the compiler (the
kernel sees the target's predefined macros), gives the same results as this CPU's own code, is
part of the disk cache key, and a value the compiler refuses is a CompileError naming it."""

import json
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest


# Builds a kernel that writes which of AVX2 and AVX-512 its compile targeted, and exp of a few
# values; prints both, or the error the build raised.
CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np, kjit
    SOURCE = '''
    uint i = thread_position_in_grid.x;
    #if defined(__AVX512F__)
    isa[i] = 512;
    #elif defined(__AVX2__)
    isa[i] = 256;
    #else
    isa[i] = 0;
    #endif
    out[i] = metal::exp(inp[i]);
    '''
    k = kjit.metal_kernel(name="arch_probe", input_names=["inp"], output_names=["isa", "out"],
                          source=SOURCE)
    x = np.array(json.loads(sys.argv[1]), np.float32)
    try:
        isa, out = k(inputs=[x], output_shapes=[x.shape, x.shape],
                     output_dtypes=[np.int32, np.float32], grid=(x.size, 1, 1),
                     threadgroup=(x.size, 1, 1), device="cpu")
    except Exception as e:
        print(json.dumps({"error": type(e).__name__, "message": str(e)}))
    else:
        print(json.dumps({"isa": int(isa[0]), "out": out.view(np.uint32).tolist(),
                          "info": kjit.cache_info()}))
""")

VALUES = [-110.0, -87.5, -1.25, -0.0, 0.0, 1e-8, 0.5, 3.0, 88.5, float("inf")]


def cpu_flags():
    """This CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


needs_avx2 = pytest.mark.skipif(
    platform.machine() != "x86_64" or not {"avx2", "fma"} <= cpu_flags(),
    reason="an x86-64 CPU with AVX2 and FMA runs haswell code")


def run_child(tmp_path, arch=None, no_compile=False):
    """Runs CHILD with its own cache directory in |tmp_path| and KJIT_CPU_ARCH=|arch| (unset for
    None); returns its report."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("KJIT_CPU_ARCH", "KJIT_ASSERT_NO_COMPILE", "KJIT_CACHE")}
    env["KJIT_CACHE_DIR"] = str(tmp_path / "cache")
    if arch is not None:
        env["KJIT_CPU_ARCH"] = arch
    if no_compile:
        env["KJIT_ASSERT_NO_COMPILE"] = "1"
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(VALUES)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_avx2
def test_haswell_code_is_avx2_code_with_the_same_results(tmp_path):
    native = run_child(tmp_path)
    haswell = run_child(tmp_path, "haswell")
    assert haswell["isa"] == 256
    assert native["isa"] == (512 if "avx512f" in cpu_flags() else 256)
    # exp is the same function bit for bit on either target.
    assert haswell["out"] == native["out"]
    expected = np.exp(np.array(VALUES, np.float64)).astype(np.float32)
    got = np.array(haswell["out"], np.uint32).view(np.float32)
    assert np.all(np.abs(got.view(np.int32) - expected.view(np.int32)) <= 1)


@needs_avx2
def test_the_target_is_part_of_the_disk_cache_key(tmp_path):
    assert run_child(tmp_path)["info"]["compiles"] == 1
    # The native build on disk is not a haswell build...
    refused = run_child(tmp_path, "haswell", no_compile=True)
    assert "needs compiling" in refused["message"]
    # ...which, once built, is found there by the next process asking for it.
    assert run_child(tmp_path, "haswell")["info"]["compiles"] == 1
    hit = run_child(tmp_path, "haswell", no_compile=True)
    assert hit["info"]["compiles"] == 0 and hit["info"]["disk_hits"] == 1
    assert run_child(tmp_path, no_compile=True)["info"]["disk_hits"] == 1


def test_an_empty_value_means_native(tmp_path):
    assert run_child(tmp_path)["info"]["compiles"] == 1
    assert run_child(tmp_path, "", no_compile=True)["info"]["disk_hits"] == 1


@pytest.mark.parametrize("arch", ["no-such-cpu", "haswell -O0"])
def test_a_target_the_compiler_refuses_is_a_compile_error_naming_the_variable(tmp_path, arch):
    report = run_child(tmp_path, arch)
    assert report["error"] == "CompileError"
    assert f"KJIT_CPU_ARCH='{arch}' is not a CPU" in report["message"]
    assert "arch_probe" in report["message"]
