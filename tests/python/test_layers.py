"""The source folders' layering: which folder's files may include which, and no cycle.

support < codegen < cache < core < backend/<target> < the backend table; the Python binding sees
the core, never a backend. A file includes its own folder's headers freely.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

# What each folder may include besides itself.
ALLOWED: dict[str, set[str]] = {
    "support": set(),
    "codegen": {"support", "prelude"},
    "cache": {"support"},
    "core": {"support", "codegen", "cache", "prelude"},
    "backend/cpu": {"support", "codegen", "cache", "core", "prelude"},
    "backend/cuda": {"support", "codegen", "cache", "core", "prelude"},
    "backend/no_cuda": {"support", "codegen", "cache", "core"},
    "backend": {"support", "codegen", "cache", "core", "backend/cpu", "backend/cuda",
                "backend/no_cuda"},
    "binding": {"support", "codegen", "cache", "core"},
}


def folder_of(path: Path) -> str:
    """The layer of a source file: its folder under src/, or 'binding' for python/src."""
    if path.is_relative_to(ROOT / "python" / "src"):
        return "binding"
    parts = path.relative_to(ROOT / "src").parts[:-1]
    if parts[:1] == ("backend",) and len(parts) > 1:
        return "/".join(parts[:2])
    return parts[0]


def included_folder(include: str, including: Path) -> str | None:
    """The layer an include names, or None for one of the binding's own headers."""
    if "prelude/" in include:
        return "prelude"
    if including.is_relative_to(ROOT / "python" / "src") and (including.parent / include).exists():
        return "binding"
    target = ROOT / "src" / include
    assert target.exists(), f"{including.relative_to(ROOT)} includes {include}, not under src/"
    return folder_of(target)


def edges() -> dict[str, dict[str, list[str]]]:
    """For each layer, the layers it includes, with the includes that make each edge."""
    found: dict[str, dict[str, list[str]]] = {}
    sources = [*(ROOT / "src").rglob("*"), *(ROOT / "python" / "src").rglob("*")]
    for path in sources:
        if path.suffix not in (".h", ".cpp"):
            continue
        src = folder_of(path)
        for include in INCLUDE.findall(path.read_text()):
            dst = included_folder(include, path)
            if dst is None or dst == src:
                continue
            found.setdefault(src, {}).setdefault(dst, []).append(
                f"{path.relative_to(ROOT)}: {include}")
    return found


def test_every_include_goes_down_a_layer() -> None:
    bad = [
        why
        for src, targets in edges().items()
        for dst, whys in targets.items()
        if dst not in ALLOWED[src]
        for why in whys
    ]
    assert not bad, "includes across the layering:\n" + "\n".join(sorted(bad))


def test_no_folder_includes_another_in_a_cycle() -> None:
    graph = {src: set(targets) for src, targets in edges().items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                pytest.fail("include cycle: " + " -> ".join([*path, node, nxt]))
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_the_check_sees_a_backend_include_in_the_core(tmp_path: Path) -> None:
    # The rules themselves: a core file including a backend header is refused.
    assert "backend/cuda" not in ALLOWED["core"] and "backend/cpu" not in ALLOWED["binding"]
    assert folder_of(ROOT / "src" / "backend" / "cuda" / "cuda_backend.h") == "backend/cuda"
    assert included_folder("backend/cuda/cuda_backend.h", ROOT / "src" / "core" / "x.cpp") == (
        "backend/cuda")
