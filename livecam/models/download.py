"""Verified, resumable downloads of one file from a list of mirrors.

``download`` fetches into ``<target>.part`` (an HTTP Range request continues a partial
file), checks the size and sha256 (or calls ``check`` when no hash is known), and only
then renames the file into place atomically, so a truncated or corrupt transfer is never
found under the real name. A 404, a timeout or a wrong hash moves on to the next mirror.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path

from tqdm import tqdm

from livecam.userfiles import OutputFile, open_own, refuse_unless_own

log = logging.getLogger(__name__)

CHUNK = 1 << 20
#: transfers that stop early are resumed this many times per mirror before the next one
RESUMES = 3
USER_AGENT = "livecam-model-store"


def sha256_of(path: str | os.PathLike[str]) -> str:
    """The sha256 (hex) of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Fetched:
    """A downloaded file in place: where, from which URL, its sha256 and size."""

    path: Path
    url: str
    sha256: str
    size: int


#: ``on_progress(bytes_in_file, total_or_None)`` after each chunk; it may raise ``Cancelled``
Progress = Callable[[int, int | None], None]


class Cancelled(Exception):
    """The caller stopped the download (raised by its progress callback); the partial
    file is kept, so a later download resumes it."""


class DownloadFailed(Exception):
    """Every mirror failed; ``reasons`` holds one ``url: why`` line per attempt."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = reasons


def part_path(target: Path) -> Path:
    """Where the partial download of ``target`` is kept between attempts."""
    return target.with_name(target.name + ".part")


def download(
    urls: Sequence[str],
    target: Path,
    *,
    sha256: str = "",
    size: int = 0,
    check: Callable[[Path], None] | None = None,
    progress: bool = True,
    timeout: float = 30.0,
    on_progress: Progress | None = None,
) -> Fetched:
    """Fetch ``target`` from the first mirror in ``urls`` that serves a good file.

    ``sha256``/``size`` ("" / 0 when unknown) must match; else ``check(part)`` runs on
    the complete file and raises (any exception) when it is not the model it should be.
    Raises DownloadFailed naming every URL and what went wrong; OSError when the folder
    cannot be written; ``Cancelled`` when ``on_progress`` raised it.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(target)
    refuse_unless_own(part)
    reasons: list[str] = []
    for url in urls:
        try:
            _fetch(url, part, size, progress, timeout, on_progress)
            digest = sha256_of(part)
            got = part.stat().st_size
            if size and got != size:
                raise _Bad(f"{got} bytes, expected {size}")
            if sha256 and digest != sha256:
                raise _Bad(f"sha256 {digest}, expected {sha256}")
            if not sha256 and check is not None:
                check(part)
        except Cancelled:
            raise
        except _Retry as e:  # the mirror failed; a partial file is kept for the next one
            reasons.append(f"{url}: {e}")
            continue
        except Exception as e:  # a complete but wrong file: never kept
            part.unlink(missing_ok=True)
            reasons.append(f"{url}: {e}")
            continue
        OutputFile(target, overwrite=True).commit(part)
        log.info("downloaded %s from %s (sha256 %s)", target.name, url, digest)
        return Fetched(target, url, digest, got)
    raise DownloadFailed(reasons)


class _Retry(Exception):
    """This mirror could not deliver the file now (network, HTTP error)."""


class _Bad(Exception):
    """The complete file is not the one expected."""


def _fetch(
    url: str,
    part: Path,
    size: int,
    progress: bool,
    timeout: float,
    on_progress: Progress | None = None,
) -> None:
    """Bring ``part`` to the full length ``url`` serves, resuming an early stop."""
    for _ in range(RESUMES + 1):
        have = part.lstat().st_size if part.exists() else 0
        if size and have > size:
            part.unlink()
            have = 0
        if size and have == size:
            return
        try:
            if _transfer(url, part, have, progress, timeout, on_progress):
                return
        except urllib.error.HTTPError as e:
            if e.code == 416 and have:  # nothing left past what we have: check it as it is
                return
            raise _Retry(f"HTTP {e.code} {e.reason}") from e
        except (urllib.error.URLError, HTTPException, TimeoutError, ConnectionError) as e:
            why = getattr(e, "reason", None) or e
            host = urllib.parse.urlsplit(url).hostname or url
            if isinstance(why, socket.gaierror):  # resuming cannot help: the next mirror
                raise _Retry(
                    f"cannot find the server {host} (no network, or its name does not "
                    f"resolve: {why.strerror or why})"
                ) from e
            if isinstance(why, ConnectionRefusedError):
                raise _Retry(f"{host} refused the connection") from e
            log.warning("download of %s stopped (%s); resuming", url, why)
            last = f"{type(e).__name__}: {why}"
            continue
        last = "the transfer stopped early"
        log.warning("download of %s stopped early; resuming", url)
    raise _Retry(f"{last} ({RESUMES} resumes tried)")


def _transfer(
    url: str,
    part: Path,
    have: int,
    progress: bool,
    timeout: float,
    on_progress: Progress | None = None,
) -> bool:
    """One request, appended to ``part`` from byte ``have``; True when the response was
    complete (its full Content-Length arrived, or it had none)."""
    headers = {"User-Agent": USER_AGENT}
    if have:
        headers["Range"] = f"bytes={have}-"
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        if response.status != 206:  # a server without Range support starts from 0
            have = 0
        length = response.headers.get("Content-Length")
        expected = int(length) if length is not None else None
        received = 0
        with (
            open_own(part, append=bool(have)) as out,
            tqdm(
                total=(have + expected) if expected is not None else None,
                initial=have,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=part.name.removesuffix(".part"),
                file=sys.stderr,
                disable=not progress,
                leave=False,
            ) as bar,
        ):
            while chunk := response.read(CHUNK):
                out.write(chunk)
                received += len(chunk)
                bar.update(len(chunk))
                if on_progress is not None:
                    total = have + expected if expected is not None else None
                    on_progress(have + received, total)
    return expected is None or received >= expected
