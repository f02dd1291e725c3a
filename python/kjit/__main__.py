"""Command line: `python -m kjit --version`, `python -m kjit doctor [--json]` and
`python -m kjit cache info|clear`."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import cast

import kjit
from kjit import _kjit, _torch_bridge

# A backend is "pass" (it runs kernels here), "not available" (absent by design: no GPU, no
# driver, built without it) or "fail" (present and broken); only "fail" makes doctor exit 1.
PASS, ABSENT, FAIL = "pass", "not available", "fail"
_LABELS = {PASS: "PASS", ABSENT: "not available", FAIL: "FAIL"}


def _cpu_report() -> dict[str, object]:
    path, found = _kjit.host_compiler()
    detail = f"host compiler {path}" if found else f"no host compiler ({path!r} not found; set KJIT_CXX)"
    return {"status": PASS if found else FAIL, "detail": detail, "compiler": path}


def _cuda_report() -> dict[str, object]:
    cuda = _kjit.cuda_status()
    devices = cast("list[tuple[str, str]]", cuda["devices"])
    if cuda["unavailable"]:
        status, detail = (ABSENT if cuda["absent"] else FAIL), str(cuda["unavailable"])
    elif not cuda["nvrtc"]:
        # A GPU kjit cannot compile for is a broken install, not a missing backend.
        status, detail = FAIL, f"NVRTC {cuda['nvrtc_error']}: CUDA kernels cannot be compiled"
    else:
        status = PASS
        detail = ", ".join(f"cuda:{i} {name} ({arch})" for i, (name, arch) in enumerate(devices))
    lines = []
    if cuda["driver"]:
        version = cast(int, cuda["driver_version"])
        lines.append(f"driver {cuda['driver']} (CUDA {version // 1000}.{version % 1000 // 10})")
    if cuda["nvrtc"]:
        lines.append(f"NVRTC {cuda['nvrtc_version']} from {cuda['nvrtc']}")
    elif not detail.startswith("NVRTC"):  # not said already
        lines.append(f"NVRTC {cuda['nvrtc_error']}: CUDA kernels cannot be compiled")
    return {"status": status, "detail": detail, "notes": lines,
            "devices": [{"name": name, "architecture": arch} for name, arch in devices],
            **{k: v for k, v in cuda.items() if k != "devices"}}


def _framework_lines() -> dict[str, str]:
    out = {}
    try:
        torch = importlib.import_module("torch")  # typed as a module, with or without its stubs
    except ImportError:
        out["torch"] = "torch: not installed"
    else:
        path = _kjit.torch_path()  # loads kjit._torch, or says why not
        out["torch"] = _torch_bridge.describe(str(torch.__version__), path, _torch_bridge.loaded)
    try:
        jax = importlib.import_module("jax")
    except ImportError:
        out["jax"] = "jax: not installed"
    else:
        built_for = _kjit.jax_ffi_version()
        if built_for:
            out["jax"] = f"jax: {jax.__version__}; kjit.jax's XLA FFI handlers built for jax {built_for}"
        else:
            out["jax"] = (f"jax: {jax.__version__}; kjit.jax unavailable: kjit was built without jax "
                          f"(build it again with jax installed)")
    return out


def report() -> dict[str, object]:
    """What doctor found, as JSON-ready values."""
    return {"version": kjit.__version__, "cpu": _cpu_report(), "cuda": _cuda_report(),
            "default_device": str(kjit.default_device()), "frameworks": _framework_lines(),
            "cache": kjit.cache_info()}


def doctor(as_json: bool) -> int:
    """Says which backends work here and, for those that do not, why; 1 when one is broken."""
    found = report()
    backends = [cast("dict[str, object]", found[name]) for name in ("cpu", "cuda")]
    code = 1 if any(b["status"] == FAIL for b in backends) else 0
    if as_json:
        print(json.dumps(found, indent=2))
        return code
    print(f"kjit {found['version']}")
    for name, backend in zip(("cpu ", "cuda"), backends):
        print(f"{name}: {_LABELS[str(backend['status'])]}  {backend['detail']}")
    for line in cast("list[str]", backends[1]["notes"]):
        print(f"      {line}")
    print(f"default device: {found['default_device']}")
    for line in cast("dict[str, str]", found["frameworks"]).values():
        print(line)
    info = cast("dict[str, object]", found["cache"])
    print(f"disk cache: {info['directory'] if info['disk_enabled'] else 'disabled (memory only)'}")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kjit", description=__doc__)
    parser.add_argument("--version", action="version", version=f"kjit {kjit.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    doctor_parser = sub.add_parser("doctor", help="which backends work, and why not")
    doctor_parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    cache = sub.add_parser("cache", help="inspect or empty the compile cache")
    cache.add_argument("action", choices=["info", "clear"])
    args = parser.parse_args(argv)
    if args.command == "doctor":
        return doctor(args.json)
    if args.action == "clear":
        kjit.clear_cache()
    print(json.dumps(kjit.cache_info(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
