"""Timing and reporting helpers shared by the benchmarks."""

from __future__ import annotations

import json
import subprocess
import sys
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


def per_call_each(cases: list[tuple[Callable[[], object], int]], repeats: int = 5,
                  warmup: int = 1, sync: Callable[[], object] = lambda: None) -> list[float]:
    """For each (fn, calls), the best mean time of one call over |repeats| loops of |calls|
    calls, in seconds. The cases take turns loop by loop, so that a slow spell of the machine
    does not fall on one of them. |sync| waits for queued work before and after each loop (host
    time including the device's)."""
    for fn, _ in cases:
        for _ in range(warmup):
            fn()
    best = [float("inf")] * len(cases)
    for _ in range(repeats):
        for i, (fn, calls) in enumerate(cases):
            sync()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            best[i] = min(best[i], (time.perf_counter() - start) / calls)
    return best


def per_call(fn: Callable[[], object], calls: int, repeats: int = 5, warmup: int = 1,
             sync: Callable[[], object] = lambda: None) -> float:
    """per_call_each for one function."""
    return per_call_each([(fn, calls)], repeats, warmup, sync)[0]


def host_per_call(fn: Callable[[], object], sync: Callable[[], object], calls: int = 256,
                  repeats: int = 50) -> float:
    """The host's part of one call, in seconds: the best mean over bursts of |calls| calls short
    enough for the device's launch queue, timed without waiting for the device (|sync| waits
    before each burst)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    sync()
    return best


def child_report(script: str, args: list[str], env: dict) -> dict:
    """Runs |script| in a fresh Python process and returns the JSON it prints."""
    run = subprocess.run([sys.executable, "-c", script, *args], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(run.stdout)


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
