"""What the C image decoders inside OpenCV (libpng, libjpeg) print while they decode.

They write straight to the process's standard error ("libpng error: bad adaptive filter
value", "Corrupt JPEG data: premature end of data segment"), where Python cannot filter
them: the user would see a raw library line beside LiveCam's own one-line error.
``decoder_messages`` catches what they print during one decode, so the caller can name
the reason in its own line (and the lines are logged at debug level, for ``-v``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator

log = logging.getLogger(__name__)

#: the most bytes of decoder messages kept from one decode
_KEPT_BYTES = 4096
#: file descriptor 2 is one per process: one catch at a time moves it (a synchronisation
#: primitive, not state: it holds no data)
_FD2 = threading.Lock()


@contextlib.contextmanager
def decoder_messages() -> Iterator[list[str]]:
    """Catch what C code prints to standard error inside the block; the list it yields
    holds those lines (stripped, empty ones dropped) once the block has ended. Standard
    error is left alone when it cannot be moved (closed)."""
    lines: list[str] = []
    with _FD2, tempfile.TemporaryFile() as caught:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):
            yield lines
            return
        try:
            os.dup2(caught.fileno(), 2)
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            text = caught.read(_KEPT_BYTES).decode("utf-8", errors="replace")
            lines += [line.strip() for line in text.splitlines() if line.strip()]
            for line in lines:
                log.debug("decoder: %s", line)


#: OpenCV's own log prefix: ``[ WARN:0@1.626] global grfmt_png.cpp:296 readHeader``
_OPENCV_PREFIX = re.compile(r"^\[\s*\w+:[^\]]*\]\s*(?:global\s+)?\S+:\d+\s+\S+\s+")


def decoder_reason(lines: list[str]) -> str:
    """The decoder's reason among ``lines`` (the last one, without a ``libpng error:`` or
    OpenCV log prefix), or ""."""
    if not lines:
        return ""
    return _OPENCV_PREFIX.sub("", lines[-1].removeprefix("libpng error:").strip()).strip()
