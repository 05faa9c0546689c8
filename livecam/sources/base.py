"""The Source interface every capture backend implements, and the pacer for self-timed sources."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod

from livecam.types import Frame


class Source(ABC):
    """Produces BGR uint8 frames. Driven by exactly one capture thread.

    ``read`` returns the next frame or raises SourceError (with a fix hint) when the
    device failed; the capture thread then reports an event, calls ``close`` and retries
    ``open`` with a back-off, so an unplugged camera comes back when it is replugged.
    """

    name: str = "source"
    #: True when ``read`` itself waits for the next frame (a camera); False when the
    #: capture thread must pace calls to ``fps`` (files, stills, synthetic, screen).
    self_paced: bool = False

    @property
    @abstractmethod
    def fps(self) -> float:
        """Native frame rate of the source (frames per second)."""

    @abstractmethod
    def open(self) -> None:
        """Acquire the device or file; raise SourceError with a hint on failure."""

    @abstractmethod
    def read(self) -> Frame:
        """Return the next frame (uint8 BGR (H, W, 3)); raise SourceError on failure."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the device. Safe to call twice."""


class Pacer:
    """Waits until the next tick of a fixed-rate clock; never drifts, never bursts."""

    def __init__(self, fps: float) -> None:
        self.period_ns = int(1e9 / fps) if fps > 0 else 0
        self._next_ns = 0

    def wait(self, stop: threading.Event) -> bool:
        """Sleep until the next tick; return False if ``stop`` was set meanwhile."""
        if self.period_ns == 0:
            return not stop.is_set()
        now = time.perf_counter_ns()
        if self._next_ns == 0 or now - self._next_ns > 4 * self.period_ns:
            self._next_ns = now  # first tick, or we fell far behind: restart the clock
        delay = (self._next_ns - now) / 1e9
        self._next_ns += self.period_ns
        if delay > 0:
            return not stop.wait(delay)
        return not stop.is_set()
