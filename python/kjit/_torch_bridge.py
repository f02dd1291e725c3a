"""kjit._torch, the module that reads and makes torch tensors through torch's C++ API.

torch's C++ API has no stable ABI, so the module serves only the torch it was compiled against.
A build of kjit whose Python had torch holds one for that torch. Any other (a wheel built in
pip's isolated environment, where torch is hidden) compiles it here at first use, against the
running torch, with kjit's host compiler, from the sources shipped in the package; the result is
kept in kjit's disk cache under a key of everything it depends on. It links torch's libraries by
name and carries no run path: they are loaded with torch, which is imported first, and the
dynamic loader uses those already in the process.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import types
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Literal

MODULE = "kjit._torch"
SOURCE_DIR = Path(__file__).parent / "_torch_src"
# torch's libraries the module calls into, as the in-tree build links them.
TORCH_LIBRARIES = ("torch_python", "torch_cpu", "c10")
# How long a compile may take: torch's headers are large.
COMPILE_TIMEOUT_S = 900


@dataclass(frozen=True)
class BridgeKey:
    """Everything a compiled kjit._torch depends on; a change of any one means another build."""

    torch_version: str
    cxx11_abi: int  # torch's _GLIBCXX_USE_CXX11_ABI
    kjit_version: str
    compiler: str  # the host compiler: its file, size and mtime
    python_abi: str  # the extension suffix, e.g. ".cpython-312-x86_64-linux-gnu.so"
    sources: str  # a digest of the shipped sources

    def digest(self) -> str:
        """A short hash of the key, to name its directory with."""
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def directory(self, cache_dir: Path) -> Path:
        """Where the module built for this key lives in the disk cache at |cache_dir|."""
        version = "".join(c if c.isalnum() or c in ".+-" else "_" for c in self.torch_version)
        return cache_dir / "torch_bridge" / f"torch-{version}-{self.digest()}"

    def module_path(self, cache_dir: Path) -> Path:
        """The compiled module's file for this key."""
        return self.directory(cache_dir) / f"_torch{self.python_abi}"


@dataclass(frozen=True)
class Loaded:
    """Where the kjit._torch of this process came from."""

    how: Literal["build", "compiled", "cached"]  # kjit's build; compiled now; from the cache
    path: str


# Set once load() has found the module.
loaded: Loaded | None = None


def sources_digest(source_dir: Path = SOURCE_DIR) -> str:
    """A digest of every file under |source_dir|, names and contents."""
    h = hashlib.sha256()
    for f in sorted(p for p in source_dir.rglob("*") if p.is_file()):
        h.update(f.relative_to(source_dir).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def compiler_identity(path: str) -> str:
    """The file |path| leads to, its size and mtime, as kjit's CPU backend keys its builds."""
    resolved = os.path.realpath(path)
    st = os.stat(resolved)
    return f"{resolved} {st.st_size} {int(st.st_mtime)}"


def python_include_dir() -> Path:
    """Where this Python's C headers are (they may be absent: Debian's python3-dev)."""
    return Path(sysconfig.get_paths()["include"])


def compile_command(compiler: str, source: Path, output: Path, include_dirs: list[Path],
                    system_include_dirs: list[Path], library_dirs: list[Path],
                    libraries: tuple[str, ...], defines: dict[str, str]) -> list[str]:
    """The host compiler's command that builds the Python extension |output| from |source|.

    No run path is written: the libraries are found among those already loaded."""
    cmd = [compiler, "-std=c++20", "-O2", "-fPIC", "-shared", "-w"]
    cmd += [f"-D{name}={value}" for name, value in defines.items()]
    cmd += [f"-I{d}" for d in include_dirs]
    for d in system_include_dirs:
        cmd += ["-isystem", str(d)]
    cmd += [str(source), "-o", str(output)]
    cmd += [f"-L{d}" for d in library_dirs]
    cmd += [f"-l{name}" for name in libraries]
    return cmd


def build_once(module_path: Path, command_for: Callable[[Path], list[str]]) -> None:
    """Runs command_for(output), which compiles the module to |output|, and moves the result to
    |module_path|, unless another process has built it meanwhile. A failed build leaves its log
    where the module would be and is not tried again: raises ImportError naming the log."""
    directory = module_path.parent
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "build.log"
    with open(directory / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per key at a time, across processes
        if module_path.exists():
            return
        if log.exists():
            raise ImportError(f"building it failed before (see {log}; remove {directory} to try "
                              "again)")
        tmp = module_path.with_name(f"{module_path.name}.{os.getpid()}.tmp")
        command = command_for(tmp)
        try:
            run = subprocess.run(command, capture_output=True, text=True,
                                 timeout=COMPILE_TIMEOUT_S)
            failed = run.returncode != 0
            output = run.stdout + run.stderr
        except (OSError, subprocess.TimeoutExpired) as e:
            failed, output = True, str(e)
        if failed:
            log.write_text(" ".join(command) + "\n\n" + output)
            tmp.unlink(missing_ok=True)
            raise ImportError(f"building it failed (see {log})")
        os.replace(tmp, module_path)


def import_extension(path: Path) -> types.ModuleType:
    """Imports the extension module at |path| as kjit._torch."""
    loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
    spec = importlib.util.spec_from_file_location(MODULE, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE] = module
    try:
        loader.exec_module(module)
    except BaseException:
        del sys.modules[MODULE]
        raise
    setattr(sys.modules["kjit"], "_torch", module)
    return module


def first_use_key(torch: types.ModuleType, compiler: str) -> BridgeKey:
    """The key of the module built at first use for |torch| with |compiler|."""
    import kjit

    return BridgeKey(torch_version=str(torch.__version__),
                     cxx11_abi=int(torch._C._GLIBCXX_USE_CXX11_ABI),
                     kjit_version=kjit.__version__, compiler=compiler_identity(compiler),
                     python_abi=str(sysconfig.get_config_var("EXT_SUFFIX")),
                     sources=sources_digest())


def build_at_first_use() -> tuple[types.ModuleType, Loaded]:
    """kjit._torch for the running torch, from the disk cache or compiled into it now."""
    torch = importlib.import_module("torch")  # typed as a module, with or without torch's stubs

    import kjit
    from kjit import _kjit

    compiler, found = _kjit.host_compiler()
    if not found:
        raise ImportError(f"no host compiler to build it ({compiler!r} not found; set KJIT_CXX)")
    info = kjit.cache_info()
    if not info["disk_enabled"]:
        raise ImportError("the disk cache, where it would be built, is disabled")
    torch_dir = Path(str(torch.__file__)).parent
    key = first_use_key(torch, compiler)
    module_path = key.module_path(Path(str(info["directory"])))
    how: Literal["compiled", "cached"] = "cached"
    if not module_path.exists():
        if not (torch_dir / "include" / "ATen" / "core" / "Tensor.h").exists():
            raise ImportError(f"torch's C++ headers are not in {torch_dir / 'include'}")
        if not (python_include_dir() / "Python.h").exists():
            raise ImportError(f"Python's C headers are not in {python_include_dir()}")
        build_once(module_path, lambda output: compile_command(
            compiler, SOURCE_DIR / "torch_module.cpp", output,
            include_dirs=[SOURCE_DIR, SOURCE_DIR / "include"],
            system_include_dirs=[python_include_dir(), torch_dir / "include",
                                 torch_dir / "include" / "torch" / "csrc" / "api" / "include"],
            library_dirs=[torch_dir / "lib"], libraries=TORCH_LIBRARIES,
            defines={"KJIT_TORCH_VERSION": json.dumps(key.torch_version),
                     "_GLIBCXX_USE_CXX11_ABI": str(key.cxx11_abi)}))
        how = "compiled"
    return import_extension(module_path), Loaded(how, str(module_path))


def load() -> types.ModuleType:
    """kjit._torch for the running torch, importing torch first; kjit's module calls this when it
    first meets a torch tensor. The module of kjit's own build is the one used where there is one
    (it refuses another torch than its own); else the one built at first use. Raises ImportError
    saying why when neither can be had: kjit then reads torch tensors through DLPack."""
    global loaded
    importlib.import_module("torch")  # its libraries must be loaded before kjit._torch's

    try:
        module = importlib.import_module(MODULE)
        how: Loaded = Loaded("build", str(module.__file__))
    except ModuleNotFoundError as e:
        if e.name != MODULE:
            raise
        module, how = build_at_first_use()
    loaded = how
    return module


def describe(torch_version: str, path: str, how: Loaded | None) -> str:
    """The doctor's line on torch: the path tensors take (kjit's torch_path()), and where
    kjit._torch came from when it serves."""
    line = f"torch {torch_version}: tensors through {path}"
    if how is None or not path.startswith("kjit._torch"):
        return line
    if how.how == "build":
        return f"{line}, built with kjit"
    now = " (just now)" if how.how == "compiled" else ""
    return f"{line}, built at first use{now} and cached in {Path(how.path).parent}"
