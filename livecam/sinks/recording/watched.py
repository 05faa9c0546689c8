"""A file that keeps the error a write of it raised, for writers that swallow it."""

from __future__ import annotations

import errno
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class WatchedFile(io.BufferedRandom):
    """A file opened for writing (``open_watched``) that keeps the first error a write or
    flush of it raised (``error``): FFmpeg drops the error of its last flush when PyAV
    closes a container, and c2pa turns a write error into a message of its own.
    ``finish`` flushes, syncs and closes it, raising that error if there was one, so a
    full disk (ENOSPC, EFBIG) is never a file that looks written."""

    error: OSError | None = None

    def write(self, data: Any) -> int:
        try:
            return super().write(data)
        except OSError as e:
            self.error = self.error or e
            raise

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as e:
            self.error = self.error or e
            raise

    def finish(self) -> None:
        try:
            self.flush()
            os.fsync(self.fileno())
        except OSError as e:
            self.error = self.error or e
        self.discard()
        if self.error is not None:
            raise self.error

    def discard(self) -> None:
        """Close without writing what is left in the buffer (after a failure)."""
        if not self.closed:
            self.raw.close()  # a buffered file whose raw file is closed closes as is
            self.close()


def open_watched(path: Path) -> WatchedFile:
    """``path`` opened for reading and writing, emptied (created when missing)."""
    return WatchedFile(io.FileIO(path, "w+"))


@contextmanager
def written(path: Path) -> Iterator[WatchedFile]:
    """``path`` opened watched for one whole write in the ``with`` block: finished when it
    ends (synced; the disk's error raised), discarded when it raises (the disk's own error
    raised instead of what a library made of it)."""
    file = open_watched(path)
    try:
        yield file
    except Exception:
        file.discard()
        if file.error is not None:
            raise file.error from None
        raise
    file.finish()


class FFmpegFile:
    """``file`` as PyAV writes a container through it: an error is returned as FFmpeg's
    code (raised, PyAV would print a traceback for each later call) and kept in
    ``file.error``; there is no ``close``, so the file stays open for ``file.finish``."""

    def __init__(self, file: WatchedFile) -> None:
        self.file = file

    def _failed(self, error: OSError) -> int:
        self.file.error = self.file.error or error
        return -(error.errno or errno.EIO)

    def write(self, data: bytes) -> int:
        try:
            return self.file.write(data)
        except OSError as e:
            return self._failed(e)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        try:
            return self.file.seek(offset, whence)
        except OSError as e:  # a seek writes what is buffered first
            return self._failed(e)

    def tell(self) -> int:
        return self.file.tell()

    def read(self, size: int = -1) -> bytes:
        try:
            return self.file.read(size)
        except OSError as e:
            self._failed(e)
            return b""

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True
