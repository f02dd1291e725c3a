"""The code blocks of the guides run in order, each page as one program, on the GPU where
there is one."""

import importlib.util
import pathlib
import re

import pytest

import conftest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("page, framework, blocks_at_least",
                         [("pytorch.md", "torch", 6), ("jax.md", "jax", 4),
                          ("distributed.md", "numpy", 1), ("getting-started.md", "numpy", 2),
                          ("performance.md", "numpy", 2)])
def test_the_page_runs(page, framework, blocks_at_least, monkeypatch, real_factories):
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    monkeypatch.setattr(conftest, "TEST_DEVICE", None)
    path = DOCS / page
    text = path.read_text()
    blocks = list(re.finditer(r"```python\n(.*?)```", text, re.S))
    assert len(blocks) >= blocks_at_least
    namespace: dict = {}
    for block in blocks:
        # Padded so that a failure's line number is the page's.
        padding = "\n" * text.count("\n", 0, block.start(1))
        exec(compile(padding + block.group(1), str(path), "exec"), namespace)
