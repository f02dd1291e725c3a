"""`python -m kjit`: --version, and doctor's verdict per backend (pass, not available by
design, or present and broken, which alone makes it exit 1), as text and as JSON."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import kjit
from conftest import library_path_first


def run_kjit(*args, **env_changes):
    env = dict(os.environ, **env_changes)
    return subprocess.run([sys.executable, "-m", "kjit", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def cuda_present():
    return not kjit._kjit.cuda_status()["unavailable"]


def test_version_prints_the_library_version():
    done = run_kjit("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"kjit {kjit.__version__}"
    assert kjit.__version__ == kjit._kjit.version()


def test_doctor_text_and_json_agree_on_this_machine():
    text, as_json = run_kjit("doctor"), run_kjit("doctor", "--json")
    assert text.returncode == as_json.returncode == 0, (text.stdout, text.stderr)
    found = json.loads(as_json.stdout)
    assert found["version"] == kjit.__version__
    assert found["cpu"]["status"] == "pass"
    assert "cpu : PASS" in text.stdout
    if cuda_present():
        assert found["cuda"]["status"] == "pass"
        assert found["cuda"]["devices"], found["cuda"]
        assert "cuda: PASS  cuda:0 " in text.stdout
    else:
        # A machine without a GPU is not a broken install.
        assert found["cuda"]["status"] == "not available"
        assert found["cuda"]["absent"] is True
        assert f"cuda: not available  {found['cuda']['unavailable']}" in text.stdout
        assert "FAIL" not in text.stdout
    assert found["cache"]["directory"] == kjit.cache_info()["directory"]
    assert f"disk cache: {found['cache']['directory']}" in text.stdout


def test_doctor_fails_when_the_host_compiler_is_missing(tmp_path):
    missing = str(tmp_path / "no-such-compiler")
    text, as_json = (run_kjit(*args, KJIT_CXX=missing) for args in (["doctor"], ["doctor", "--json"]))
    assert text.returncode == as_json.returncode == 1
    assert f"cpu : FAIL  no host compiler ({missing!r} not found; set KJIT_CXX)" in text.stdout
    assert json.loads(as_json.stdout)["cpu"]["status"] == "fail"


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to build a stand-in")
def test_doctor_fails_on_a_driver_library_that_is_present_but_broken(tmp_path):
    # A libcuda.so.1 that loads but lacks the driver's functions: CUDA is installed and broken.
    source = tmp_path / "empty.c"
    source.write_text("int kjit_test_placeholder;\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"), str(source)],
                   check=True)
    path = library_path_first(tmp_path)
    text = run_kjit("doctor", LD_LIBRARY_PATH=path)
    found = json.loads(run_kjit("doctor", "--json", LD_LIBRARY_PATH=path).stdout)
    if found["cuda"]["status"] == "pass":
        pytest.skip("this machine's processes load the real driver before the stand-in")
    assert text.returncode == 1, text.stdout
    assert found["cuda"]["status"] == "fail"
    assert found["cuda"]["absent"] is False
    assert "lacks cuInit" in found["cuda"]["unavailable"], found["cuda"]
    assert f"cuda: FAIL  {found['cuda']['unavailable']}" in text.stdout


def test_doctor_fails_on_a_driver_file_that_does_not_load(tmp_path):
    # Not a shared object at all: the loader refuses it, so CUDA is installed and broken.
    (tmp_path / "libcuda.so.1").write_bytes(b"not an ELF file")
    path = library_path_first(tmp_path)
    done = run_kjit("doctor", "--json", LD_LIBRARY_PATH=path)
    found = json.loads(done.stdout)
    if found["cuda"]["status"] == "pass":
        pytest.skip("this machine's processes load the real driver before the stand-in")
    assert done.returncode == 1
    assert found["cuda"]["status"] == "fail"
    assert found["cuda"]["absent"] is False
