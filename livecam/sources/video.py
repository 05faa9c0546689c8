"""Video files (any container/codec OpenCV's FFmpeg reads, animated GIF included), looped."""

from __future__ import annotations

import logging
import math
import threading
from pathlib import Path
from typing import Any

import cv2
import numpy.typing as npt

from livecam.config import SourceConfig
from livecam.errors import SourceError
from livecam.sources.base import Source
from livecam.sources.image import fit_frame, to_bgr8
from livecam.types import Frame

log = logging.getLogger(__name__)


def file_fps(cap: cv2.VideoCapture, fallback: float) -> float:
    """The frame rate a capture reports, or ``fallback`` when it reports none or nonsense."""
    fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
    return fps if math.isfinite(fps) and 0 < fps <= 1000 else fallback


class VideoSource(Source):
    """Decodes a file and starts again at the end; paced by the capture thread.

    ``fps`` is the file's own rate (``cfg.fps`` when the file reports none). Frames are
    fitted to ``cfg.size`` when set, else made even by dropping a last odd row/column.
    """

    name = "video"
    self_paced = False

    def __init__(self, path: str | Path, cfg: SourceConfig | None = None) -> None:
        self.path = Path(path)
        self.cfg = cfg or SourceConfig(spec=str(path))
        self._cap: cv2.VideoCapture | None = None
        self._fps = self.cfg.fps
        self._pending: Frame | None = None
        self._lock = threading.Lock()

    @property
    def fps(self) -> float:
        return self._fps

    def _unreadable(self, why: str) -> SourceError:
        return SourceError(
            f"cannot play video file {self.path}: {why}",
            "check the file plays in a media player; re-encode it to H.264 MP4 "
            "(e.g. ffmpeg -i in -c:v libx264 out.mp4)",
        )

    def _start(self) -> tuple[cv2.VideoCapture, npt.NDArray[Any]]:
        """Open the file from its start and decode the first frame."""
        if not self.path.is_file():
            raise SourceError(f"video file {self.path} does not exist", "check the path")
        cap = cv2.VideoCapture(str(self.path))
        if not cap.isOpened():
            cap.release()
            raise self._unreadable("unknown format or corrupt file")
        ok, raw = cap.read()
        if not ok or raw is None:
            cap.release()
            raise self._unreadable("no frame could be decoded")
        return cap, raw

    def _convert(self, raw: npt.NDArray[Any]) -> Frame:
        frame = raw if raw.ndim == 3 and raw.shape[2] == 3 else to_bgr8(raw)
        return fit_frame(frame, self.cfg.size)

    def open(self) -> None:
        cap, raw = self._start()
        fps = file_fps(cap, self.cfg.fps)
        with self._lock:
            self._release()
            self._cap, self._pending, self._fps = cap, self._convert(raw), fps
        log.info("video source %s: %.3f fps", self.path, fps)

    def read(self) -> Frame:
        with self._lock:
            if self._pending is not None:
                frame, self._pending = self._pending, None
                return frame
            if self._cap is None:
                raise SourceError(f"video source {self.path} is not open", "call open() first")
            ok, raw = self._cap.read()
            if not ok or raw is None:  # end of file: start again (reopening seeks reliably)
                self._release()
                self._cap, raw = self._start()
            return self._convert(raw)

    def _release(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None

    def close(self) -> None:
        with self._lock:
            self._release()
            self._pending = None
