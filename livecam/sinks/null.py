"""A sink that only counts frames (tests, benchmarks, headless runs)."""

from __future__ import annotations

from livecam.sinks.base import Sink
from livecam.types import Frame


class NullSink(Sink):
    """Counts the frames it gets and keeps a reference to the last one.

    ``wants_repeats`` is False, so ``frames`` counts unique frames produced by the
    pipeline (what benchmarks measure), never the output thread's repeats.
    """

    name = "null"
    wants_repeats = False

    def __init__(self) -> None:
        self.frames = 0
        self.size: tuple[int, int] | None = None
        self.fps: float | None = None
        self.last_frame: Frame | None = None
        self.last_t_capture_ns: int | None = None

    def open(self, width: int, height: int, fps: float) -> None:
        self.size = (width, height)
        self.fps = fps

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        self.frames += 1
        self.last_frame = frame
        self.last_t_capture_ns = t_capture_ns
