"""Timing every benchmark shares: the best of several runs of a function."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def best_of(repeats: int, fn: Callable[[], T]) -> tuple[float, T]:
    """Run ``fn`` ``repeats`` times; return the fastest run in seconds and the last result.

    A full collection runs before each run, off the clock, so that garbage one run left
    is not collected on the next one's time.
    """
    times: list[float] = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result
