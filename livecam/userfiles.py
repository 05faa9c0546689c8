"""The user's output files, written so that nothing of theirs is lost.

* A name is *claimed* before anything is written: the requested path, or, when a file
  is there and ``overwrite`` is off, a new name beside it with a timestamp. The claim is
  an empty file created exclusively (``O_EXCL``), so a second writer (another LiveCam,
  a rerun, a second sink) sees the name taken and picks another one, even while the
  first is still writing.
* Content goes to a hidden temporary file in the same folder, renamed over the claimed
  name only when it is complete (``os.replace`` is atomic within one folder).
* Files get the user's normal permissions (``0o666`` less the umask), never the
  owner-only mode of ``tempfile.mkstemp``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from pathlib import Path

from livecam.errors import LivecamError

log = logging.getLogger(__name__)

#: mode for new files; the process umask takes away what the user does not allow
FILE_MODE = 0o666


def _candidates(path: Path) -> list[Path]:
    """``name-YYYYmmdd-HHMMSS.ext``, then ``-2``, ``-3``, ... (the first 100)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    first = path.with_name(f"{path.stem}-{stamp}{path.suffix}")
    return [first] + [
        path.with_name(f"{path.stem}-{stamp}-{n}{path.suffix}") for n in range(2, 101)
    ]


def _create_empty(path: Path) -> bool:
    """Create ``path`` empty and exclusively; False when something is already there."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        return False
    return True


class OutputFile:
    """One file the user asked for: ``claim`` a name, write to ``temp_path()``,
    ``commit`` it into place; ``discard`` removes what this object created.

    ``target`` is the name the content gets (known after ``claim``). With ``overwrite``
    the requested path is used even when a file is there (it is replaced on commit).
    """

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.target = self.path
        self._claimed = False  # we created the (empty) file at ``target``
        self._committed = False

    def claim(self) -> Path:
        """Reserve the name and return it; warn loudly when another name had to be used.
        Raises OSError when the folder cannot be written."""
        self._claimed = self._committed = False
        if self.overwrite:
            self.target = self.path
            self._claimed = _create_empty(self.path)
            return self.target
        for candidate in [self.path, *_candidates(self.path)]:
            if _create_empty(candidate):
                self.target, self._claimed = candidate, True
                break
        else:
            raise FileExistsError(f"no free name left beside {self.path}")
        if self.target != self.path:
            log.warning(
                "%s ALREADY EXISTS and is kept: writing to %s instead "
                "(use --overwrite / output.overwrite to replace it)",
                self.path,
                self.target,
            )
        return self.target

    def temp_path(self, tag: str = "tmp") -> Path:
        """A new hidden name in the target's folder for content being written."""
        token = secrets.token_hex(4)
        return self.target.with_name(f".{self.target.stem}.{tag}-{token}{self.target.suffix}")

    def new_temp(self) -> Path:
        """Create a new empty temporary file (the user's permissions) and return its path."""
        while True:
            tmp = self.temp_path()
            if _create_empty(tmp):
                return tmp

    def commit(self, tmp: Path) -> Path:
        """Give the finished temporary file ``tmp`` the target name (atomically)."""
        os.replace(tmp, self.target)
        self._committed = True
        return self.target

    def write_bytes(self, data: bytes) -> Path:
        """Replace the target's content with ``data`` atomically; return the target."""
        tmp = self.new_temp()
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            return self.commit(tmp)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def discard(self) -> None:
        """Remove the empty claim when nothing was committed (never the user's file)."""
        if self._claimed and not self._committed:
            with contextlib.suppress(OSError):
                if self.target.stat().st_size == 0:
                    self.target.unlink()
        self._claimed = False


def write_new_file(path: str | os.PathLike[str], data: bytes, *, overwrite: bool) -> Path:
    """Write ``data`` to ``path`` (or a new timestamped name when a file is there and
    ``overwrite`` is off), atomically; return the name written. Raises OSError."""
    out = OutputFile(path, overwrite=overwrite)
    out.claim()
    try:
        return out.write_bytes(data)
    finally:
        out.discard()


def folder_problem(path: str | os.PathLike[str]) -> str | None:
    """Why a file cannot be created at ``path`` (its folder is missing, not a folder, or
    not writable: tried with a real file), or None when it can."""
    folder = Path(path).absolute().parent
    if not folder.exists():
        return f"the folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if Path(path).is_dir():
        return f"{path} is a folder"
    probe = folder / f".livecam-write-test-{secrets.token_hex(4)}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except OSError as e:
        return f"the folder {folder} is not writable ({e.strerror or e})"
    probe.unlink(missing_ok=True)
    return None


def check_output_path(path: str | os.PathLike[str], option: str) -> None:
    """Raise LivecamError naming ``option`` when no file can be written at ``path``."""
    problem = folder_problem(path)
    if problem is not None:
        raise LivecamError(
            f"{option} {path}: cannot write there: {problem}",
            "create the folder or choose a writable one",
        )
