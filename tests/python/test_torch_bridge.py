"""kjit._torch built at first use (kjit/_torch_bridge.py): its cache key and place, the compile
and load mechanism on a stand-in extension, the doctor's line on torch, and, where torch is
installed, the whole path a pip user takes: a kjit built without the bridge builds it for the
running torch, caches it, and reads tensors through it."""

import dataclasses
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import types

import pytest

import kjit
from kjit import _kjit, _torch_bridge
from kjit._torch_bridge import BridgeKey, Loaded

KEY = BridgeKey(torch_version="2.5.1+cu124", cxx11_abi=1, kjit_version="0.1.0",
                compiler="/usr/bin/g++-12 1000 1700000000",
                python_abi=".cpython-312-x86_64-linux-gnu.so", sources="0123456789abcdef")
READELF = shutil.which("readelf")


def package_without_bridge(tmp_path: pathlib.Path) -> str:
    """A copy of the kjit package without a kjit._torch of its build, as pip installs it: the
    PYTHONPATH entry that imports it."""
    root = tmp_path / "site"
    shutil.copytree(pathlib.Path(kjit.__file__).parent, root / "kjit",
                    ignore=shutil.ignore_patterns("_torch.*", "__pycache__"))
    return str(root)


def run_python(args, pythonpath, cache_dir, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "KJIT_TORCH_BRIDGE"}
    env.update(PYTHONPATH=pythonpath, KJIT_CACHE_DIR=str(cache_dir))
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def run_path(path: pathlib.Path) -> list[str]:
    """The RPATH and RUNPATH entries of the shared object at |path|."""
    dynamic = subprocess.run([READELF, "-d", str(path)], capture_output=True, text=True,
                             check=True).stdout
    return [line for line in dynamic.splitlines() if "RPATH" in line or "RUNPATH" in line]


def test_every_part_of_the_key_changes_where_the_bridge_is_kept(tmp_path):
    others = {"torch_version": "2.5.1+cpu", "cxx11_abi": 0, "kjit_version": "0.1.1",
              "compiler": "/usr/bin/clang++ 1 1", "python_abi": ".cpython-313-x86_64-linux-gnu.so",
              "sources": "fedcba9876543210"}
    assert set(others) == {f.name for f in dataclasses.fields(BridgeKey)}
    paths = {KEY.module_path(tmp_path)}
    for name, value in others.items():
        paths.add(dataclasses.replace(KEY, **{name: value}).module_path(tmp_path))
    assert len(paths) == len(others) + 1
    path = KEY.module_path(tmp_path)
    assert path.parent.parent == tmp_path / "torch_bridge"
    assert path.parent.name.startswith("torch-2.5.1+cu124-")
    assert path.name == "_torch.cpython-312-x86_64-linux-gnu.so"
    assert KEY.module_path(tmp_path) == path  # the same key, the same place
    odd = dataclasses.replace(KEY, torch_version="2.6.0/../x y").directory(tmp_path)
    assert odd.parent == tmp_path / "torch_bridge" and "/" not in odd.name and " " not in odd.name


def test_the_sources_digest_sees_every_file_and_name(tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "a.cpp").write_text("int a;")
    (tmp_path / "include" / "b.h").write_text("int b;")
    first = _torch_bridge.sources_digest(tmp_path)
    (tmp_path / "include" / "b.h").write_text("int c;")
    second = _torch_bridge.sources_digest(tmp_path)
    (tmp_path / "include" / "b.h").rename(tmp_path / "include" / "c.h")
    third = _torch_bridge.sources_digest(tmp_path)
    assert len({first, second, third}) == 3


def test_the_package_ships_the_bridge_sources():
    source = _torch_bridge.SOURCE_DIR
    for name in ["torch_module.cpp", "torch_bridge.h", "include/kjit/array.h",
                 "include/kjit/dtype.h", "include/kjit/device.h"]:
        assert (source / name).is_file(), name


def test_the_key_names_the_running_torch_kjit_compiler_and_python():
    stand_in = types.SimpleNamespace(__version__="9.9.9",
                                     _C=types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=False))
    compiler, found = _kjit.host_compiler()
    if not found:
        pytest.skip("no host compiler")
    key = _torch_bridge.first_use_key(stand_in, compiler)
    assert key.torch_version == "9.9.9" and key.cxx11_abi == 0
    assert key.kjit_version == kjit.__version__
    assert key.compiler.startswith(os.path.realpath(compiler) + " ")
    assert key.python_abi == sysconfig.get_config_var("EXT_SUFFIX")
    assert key.sources == _torch_bridge.sources_digest()


def test_the_compile_command_links_by_name_without_a_run_path(tmp_path):
    cmd = _torch_bridge.compile_command(
        "c++", tmp_path / "m.cpp", tmp_path / "m.so", include_dirs=[tmp_path / "inc"],
        system_include_dirs=[tmp_path / "sys"], library_dirs=[tmp_path / "lib"],
        libraries=("torch_python", "c10"), defines={"V": '"1.0"'})
    assert cmd[0] == "c++" and "-shared" in cmd and "-fPIC" in cmd
    assert cmd[cmd.index("-o") + 1] == str(tmp_path / "m.so")
    assert "-ltorch_python" in cmd and "-lc10" in cmd and f"-L{tmp_path / 'lib'}" in cmd
    assert '-DV="1.0"' in cmd and f"-I{tmp_path / 'inc'}" in cmd
    assert cmd[cmd.index("-isystem") + 1] == str(tmp_path / "sys")
    assert not any("rpath" in a or "RPATH" in a for a in cmd), cmd


STAND_IN_MODULE = r"""
#include <Python.h>
static PyModuleDef def = {PyModuleDef_HEAD_INIT, "_torch", nullptr, -1, nullptr};
PyMODINIT_FUNC PyInit__torch() {
  PyObject* m = PyModule_Create(&def);
  if (m) PyModule_AddStringConstant(m, "torch_version", STAND_IN_VERSION);
  return m;
}
"""

# Builds the stand-in through the loader's own functions, loads it as kjit._torch, and builds it
# again (which must not run the compiler: the command given then fails).
BUILD_AND_LOAD = r"""
import json, pathlib, sys, kjit
from kjit import _kjit, _torch_bridge as tb
source, module_path = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
compiler, _ = _kjit.host_compiler()
command = lambda out: tb.compile_command(
    compiler, source, out, include_dirs=[], system_include_dirs=[tb.python_include_dir()],
    library_dirs=[], libraries=(), defines={"STAND_IN_VERSION": '"4.5.6"'})
tb.build_once(module_path, command)
tb.build_once(module_path, lambda out: ["false"])
module = tb.import_extension(module_path)
from kjit import _torch
print(json.dumps([module.torch_version, _torch is module, sys.modules["kjit._torch"] is module,
                  module.__file__]))
"""


def test_a_module_built_once_loads_as_kjit_torch(tmp_path):
    if not _kjit.host_compiler()[1]:
        pytest.skip("no host compiler")
    if not (_torch_bridge.python_include_dir() / "Python.h").exists():
        pytest.skip("Python's C headers are not installed")
    source = tmp_path / "stand_in.cpp"
    source.write_text(STAND_IN_MODULE)
    module_path = tmp_path / "cache" / "one" / f"_torch{sysconfig.get_config_var('EXT_SUFFIX')}"
    run = run_python(["-c", BUILD_AND_LOAD, str(source), str(module_path)],
                     package_without_bridge(tmp_path), tmp_path / "cache")
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout) == ["4.5.6", True, True, str(module_path)]
    assert sorted(p.name for p in module_path.parent.iterdir()) == sorted(["lock", module_path.name])
    if READELF:
        assert run_path(module_path) == []


def test_a_failed_build_keeps_its_log_and_is_not_tried_again(tmp_path):
    module_path = tmp_path / "key" / "_torch.so"
    fail = [sys.executable, "-c", "import sys; sys.exit('kjit-test: no such header')"]
    with pytest.raises(ImportError, match=r"building it failed \(see .*build.log\)"):
        _torch_bridge.build_once(module_path, lambda out: fail)
    log = (module_path.parent / "build.log").read_text()
    assert "kjit-test: no such header" in log and sys.executable in log
    ran = []
    with pytest.raises(ImportError, match="failed before"):
        _torch_bridge.build_once(module_path, lambda out: ran.append(out) or fail)
    assert ran == [] and not module_path.exists()


def test_doctor_line_says_where_the_bridge_came_from(tmp_path):
    describe = _torch_bridge.describe
    via_bridge = "kjit._torch (torch's C++ API)"
    assert describe("2.5.1", via_bridge, Loaded("build", "/site/kjit/_torch.so")) == (
        "torch 2.5.1: tensors through kjit._torch (torch's C++ API), built with kjit")
    cached = str(tmp_path / "torch_bridge" / "k" / "_torch.so")
    assert describe("2.5.1", via_bridge, Loaded("compiled", cached)) == (
        f"torch 2.5.1: tensors through {via_bridge}, built at first use (just now) and cached in "
        f"{tmp_path / 'torch_bridge' / 'k'}")
    assert describe("2.5.1", via_bridge, Loaded("cached", cached)) == (
        f"torch 2.5.1: tensors through {via_bridge}, built at first use and cached in "
        f"{tmp_path / 'torch_bridge' / 'k'}")
    dlpack = "DLPack (kjit._torch: turned off by KJIT_TORCH_BRIDGE=0)"
    assert describe("2.5.1", dlpack, None) == f"torch 2.5.1: tensors through {dlpack}"


def test_doctor_says_why_a_torch_without_headers_goes_through_dlpack(tmp_path):
    stand_in = tmp_path / "stand_in" / "torch"
    stand_in.mkdir(parents=True)
    (stand_in / "__init__.py").write_text(
        '__version__ = "9.9.9"\nclass _C:\n    _GLIBCXX_USE_CXX11_ABI = True\n')
    path = os.pathsep.join([package_without_bridge(tmp_path), str(stand_in.parent)])
    run = run_python(["-m", "kjit", "doctor"], path, tmp_path / "cache")
    assert run.returncode in (0, 1), run.stderr[-3000:]
    reason = "no host compiler" if not _kjit.host_compiler()[1] else (
        f"torch's C++ headers are not in {stand_in / 'include'}")
    assert f"torch 9.9.9: tensors through DLPack (kjit._torch: {reason})" in run.stdout, run.stdout


FIRST_USE = r"""
import json, sys, numpy as np, torch, kjit
from kjit import _kjit, _torch_bridge
k = kjit.metal_kernel(name="twice", input_names=["x"], output_names=["y"],
                      source="uint i = thread_position_in_grid.x; y[i] = 2 * x[i];")
x = torch.arange(100, dtype=torch.float32)
(y,) = k(inputs=[x], output_shapes=[(100,)], output_dtypes=[torch.float32],
         grid=(100, 1, 1), threadgroup=(32, 1, 1), device="cpu")
assert isinstance(y, torch.Tensor) and torch.equal(y, 2 * x), y
from kjit import _torch
print(json.dumps([_kjit.torch_path(), _torch_bridge.loaded.how, _torch.__file__,
                  _torch.torch_version]))
"""


@pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                    reason="torch is not installed: the first-use build of kjit._torch needs it")
def test_a_kjit_built_without_the_bridge_builds_it_at_first_use(tmp_path):
    import torch

    path, cache = package_without_bridge(tmp_path), tmp_path / "cache"
    runs = []
    for _ in range(2):  # the first builds the bridge, the second finds it in the cache
        run = run_python(["-c", FIRST_USE], path, cache, timeout=900)
        assert run.returncode == 0, run.stderr[-3000:]
        runs.append(json.loads(run.stdout))
    (torch_path, how, module_file, version), again = runs
    assert torch_path == "kjit._torch (torch's C++ API)"
    assert how == "compiled" and again[1] == "cached"
    assert pathlib.Path(module_file).parent.parent == cache / "torch_bridge"
    assert again[2] == module_file and version == torch.__version__
    if READELF:
        assert run_path(pathlib.Path(module_file)) == []
    doctor = run_python(["-m", "kjit", "doctor"], path, cache)
    assert (f"torch {torch.__version__}: tensors through kjit._torch (torch's C++ API), built at "
            f"first use and cached in {pathlib.Path(module_file).parent}") in doctor.stdout, (
        doctor.stdout)
