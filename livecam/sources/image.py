"""Still images as a source: one image file (read by ``livecam.userfiles.images``),
repeated at the source's rate."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from livecam.config.schema import SourceConfig
from livecam.errors import SourceError
from livecam.sources.base import Source
from livecam.types import Frame
from livecam.userfiles.images import fit_frame, limit_size, load_image_bgr

log = logging.getLogger(__name__)

__all__ = ["ImageSource", "load_image_bgr"]  # an image source, and how it reads its file


class ImageSource(Source):
    """Repeats one still image at ``cfg.fps`` (paced by the capture thread).

    Each ``read`` returns a fresh copy, so a stage drawing on its frame never alters the
    still. Size: ``cfg.size`` if set (the whole picture fitted in, ``fit_frame``
    contain: a portrait gets bars at its sides), else the image's size made even
    (at most MAX_LONG_SIDE long: see ``limit_size``); the scaling is done once, at open.
    """

    name = "image"
    self_paced = False
    still = True

    def __init__(self, path: str | Path, cfg: SourceConfig | None = None) -> None:
        self.path = Path(path)
        self.cfg = cfg or SourceConfig(spec=str(path))
        self._frame: Frame | None = None
        self._lock = threading.Lock()

    @property
    def fps(self) -> float:
        return self.cfg.fps

    def open(self) -> None:
        frame = load_image_bgr(self.path)
        if self.cfg.size is None:
            frame = limit_size(frame, f"image source {self.path}")
        frame = fit_frame(frame, self.cfg.size, "contain")  # a photo is kept whole
        with self._lock:
            self._frame = frame
        log.info("image source %s: %dx%d", self.path, frame.shape[1], frame.shape[0])

    def read(self) -> Frame:
        with self._lock:
            if self._frame is None:
                raise SourceError(f"image source {self.path} is not open", "call open() first")
            return self._frame.copy()

    def close(self) -> None:
        with self._lock:
            self._frame = None
