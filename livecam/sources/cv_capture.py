"""What the camera and video sources share: an OpenCV VideoCapture read under a lock."""

from __future__ import annotations

import math
import os
import threading
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import cv2
import numpy.typing as npt

from livecam.config.schema import SourceConfig
from livecam.errors import SourceError
from livecam.sources.base import Source
from livecam.types import Frame
from livecam.userfiles.images import FitMode, fit_frame, to_bgr8

RawFrame = npt.NDArray[Any]
Opened = tuple[cv2.VideoCapture, RawFrame]

#: longest wait for a stream, FIFO or device path to open and deliver its first frame
OPEN_TIMEOUT_S = 5.0


def quiet_ffmpeg_logs() -> None:
    """Keep FFmpeg's own messages (printed by OpenCV's video reader every time a damaged
    file is opened, e.g. at each retry) off the terminal: LiveCam reports every failure
    itself, with the file and a fix. Works only before the first VideoCapture of the
    process (entry points call it); a level the user set in OPENCV_FFMPEG_LOGLEVEL wins."""
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET


def file_fps(cap: cv2.VideoCapture, fallback: float) -> float:
    """The frame rate a capture reports, or ``fallback`` when it reports none or nonsense."""
    fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
    return fps if math.isfinite(fps) and 0 < fps <= 1000 else fallback


class PendingOpen:
    """One open that may block (a FIFO without a writer, a network camera that does not
    answer) run on a daemon thread, so its caller can give up after a deadline. A later
    ``wait`` takes over the same attempt instead of starting another thread."""

    def __init__(self, start: Callable[[], Opened]) -> None:
        self._start = start
        self._done = threading.Event()
        self._result: Opened | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, name="livecam-source-open", daemon=True).start()

    def _run(self) -> None:
        try:
            self._result = self._start()
        except BaseException as e:  # handed to the waiting thread
            self._error = e
        self._done.set()  # publishes the result to ``wait``

    def wait(self, timeout_s: float) -> Opened | None:
        """The opened capture and first frame; None while still blocked after
        ``timeout_s``; raises what the open raised."""
        if not self._done.wait(timeout_s):
            return None
        if self._error is not None:
            raise self._error
        return self._result


class CvCaptureSource(Source):
    """A source read with cv2.VideoCapture. ``open`` decodes the first frame at once (so
    a device or file that cannot deliver fails there) and hands it to the first ``read``.

    Subclasses give ``label``, ``_start`` (open and read the first frame) and
    ``_after_read`` (what a failed read means: replay a file, or raise for a device).
    Where ``_start`` may block (``opens_may_block``), it runs on a helper thread and
    ``open`` gives up after ``open_timeout_s`` with a SourceError.
    """

    #: True for sources whose open may block indefinitely (streams, FIFOs, device paths)
    opens_may_block = False
    #: how frames of another aspect are fitted to ``cfg.size`` (``fit_frame``): a camera
    #: covers it (centre crop, as webcams do); a file keeps its whole picture
    fit: FitMode = "cover"

    def __init__(self, cfg: SourceConfig) -> None:
        self.cfg = cfg
        self.open_timeout_s = OPEN_TIMEOUT_S
        self._cap: cv2.VideoCapture | None = None
        self._fps = cfg.fps
        self._pending: Frame | None = None
        self._opening: PendingOpen | None = None
        self._lock = threading.Lock()

    @property
    def fps(self) -> float:
        return self._fps

    @property
    @abstractmethod
    def label(self) -> str:
        """How errors and logs name this source."""

    @abstractmethod
    def _start(self) -> tuple[cv2.VideoCapture, RawFrame]:
        """Open the capture and decode its first frame; raise SourceError otherwise."""

    @abstractmethod
    def _after_read(self, ok: bool, raw: RawFrame | None) -> RawFrame:
        """The frame to use after ``cap.read()`` returned (ok, raw); called under the lock."""

    def _open_in_time(self) -> Opened:
        """``_start``, on a helper thread with a deadline where it may block."""
        if not self.opens_may_block:
            return self._start()
        pending = self._opening or PendingOpen(self._start)
        self._opening = pending
        try:
            result = pending.wait(self.open_timeout_s)
        except BaseException:
            self._opening = None
            raise
        if result is None:
            raise SourceError(
                f"{self.label} did not open within {self.open_timeout_s:g} s (a network "
                "camera that does not answer, or a FIFO nobody writes to)",
                "check the address and that the stream plays elsewhere (e.g. in VLC); "
                "LiveCam keeps waiting for this attempt when it retries",
            )
        self._opening = None
        return result

    def open(self) -> None:
        cap, raw = self._open_in_time()
        fps = file_fps(cap, self.cfg.fps)
        with self._lock:
            self._release()
            self._cap, self._pending, self._fps = cap, self._convert(raw), fps

    def read(self) -> Frame:
        with self._lock:
            if self._pending is not None:
                frame, self._pending = self._pending, None
                return frame
            if self._cap is None:
                raise SourceError(f"{self.label} is not open", "call open() first")
            ok, raw = self._cap.read()
            return self._convert(self._after_read(ok, raw))

    def _replay(self) -> RawFrame:
        """Start the file again from its first frame (reopening seeks reliably)."""
        self._release()
        self._cap, raw = self._start()
        return raw

    def _convert(self, raw: RawFrame) -> Frame:
        frame = raw if raw.ndim == 3 and raw.shape[2] == 3 else to_bgr8(raw)
        return fit_frame(frame, self.cfg.size, self.fit)

    def _release(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None

    def close(self) -> None:
        with self._lock:
            self._release()
            self._pending = None
