"""Timing and reporting helpers shared by the benchmarks."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np


def best_of(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of |repeats| timed runs after one warm-up, in seconds."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def device_time(fn: Callable[[], object], repeats: int = 20) -> float:
    """Median GPU time of one call on torch's current stream, in seconds (CUDA events)."""
    import torch

    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return float(np.median(times))


def comparison_table(rows: list[tuple[str, str, str, str, str]]) -> None:
    """Prints rows of (what, kjit's time, what it is compared with, its time, ratio)."""
    header = ("what", "kjit", "against", "time", "ratio (>1: kjit faster)")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
