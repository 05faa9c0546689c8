"""The meters behind ``Telemetry``: frame rates, face counts and percentiles (not
thread-safe on their own: the hub reads and feeds them under its lock)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Percentiles:
    p50: float
    p99: float

    @staticmethod
    def of(values: list[float]) -> Percentiles | None:
        if not values:
            return None
        p50, p99 = np.percentile(np.asarray(values, dtype=np.float64), [50, 99])
        return Percentiles(round(float(p50), 3), round(float(p99), 3))


class RateMeter:
    """Counts frames; reports the rate over the whole run or over a window ending now."""

    def __init__(self, window_ns: int) -> None:
        self.count = 0
        self.first_ns = 0
        self.first_n = 0
        self.last_ns = 0
        self.window_ns = window_ns
        self._recent: deque[tuple[int, int]] = deque()  # (t_ns, n) within the window

    def tick(self, t_ns: int, n: int = 1) -> None:
        if self.count == 0:
            self.first_ns, self.first_n = t_ns, n
        self.count += n
        self.last_ns = t_ns
        self._recent.append((t_ns, n))
        self._prune(t_ns)

    def _prune(self, now_ns: int) -> None:
        while self._recent and self._recent[0][0] <= now_ns - self.window_ns:
            self._recent.popleft()

    def run_rate(self) -> float:
        """Frames per second between the first and the last frame of the run."""
        if self.count < 2 or self.last_ns <= self.first_ns:
            return 0.0
        return (self.count - self.first_n) * 1e9 / (self.last_ns - self.first_ns)

    def recent_rate(self, now_ns: int) -> float:
        """Frames per second over the window ending at ``now_ns``: 0 once frames stop.

        Until one window has passed since the first frame, the frames after the first
        over the time since it.
        """
        elapsed = now_ns - self.first_ns
        if self.count == 0 or elapsed <= 0:
            return 0.0
        if elapsed < self.window_ns:
            return (self.count - self.first_n) * 1e9 / elapsed
        self._prune(now_ns)
        return sum(n for _, n in self._recent) * 1e9 / self.window_ns


@dataclass
class FaceCounts:
    """Face counters over the sent frames the swap stage worked on."""

    frames: int = 0
    found: int = 0
    swapped: int = 0
    frames_swapped: int = 0
    reused: int = 0
    now: tuple[int, int] | None = None

    def add(self, found: int, swapped: int, reused: int = 0) -> None:
        self.frames += 1
        self.found += found
        self.swapped += swapped
        self.reused += reused
        self.frames_swapped += swapped > 0
        self.now = (found, swapped)
