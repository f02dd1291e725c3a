"""Every example in examples/ runs (each checks its own result against an independent
reference and fails loudly otherwise), and the examples pass mypy --strict against kjit's
stubs, as users' programs are checked."""

import os
import pathlib
import subprocess
import sys

import pytest

import kjit

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
# Run by their own tests: the DDP example needs torchrun (test_ddp_example.py); seed_kernels.py
# and softplus_kernels.py are modules of kernels the others import.
RUN_ELSEWHERE = {"ddp_train.py", "seed_kernels.py", "softplus_kernels.py"}
NEEDS = {"torch_op.py": "torch", "jax_op.py": "jax", "ddp_train.py": "torch"}
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name not in RUN_ELSEWHERE)


def test_every_example_is_run():
    assert {"myexp.py", "invert_3x3.py", "myexp_cuda.py", "block_sum.py", "torch_op.py",
            "jax_op.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs(script, tmp_path):
    if script in NEEDS:
        pytest.importorskip(NEEDS[script])
    # The kjit under test, wherever the examples run from.
    package = str(pathlib.Path(kjit.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, KJIT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=path)
    done = subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert done.stdout.strip(), "the example printed nothing"


def test_examples_pass_mypy_strict(tmp_path):
    pytest.importorskip("mypy")
    for module in set(NEEDS.values()):
        pytest.importorskip(module)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path),
         *sorted(str(p) for p in EXAMPLES.glob("*.py"))],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
