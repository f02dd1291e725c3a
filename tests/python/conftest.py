"""Shared test set-up: a private kernel cache, fresh random data, and poisoned outputs."""

import os
import tempfile

# Before kjit is imported: tests never read or write a user's cache.
os.environ.setdefault("KJIT_CACHE_DIR", tempfile.mkdtemp(prefix="kjit-test-cache-"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng() -> np.random.Generator:
    """A generator seeded afresh for every test (the seed is printed on failure)."""
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"random seed: {seed}")
    return np.random.default_rng(seed)


def poisoned(shape, dtype) -> np.ndarray:
    """An output buffer filled with a value no kernel under test writes (NaN, or -7 for ints)."""
    out = np.empty(shape, dtype=dtype)
    if np.issubdtype(out.dtype, np.floating) or np.issubdtype(out.dtype, np.complexfloating):
        out.fill(np.nan)
    elif out.dtype == np.bool_:
        out.fill(True)
    else:
        out.fill(np.array(-7).astype(out.dtype))
    return out
