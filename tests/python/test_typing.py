"""kjit's Python package and its stubs pass mypy --strict, as its users' code is checked."""

import os
import subprocess
import sys

import pytest

import kjit

pytest.importorskip("mypy")


def test_the_package_passes_mypy_strict(tmp_path):
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(kjit.__file__)))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), "-p", "kjit"],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, MYPYPATH=package_parent), cwd=package_parent)
    assert done.returncode == 0, done.stdout + done.stderr
