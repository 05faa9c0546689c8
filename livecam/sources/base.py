"""The Source interface every capture backend implements, and the pacer for self-timed sources."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from pathlib import Path

from livecam.errors import LivecamError
from livecam.types import Frame


class EndOfStream(Exception):
    """Raised by ``read`` of a finite source after its last frame: the run then ends."""


class Source(ABC):
    """Produces BGR uint8 frames. Driven by exactly one capture thread.

    ``read`` returns the next frame or raises SourceError (with a fix hint) when the
    device failed; the capture thread then reports an event, calls ``close`` and retries
    ``open`` with a back-off, so an unplugged camera comes back when it is replugged. A
    finite source (a video file played once) raises EndOfStream after its last frame.
    """

    name: str = "source"
    #: True when ``read`` itself waits for the next frame (a camera); False when the
    #: capture thread must pace calls to ``fps`` (files, stills, synthetic, screen).
    self_paced: bool = False
    #: True when the source ends by itself (a video file played once)
    finite: bool = False
    #: True when every frame is the same picture (a still photo)
    still: bool = False
    #: the media file the frames come from (a video file), e.g. for its audio
    media_path: Path | None = None

    @property
    def frame_count(self) -> int | None:
        """How many frames the source will deliver, when known (after ``open``)."""
        return None

    @property
    def media_ns(self) -> int | None:
        """The timestamp in its file of the frame the last ``read`` returned (ns from the
        file's first frame); None for live sources."""
        return None

    def take_notices(self) -> list[LivecamError]:
        """Problems noticed since the last call that did not stop the source (a truncated
        file); the capture thread reports each once as a warning event."""
        return []

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
    """Waits until the next tick of a fixed-rate clock; never drifts while it keeps up,
    never bursts.

    A tick already past when ``wait`` is called (the last frame took longer than a
    period: a slow read, a loaded machine) is not caught up: the clock restarts then.
    Catching up would hand out the missed ticks' frames back to back, stamped a few
    microseconds apart, and a recording keeps at most one frame a period of its grid
    (``livecam.sinks.recording.timeline``): it left out all but about two frames of each
    such burst (237 of 16,269 frames of a 10-minute 720p synthetic run at load 8).
    """

    def __init__(self, fps: float) -> None:
        self.period_ns = int(1e9 / fps) if fps > 0 else 0
        self._next_ns = 0

    def wait(self, stop: threading.Event) -> bool:
        """Sleep until the next tick; return False if ``stop`` was set meanwhile."""
        if self.period_ns == 0:
            return not stop.is_set()
        now = time.perf_counter_ns()
        if self._next_ns == 0 or now > self._next_ns:
            self._next_ns = now  # first tick, or a tick missed: restart the clock
        delay = (self._next_ns - now) / 1e9
        self._next_ns += self.period_ns
        if delay > 0:
            return not stop.wait(delay)
        return not stop.is_set()
