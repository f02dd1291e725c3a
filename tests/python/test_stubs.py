"""The committed type stubs match the compiled module."""

import pathlib
import subprocess
import sys

import kjit

STUB = pathlib.Path(__file__).resolve().parents[2] / "python" / "kjit" / "_kjit.pyi"


def test_stubs_are_current(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "_kjit.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "kjit._kjit", "-o",
                    str(out)], check=True)
    assert out.read_text() == STUB.read_text(), (
        "python/kjit/_kjit.pyi is out of date: regenerate it with "
        "python -m nanobind.stubgen -m kjit._kjit -o python/kjit/_kjit.pyi")


def test_public_names_are_exported() -> None:
    for name in kjit.__all__:
        assert hasattr(kjit, name), name
    assert issubclass(kjit.CompileError, RuntimeError)
    assert kjit.bool_ is kjit.Dtype.bool
    assert kjit.__version__ == kjit.version()
