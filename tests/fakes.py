"""Test doubles shared by the tests: stand-in stages and sinks with one behaviour each (a
pass-through, a slow one, one that fails on the n-th frame, one that keeps every frame).
They replace only what a test has to control; the real app, threads, rings and models run
around them."""

from __future__ import annotations

import threading
import time

from livecam.runtime.providers import Providers
from livecam.sinks.null import NullSink
from livecam.types import Frame, FramePacket, PlainStage


class PassStage(PlainStage):
    """A pipeline stage that hands every batch on unchanged; ``closed`` once closed.
    Subclasses override what they test."""

    name = "pass"
    required = False
    providers: Providers | None = None  # the models it runs (none)

    def __init__(self) -> None:
        self.closed = False

    def warmup(self, width: int, height: int) -> None: ...

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        return batch

    def close(self) -> None:
        self.closed = True


class SlowStage(PassStage):
    """A pass-through that takes ``process_s`` per batch (a model slower than the camera)
    and ``warmup_s`` to warm up (model loading, say)."""

    name = "slow"

    def __init__(self, process_s: float = 0.0, warmup_s: float = 0.0) -> None:
        super().__init__()
        self.process_s, self.warmup_s = process_s, warmup_s

    def warmup(self, width: int, height: int) -> None:
        time.sleep(self.warmup_s)

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        time.sleep(self.process_s)
        return batch


class FailingSink(NullSink):
    """A null sink whose ``fail_on``-th send raises ``error`` (after counting the frame), and
    whose close raises ``close_error`` when given."""

    def __init__(
        self,
        error: Exception,
        fail_on: int = 3,
        name: str = "failing",
        close_error: Exception | None = None,
    ) -> None:
        super().__init__()
        self.name, self.error, self.fail_on, self.close_error = name, error, fail_on, close_error

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        super().send(frame, t_capture_ns)
        if self.frames == self.fail_on:
            raise self.error

    def close(self) -> None:
        if self.close_error is not None:
            raise self.close_error


class KeepingSink(NullSink):
    """A null sink that also keeps a copy of every frame it gets (``kept``, in order; the
    output thread sends from its own thread, so ``kept`` is guarded by ``lock``)."""

    name = "keeping"

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[Frame] = []
        self.lock = threading.Lock()

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        super().send(frame, t_capture_ns)
        with self.lock:
            self.kept.append(frame.copy())
