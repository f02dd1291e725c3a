"""docs/jax.md's code blocks run in order as one program."""

import pathlib
import re

import pytest

import conftest

pytest.importorskip("jax")

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "jax.md"


def test_the_jax_page_runs(monkeypatch, real_factories):
    monkeypatch.setattr(conftest, "TEST_DEVICE", None)
    text = PAGE.read_text()
    blocks = list(re.finditer(r"```python\n(.*?)```", text, re.S))
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        # Padded so that a failure's line number is the page's.
        padding = "\n" * text.count("\n", 0, block.start(1))
        exec(compile(padding + block.group(1), str(PAGE), "exec"), namespace)
