"""File sinks: a video recorder (cv2.VideoWriter) and a still-image writer."""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path

import cv2

from livecam.errors import SinkError
from livecam.sinks.base import Sink
from livecam.types import Frame

log = logging.getLogger(__name__)

#: FourCC codes tried in order for each container.
VIDEO_CODECS: dict[str, tuple[str, ...]] = {
    ".mp4": ("mp4v", "avc1"),
    ".avi": ("MJPG", "XVID"),
    ".mkv": ("mp4v", "MJPG"),
}
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")


class RecorderSink(Sink):
    """Writes every new frame to a video file at the output fps.

    ``wants_repeats`` is False: the file holds the unique frames the pipeline produced,
    each one frame period long (so a pipeline slower than ``fps`` plays back faster).
    """

    name = "recorder"
    wants_repeats = False

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        suffix = self.path.suffix.lower()
        if suffix not in VIDEO_CODECS:
            raise SinkError(
                f"cannot record to {self.path}: unknown video type {suffix!r}",
                f"use one of {', '.join(VIDEO_CODECS)}",
            )
        self._codecs = VIDEO_CODECS[suffix]
        self._writer: cv2.VideoWriter | None = None
        self._size: tuple[int, int] = (0, 0)
        self.fourcc: str | None = None
        self.frames_written = 0

    def open(self, width: int, height: int, fps: float) -> None:
        self.close()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SinkError(f"cannot create the folder for {self.path}: {e}") from e
        for code in self._codecs:
            writer = cv2.VideoWriter(
                str(self.path), cv2.VideoWriter.fourcc(*code), float(fps), (width, height)
            )
            if writer.isOpened():
                self._writer, self.fourcc, self._size = writer, code, (width, height)
                self.frames_written = 0
                log.info("recording %dx%d @ %g fps to %s (%s)", width, height, fps, self.path, code)
                return
            writer.release()
        raise SinkError(
            f"cannot record to {self.path}: OpenCV could not open a writer with codec "
            f"{' or '.join(self._codecs)} for {width}x{height} @ {fps:g} fps",
            "check the folder is writable, or record to .avi (MJPG) instead",
        )

    def send(self, frame: Frame) -> None:
        if self._writer is None:
            raise SinkError(f"recorder {self.path}: send() before open()")
        h, w = frame.shape[:2]
        if (w, h) != self._size:
            raise SinkError(
                f"recorder {self.path}: frame is {w}x{h}, the file is "
                f"{self._size[0]}x{self._size[1]}",
                "every frame of a recording must have the size of the first one",
            )
        self._writer.write(frame)
        self.frames_written += 1

    def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.release()
            log.info("recorded %d frames to %s", self.frames_written, self.path)


def write_image_atomic(path: Path, frame: Frame) -> None:
    """Encode ``frame`` by ``path``'s suffix and replace ``path`` atomically."""
    ok, data = cv2.imencode(path.suffix.lower(), frame)
    if not ok:
        raise SinkError(f"OpenCV could not encode a frame as {path.suffix}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.tobytes())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ImageWriterSink(Sink):
    """Keeps the latest frame in an image file: written every ``interval_s`` and on close.

    Each write goes to a temporary file that replaces the target, so readers never see a
    half-written image. ``wants_repeats`` is False (a repeat would not change the file).
    """

    name = "image"
    wants_repeats = False

    def __init__(self, path: str | os.PathLike[str], interval_s: float = 1.0) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() not in IMAGE_SUFFIXES:
            raise SinkError(
                f"cannot write images to {self.path}: unknown image type {self.path.suffix!r}",
                f"use one of {', '.join(IMAGE_SUFFIXES)}",
            )
        self.interval_s = interval_s
        self._last: Frame | None = None
        self._last_write = 0.0
        self.writes = 0

    def open(self, width: int, height: int, fps: float) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SinkError(f"cannot create the folder for {self.path}: {e}") from e
        self._last = None
        self._last_write = time.monotonic()  # first periodic write one interval in

    def send(self, frame: Frame) -> None:
        self._last = frame
        now = time.monotonic()
        if now - self._last_write >= self.interval_s:
            self._write()
            self._last_write = now

    def _write(self) -> None:
        if self._last is None:
            return
        try:
            write_image_atomic(self.path, self._last)
        except OSError as e:
            raise SinkError(f"cannot write {self.path}: {e}") from e
        self.writes += 1

    def close(self) -> None:
        self._write()
        self._last = None
