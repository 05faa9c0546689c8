"""Builds source, ring, stages and sinks from a Config, and runs the four-thread pipeline."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from livecam.buffer import RingBuffer
from livecam.capture import CaptureWorker
from livecam.config import Config
from livecam.errors import LivecamError, SourceError, StartupError
from livecam.output import OutputWorker
from livecam.pipeline.debug import FaceBoxStage, PassThroughStage
from livecam.pipeline.runner import InferenceWorker
from livecam.pipeline.stage import Stage
from livecam.runtime.gpu import NvmlReader
from livecam.sinks import make_sinks
from livecam.sinks.base import Sink
from livecam.sources import make_source
from livecam.telemetry import Snapshot, Telemetry
from livecam.types import FramePacket

log = logging.getLogger(__name__)

FIRST_FRAME_TIMEOUT_S = 10.0
T = TypeVar("T")


def build_stages(config: Config) -> list[Stage]:
    """Create the configured stages in order (each may raise a LivecamError)."""
    stages: list[Stage] = []
    for name in config.pipeline.stages:
        if name == "passthrough":
            stages.append(PassThroughStage())
        elif name == "facebox":
            stages.append(FaceBoxStage(config.pipeline.yunet_model))
        elif name == "swap":
            from livecam.pipeline.swap import build_swap_stage

            stages.append(build_swap_stage(config.swap))
    return stages


class App:
    """The running pipeline: ``start`` (raises StartupError listing every cause), ``wait``,
    ``stop`` (joins every thread within about two seconds), ``snapshot`` for telemetry."""

    def __init__(
        self,
        config: Config,
        *,
        telemetry: Telemetry | None = None,
        stages: list[Stage] | None = None,
        sinks: list[Sink] | None = None,
    ) -> None:
        self.config = config
        self._gpu = NvmlReader() if telemetry is None else None  # closed by stop/_abort
        self.telemetry = telemetry or Telemetry(gpu_reader=self._gpu)
        self._stages = stages
        self._sinks = sinks
        self._stop = threading.Event()
        self._workers: list[CaptureWorker | InferenceWorker | OutputWorker] = []
        self._output: OutputWorker | None = None
        self.frame_size: tuple[int, int] | None = None

    def start(self) -> None:
        """Open everything and start the threads; on any problem, clean up and raise."""
        cfg = self.config
        causes: list[LivecamError] = []
        source = _collect(causes, lambda: make_source(cfg.source))
        stages = (
            self._stages
            if self._stages is not None
            else _collect(causes, lambda: build_stages(cfg))
        )
        sinks = (
            self._sinks
            if self._sinks is not None
            else _collect(causes, lambda: make_sinks(cfg.output.sinks, cfg.output))
        )
        if causes or source is None or stages is None or sinks is None:
            raise StartupError(causes)

        ring: RingBuffer[FramePacket] = RingBuffer(cfg.buffer.capacity, cfg.buffer.lossless)
        slot: RingBuffer[FramePacket] = RingBuffer(1, cfg.buffer.lossless)
        self.telemetry.count_drops_from(lambda: ring.dropped + slot.dropped)
        capture = CaptureWorker(
            source,
            ring,
            self._stop,
            self.telemetry,
            paced=not cfg.source.unpaced,
            size=cfg.source.size,
            max_frames=cfg.run.frames,
            reopen_interval_s=cfg.source.reopen_interval_s,
        )
        capture.start()
        if not capture.ready.wait(FIRST_FRAME_TIMEOUT_S):
            causes.append(
                SourceError(
                    f"source '{cfg.source.spec}' delivered no frame within "
                    f"{FIRST_FRAME_TIMEOUT_S:.0f} s",
                    "check that the device works in another app, or run `livecam doctor`",
                )
            )
        elif capture.startup_error is not None:
            causes.append(capture.startup_error)
        if causes or capture.size is None:
            self._abort(capture, [])
            raise StartupError(causes)
        self.frame_size = width, height = capture.size
        fps = cfg.output.fps or source.fps

        opened: list[Sink] = []
        for sink in sinks:
            try:
                sink.open(width, height, fps)
                opened.append(sink)
            except LivecamError as e:
                causes.append(e)
        for stage in stages:
            try:
                stage.warmup(width, height)
            except LivecamError as e:
                causes.append(e)
        if causes:
            self._abort(capture, opened)
            raise StartupError(causes)

        inference = InferenceWorker(
            stages, ring, slot, self._stop, self.telemetry, cfg.buffer.batch_limit
        )
        self._output = OutputWorker(
            opened, slot, self._stop, self.telemetry, fps, repeat=not cfg.source.unpaced
        )
        self._workers = [capture, inference, self._output]
        inference.start()
        self._output.start()
        log.info("running %dx%d at %.1f fps: %s", width, height, fps, self.describe())

    def describe(self) -> str:
        cfg = self.config
        return (
            f"source={cfg.source.spec} stages={','.join(cfg.pipeline.stages)} "
            f"sinks={','.join(cfg.output.sinks)}"
        )

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the stream ends by itself (``--frames``) or ``stop``; True if it ended."""
        if self._output is None:
            return True
        return self._output.finished.wait(timeout)

    @property
    def running(self) -> bool:
        return self._output is not None and not self._output.finished.is_set()

    def stop(self, timeout_s: float = 2.0) -> list[str]:
        """Stop and join every thread (output first); return names of threads that hung."""
        self._stop.set()
        per_thread = timeout_s / max(len(self._workers), 1)
        hung = []
        for worker in reversed(self._workers):
            worker.join(per_thread)
            if worker.is_alive():
                hung.append(worker.name)
                log.warning("%s did not stop within %.1f s", worker.name, per_thread)
        if self._gpu is not None:
            self._gpu.close()
        return hung

    def snapshot(self, recent: bool = False) -> Snapshot:
        return self.telemetry.snapshot(recent)

    def _abort(self, capture: CaptureWorker, sinks: list[Sink]) -> None:
        self._stop.set()
        if self._gpu is not None:
            self._gpu.close()
        capture.join(2.0)
        for sink in sinks:
            try:
                sink.close()
            except Exception as e:
                log.warning("closing %s failed: %r", sink.name, e)


def _collect(causes: list[LivecamError], action: Callable[[], T]) -> T | None:
    """Run ``action``; on a LivecamError, append it to ``causes`` and return None."""
    try:
        return action()
    except LivecamError as e:
        causes.append(e)
        return None
