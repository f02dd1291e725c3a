"""The documentation site builds with `mkdocs build --strict` (a broken link or anchor, or a
docstring mkdocstrings cannot read, is an error), links every guide from its index, and its API
page shows the docstrings of the main entry points, read here from the sources themselves."""

import ast
import html
import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                                reason="mkdocs is not installed")

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PACKAGE = ROOT / "python" / "kjit"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                            "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def _page_text(page: pathlib.Path) -> str:
    """A page's text without its markup, its whitespace runs as single spaces."""
    text = re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))
    return " ".join(html.unescape(text).split())


def _docstring(file: str, *path: str) -> str:
    """The docstring of the function or class at |path| in |file| of python/kjit, parsed
    here with ast: its first paragraph, as the page shows its text (no ``code`` marks)."""
    node: ast.AST = ast.parse((PACKAGE / file).read_text(encoding="utf-8"))
    for name in path:
        # The last definition of the name: an overloaded function's @overload stubs come first.
        node = [child for child in ast.iter_child_nodes(node)
                if isinstance(child, (ast.FunctionDef, ast.ClassDef)) and child.name == name][-1]
    assert isinstance(node, (ast.FunctionDef, ast.ClassDef))
    docstring = ast.get_docstring(node)
    assert docstring, f"{file}: {'.'.join(path)} has no docstring"
    return " ".join(docstring.split("\n\n")[0].replace("``", "").split())


def test_every_guide_becomes_a_page(site):
    for guide in DOCS.glob("*.md"):
        page = site / ("index.html" if guide.stem == "index" else f"{guide.stem}/index.html")
        assert page.exists(), f"{guide.name} was not built"


def test_the_index_links_every_guide():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    assert linked == {guide.name for guide in DOCS.glob("*.md")} - {"index.md"}


@pytest.mark.parametrize("file, path", [
    ("_earlier_api.py", ("metal_kernel",)),
    ("_kjit.pyi", ("cuda_kernel",)),
    ("_kjit.pyi", ("Kernel", "__call__")),
    ("_kjit.pyi", ("Kernel", "bind")),
    ("_kjit.pyi", ("Kernel", "build")),
    ("_kjit.pyi", ("BoundKernel", "__call__")),
    ("torch.py", ("KernelOp",)),
    ("jax.py", ("op",)),
], ids=lambda value: ".".join(value) if isinstance(value, tuple) else value)
def test_the_api_page_shows_the_docstring(site, file, path):
    assert _docstring(file, *path) in _page_text(site / "api" / "index.html")


def test_the_api_page_has_an_entry_for_each_name(site):
    page = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("kjit.metal_kernel", "kjit.cuda_kernel", "kjit.Kernel", "kjit.Kernel.__call__",
                 "kjit.Kernel.bind", "kjit.BoundKernel", "kjit.torch.op", "kjit.torch.KernelOp",
                 "kjit.jax.op", "kjit.Array", "kjit.CompileError"):
        assert f'id="{name}"' in page, name
