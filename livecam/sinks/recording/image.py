"""The still-image sink: the latest frame kept in an image file (.png and .jpg signed
with a C2PA manifest, see ``livecam.sinks.recording.provenance``)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import cv2

from livecam.errors import SinkError
from livecam.sinks.base import Sink
from livecam.sinks.recording.provenance import FileFacts, Provenance, ProvenanceError
from livecam.types import Frame
from livecam.userfiles import OutputFile, make_folder_for

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")


class ImageWriterSink(Sink):
    """Keeps the latest frame in an image file: written every ``interval_s`` and on close.

    Each write goes to a temporary file that replaces the target, so readers never see a
    half-written image. An existing file is kept unless ``overwrite``: ``target`` is then
    a new name with a timestamp. ``wants_repeats`` is False (a repeat would not change
    the file).

    ``provenance``: each image is signed in memory before it is written (its manifest says
    whether the swap changed this frame), so the file on disk is always whole and signed;
    when signing fails the image is written unsigned and one warning is logged.
    """

    name = "image"
    wants_repeats = False
    still_file = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        interval_s: float = 1.0,
        *,
        overwrite: bool = False,
        provenance: Provenance | None = None,
    ) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() not in IMAGE_SUFFIXES:
            raise SinkError(
                f"cannot write images to {self.path}: unknown image type {self.path.suffix!r}",
                f"use one of {', '.join(IMAGE_SUFFIXES)}",
            )
        self.interval_s = interval_s
        self.overwrite = overwrite
        self.target = self.path
        self._out: OutputFile | None = None
        self._last: Frame | None = None
        self._last_write = 0.0
        self.writes = 0
        self.provenance = provenance
        self._last_swapped = False
        self.signed = False  # whether the image on disk carries a manifest
        self._sign_warned = False

    def open(self, width: int, height: int, fps: float) -> None:
        self.close()
        out = OutputFile(self.path, overwrite=self.overwrite)
        try:
            make_folder_for(self.path)  # the last folder level only, said in the log
            self.target = out.claim()
        except OSError as e:
            raise SinkError(
                f"cannot write images to {self.path}: {e.strerror or e}",
                "write into a writable folder",
            ) from e
        self._out = out
        self._last = None
        self._last_write = time.monotonic()  # first periodic write one interval in

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        self._last = frame
        self._last_swapped = swapped
        now = time.monotonic()
        if now - self._last_write >= self.interval_s:
            self._write()
            self._last_write = now

    def _write(self) -> None:
        if self._last is None or self._out is None:
            return
        ok, data = cv2.imencode(self.target.suffix.lower(), self._last)
        if not ok:
            raise SinkError(f"OpenCV could not encode a frame as {self.target.suffix}")
        content = self._signed(data.tobytes())
        try:
            self._out.write_bytes(content)
        except OSError as e:  # the sink is done: close does not try (and report) again
            out, self._out, self._last, self.written = self._out, None, None, None
            out.discard()
            raise SinkError(
                f"cannot write {self.target}: {e.strerror or e}",
                "check that the folder still exists and the disk has room",
            ) from e
        self.writes += 1
        self.written = self.target

    def _signed(self, data: bytes) -> bytes:
        """``data`` with its manifest (as it is when signing fails: one warning)."""
        self.signed = False
        if self.provenance is None:
            return data
        facts = FileFacts(self.target.name, 1, int(self._last_swapped))
        try:
            signed = self.provenance.sign_bytes(data, self.target.suffix, facts)
        except ProvenanceError as e:
            if not self._sign_warned:
                log.warning("%s is written WITHOUT signed provenance: %s", self.target, e.message)
                self._sign_warned = True
            return data
        self.signed = signed is not data
        return signed

    def close(self) -> None:
        """Write the last frame; without any frame, remove the claimed name."""
        out = self._out
        try:
            self._write()
        finally:
            self._out, self._last = None, None
            if out is not None:
                out.discard()
