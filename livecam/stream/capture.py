"""The capture thread: reads a Source, stamps packets, pushes them into the ring buffer."""

from __future__ import annotations

import threading
import time

import cv2
import numpy as np

from livecam.errors import (
    FrameFormatError,
    LivecamError,
    SourceError,
    SourceGone,
    as_livecam_error,
    one_line,
)
from livecam.sources.base import EndOfStream, Pacer, Source
from livecam.stream.ring import RingBuffer
from livecam.stream.worker import Worker
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, Frame, FramePacket, validate_frame


class CaptureWorker(Worker):
    """Owns the source: opens, reads, paces, stamps ``seq``/``t_capture_ns`` (and the
    file timestamp ``t_media_ns`` of video files), pushes.

    The first open and first frame happen on this thread (some capture APIs are
    thread-bound); ``ready`` is set once the first frame is in the ring or the first
    open failed (``startup_error``). With ``wait_for_go``, the next frames are read only
    once ``go`` is set (the app sets it when the pipeline runs), so no frame is captured
    and dropped while the stages warm up. Later failures are events, followed by a
    reopen every ``reopen_interval_s`` until the device is back. The thread ends after
    ``max_frames`` frames or at the end of a finite source.
    """

    def __init__(
        self,
        source: Source,
        ring: RingBuffer[FramePacket],
        stop: threading.Event,
        telemetry: Telemetry,
        *,
        paced: bool = True,
        size: tuple[int, int] | None = None,
        mirror: bool = False,
        max_frames: int | None = None,
        reopen_interval_s: float = 1.0,
        wait_for_go: bool = False,
    ) -> None:
        super().__init__("capture", stop, telemetry)
        self.source = source
        self.ring = ring
        self.paced = paced
        self.size = size
        self.mirror = mirror
        self.max_frames = max_frames
        self.reopen_interval_s = reopen_interval_s
        self.ready = threading.Event()
        self.startup_error: LivecamError | None = None
        self.failure: str | None = None  # why the source ended the run (a file gone)
        self.seq = 0
        self.go = threading.Event()
        if not wait_for_go:
            self.go.set()

    def set_mirror(self, on: bool) -> None:
        """Flip the frames left-right (or stop) from the next frame read on: live, from
        any thread (one attribute that ``_conform`` reads per frame)."""
        self.mirror = bool(on)

    def loop(self) -> None:
        try:
            self.source.open()
            self._read_and_push()
        except EndOfStream:
            self.startup_error = SourceError(f"source '{self.source.name}' has no frame")
            return
        except Exception as e:  # any library error at start-up is a cause, never a crash
            self.startup_error = as_livecam_error(e, f"source '{self.source.name}'")
            return
        finally:
            self.ready.set()
        while not self.go.wait(0.1):
            if self.stop_event.is_set():
                return
        pacer = Pacer(self.source.fps if self.paced and not self.source.self_paced else 0.0)
        while not self.stop_event.is_set():
            if self.max_frames is not None and self.seq >= self.max_frames:
                break
            if not pacer.wait(self.stop_event):
                break
            try:
                self._read_and_push()
            except EndOfStream:
                break
            except SourceGone as e:  # a file that is gone does not come back: the run ends
                self.telemetry.event(Event("error", self.source.name, e.message, e.hint))
                self.failure = one_line(f"source {self.source.name}: {e.message}")
                break
            except FrameFormatError as e:  # one malformed frame: report it, keep going
                self.telemetry.event(Event("error", self.source.name, e.message, e.hint))
            except Exception as e:  # the device failed (or its library raised): reopen
                self._recover(as_livecam_error(e, "read failed"))
        self.ring.close()

    def _read_and_push(self) -> None:
        """Read one frame, report what the source noticed, push the frame."""
        try:
            frame = self.source.read()
        finally:
            for notice in self.source.take_notices():
                self.telemetry.event(
                    Event("warning", self.source.name, notice.message, notice.hint)
                )
        self._push(frame, self.source.media_ns)

    def _push(self, frame: Frame, t_media_ns: int | None = None) -> None:
        t_ns = time.perf_counter_ns()
        frame = self._conform(frame)
        self.telemetry.frame_in(t_ns)
        packet = FramePacket(frame=frame, seq=self.seq, t_capture_ns=t_ns, t_media_ns=t_media_ns)
        while not self.ring.put(packet, timeout=0.1):  # only lossless rings wait for room
            if self.stop_event.is_set() or self.ring.closed:
                return
        self.seq += 1

    def _conform(self, frame: Frame) -> Frame:
        """Validate the frame, mirror it when asked, and keep one output size for the run."""
        frame = validate_frame(frame, f"source '{self.source.name}'")
        if self.mirror:
            frame = np.asarray(cv2.flip(frame, 1), dtype=np.uint8)
        if self.size is None:
            self.size = (frame.shape[1], frame.shape[0])
        elif (frame.shape[1], frame.shape[0]) != self.size:
            frame = np.asarray(
                cv2.resize(frame, self.size, interpolation=cv2.INTER_AREA), dtype=np.uint8
            )
        return frame

    def _recover(self, error: LivecamError) -> None:
        """Report a device failure, then reopen until it works again or we are stopped."""
        self.telemetry.event(Event("error", self.source.name, error.message, error.hint))
        while not self.stop_event.is_set():
            self._close_source()
            if self.stop_event.wait(self.reopen_interval_s):
                return
            try:
                self.source.open()
            except Exception:
                continue
            self.telemetry.event(Event("info", self.source.name, "reopened"))
            return

    def _close_source(self) -> None:
        try:
            self.source.close()
        except Exception as e:
            self.telemetry.event(Event("warning", self.source.name, f"close: {e!r}"))

    def cleanup(self) -> None:
        self.ring.close()
        self._close_source()
