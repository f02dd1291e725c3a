"""Command line: `python -m kjit doctor` and `python -m kjit cache info|clear`."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import cast

import kjit
from kjit import _kjit, _torch_bridge


def doctor() -> int:
    """Says which backends work here and, for those that do not, why."""
    print(f"kjit {kjit.__version__}")
    path, cpu_ok = _kjit.host_compiler()
    detail = f"host compiler {path}" if cpu_ok else f"no host compiler ({path!r} not found; set KJIT_CXX)"
    print(f"cpu : {'PASS' if cpu_ok else 'FAIL'}  {detail}")
    cuda = _kjit.cuda_status()
    if cuda["unavailable"]:
        print(f"cuda: FAIL  {cuda['unavailable']}")
    else:
        devices = cast("list[tuple[str, str]]", cuda["devices"])
        names = ", ".join(f"cuda:{i} {name} ({arch})" for i, (name, arch) in enumerate(devices))
        print(f"cuda: PASS  {names}")
    if cuda["driver"]:
        version = cast(int, cuda["driver_version"])
        print(f"      driver {cuda['driver']} (CUDA {version // 1000}.{version % 1000 // 10})")
    if cuda["nvrtc"]:
        print(f"      NVRTC {cuda['nvrtc_version']} from {cuda['nvrtc']}")
    else:
        print(f"      NVRTC {cuda['nvrtc_error']}: CUDA kernels cannot be compiled")
    print(f"default device: {kjit.default_device()}")
    try:
        torch = importlib.import_module("torch")  # typed as a module, with or without its stubs
    except ImportError:
        print("torch: not installed")
    else:
        path = _kjit.torch_path()  # loads kjit._torch, or says why not
        print(_torch_bridge.describe(str(torch.__version__), path, _torch_bridge.loaded))
    try:
        jax = importlib.import_module("jax")
    except ImportError:
        print("jax: not installed")
    else:
        built_for = _kjit.jax_ffi_version()
        if built_for:
            print(f"jax: {jax.__version__}; kjit.jax's XLA FFI handlers built for jax {built_for}")
        else:
            print(f"jax: {jax.__version__}; kjit.jax unavailable: kjit was built without jax "
                  f"(build it again with jax installed)")
    info = kjit.cache_info()
    where = info["directory"] if info["disk_enabled"] else "disabled (memory only)"
    print(f"disk cache: {where}")
    return 0 if cpu_ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kjit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="which backends work, and why not")
    cache = sub.add_parser("cache", help="inspect or empty the compile cache")
    cache.add_argument("action", choices=["info", "clear"])
    args = parser.parse_args(argv)
    if args.command == "doctor":
        return doctor()
    if args.action == "clear":
        kjit.clear_cache()
    print(json.dumps(kjit.cache_info(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
