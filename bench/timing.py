"""Shared by the benchmark scripts: the median time of a call, and a default portrait."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def median_ms(fn: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    """The median wall time of ``fn`` in ms over ``repeats`` calls, after ``warmup`` calls
    (``fn`` must return only when its work is done)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def default_face() -> Path:
    """The Obama portrait of the test data (``$LIVECAM_TESTDATA`` or ``../shared/testdata``
    beside the checkout), else a bundled portrait."""
    env = os.environ.get("LIVECAM_TESTDATA")
    roots = ([Path(env)] if env else []) + [p / "shared" / "testdata" for p in REPO.parents]
    for root in roots:
        path = root / "faces" / "obama_official_portrait_2012.jpg"
        if path.is_file():
            return path
    assets = sorted((REPO / "assets").glob("*.jpg"))
    if assets:
        return assets[0]
    raise SystemExit("no portrait found: pass --face PATH")
