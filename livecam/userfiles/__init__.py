"""Every file LiveCam writes, written so that nothing is lost or seen half-written.

``write_atomically`` (or ``OutputFile`` for a file written over time, e.g. a recording)
is the one way the project writes a file: recordings, stills, saved configs, the panel's
settings, face caches, downloaded and generated models.

* A name is *claimed* before anything is written: the requested path, or, when a file
  is there and ``overwrite`` is off, a new name beside it with a timestamp. The claim is
  an empty file created exclusively (``O_EXCL``), so a second writer (another LiveCam,
  a rerun, a second sink) sees the name taken and picks another one, even while the
  first is still writing.
* Content goes to a hidden temporary file in the same folder with a name of its own,
  renamed over the target only when it is complete (``os.replace`` is atomic within one
  folder): a reader sees the old file or the new one, and two writers of one file (two
  panels, two processes) each leave a whole file, the later one winning.
* Files get the user's normal permissions (``0o666`` less the umask), never the
  owner-only mode of ``tempfile.mkstemp``.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
import secrets
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import platformdirs

from livecam.errors import LivecamError, cut

log = logging.getLogger(__name__)

#: mode for new files; the process umask takes away what the user does not allow
FILE_MODE = 0o666


#: how files of the kinds LiveCam writes begin, by suffix: alternatives, each a list of
#: (offset, bytes) that must all match. An existing file of another content is never
#: replaced by a file of its suffix's kind (``kind_problem``).
_MP4 = (((4, b"ftyp"),),)
_MATROSKA = (((0, b"\x1a\x45\xdf\xa3"),),)
MAGIC: Mapping[str, tuple[tuple[tuple[int, bytes], ...], ...]] = {
    ".mp4": _MP4,
    ".m4v": _MP4,
    ".mov": (*_MP4, ((4, b"moov"),), ((4, b"wide"),), ((4, b"mdat"),)),
    ".mkv": _MATROSKA,
    ".webm": _MATROSKA,
    ".avi": (((0, b"RIFF"), (8, b"AVI ")),),
    ".png": (((0, b"\x89PNG\r\n\x1a\n"),),),
    ".jpg": (((0, b"\xff\xd8\xff"),),),
    ".jpeg": (((0, b"\xff\xd8\xff"),),),
    ".bmp": (((0, b"BM"),),),
    ".json": (((0, b"{"),), ((0, b"["),)),  # after leading white space
}


def kind_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the file at ``path`` must not be replaced by a new file of its suffix's kind:
    it is not a regular file, or its content is of another kind (a text file named
    ``.mp4``, a photo named ``.json``); None when nothing is there, it is empty (a claim
    a killed run left) or it is of that kind."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{p} cannot be checked ({e.strerror or e})"
    if not stat.S_ISREG(st.st_mode):
        return f"{p} is not a regular file"
    kinds = MAGIC.get(p.suffix.lower())
    if st.st_size == 0 or kinds is None:
        return None
    try:
        with open(p, "rb") as f:
            head = f.read(64)
    except OSError as e:
        return f"{p} cannot be read ({e.strerror or e})"
    if p.suffix.lower() == ".json":
        head = head.lstrip()
    if any(all(head[at : at + len(b)] == b for at, b in kind) for kind in kinds):
        return None
    return f"{p} is not a {p.suffix[1:].upper()} file (its content is of another kind)"


def user_config_dir() -> Path:
    """The user's LiveCam config folder: ``$LIVECAM_CONFIG_DIR``, else the platform's
    (``~/.config/livecam`` on Linux)."""
    env = os.environ.get("LIVECAM_CONFIG_DIR")
    return Path(env) if env else Path(platformdirs.user_config_dir("livecam"))


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, readable by the user only (0600, in a folder
    of mode 0700): signing keys, passwords."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.parent.is_symlink():  # chmod would follow it to another folder
        raise OSError(errno.ELOOP, f"{path.parent} is a symbolic link: refused (remove it)")
    os.chmod(path.parent, 0o700)

    def private(tmp: Path) -> None:
        os.chmod(tmp, 0o600, follow_symlinks=False)  # before anything is in it
        with open_own(tmp) as f:
            f.write(data)

    write_atomically(path, private)


def private_temp_folder(name: str) -> Path:
    """A folder of this user's own in the shared temporary folder (``NAME-UID``, mode
    0700), made when missing. Anyone may create names there first, so one that is a link,
    not a folder, another user's, or open to others is refused (OSError), never used: what
    LiveCam puts there (a sheet of the faces of a user's photo) is private."""
    if sys.platform == "win32":  # the temporary folder is the user's own there
        folder = Path(tempfile.gettempdir()) / name
        folder.mkdir(exist_ok=True)
        return folder
    uid = os.getuid()
    folder = Path(tempfile.gettempdir()) / f"{name}-{uid}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    st = folder.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, f"{folder} is not a folder of LiveCam's: refused")
    if st.st_uid != uid or st.st_mode & 0o077:
        raise OSError(errno.EPERM, f"{folder} is another user's or open to others: refused")
    return folder


def make_folder_for(path: str | os.PathLike[str]) -> Path | None:
    """Create the folder of ``path`` when it is missing but its own folder exists (one
    level, logged); return it, or None when it was there. A deeper missing tree is a
    FileNotFoundError: a typo in a path must not make folders."""
    folder = Path(path).absolute().parent
    if folder.is_dir():
        return None
    if not folder.parent.is_dir():
        raise FileNotFoundError(
            errno.ENOENT,
            f"the folder {folder.parent} does not exist (LiveCam creates only the last "
            f"folder of a path, here {folder.name})",
        )
    folder.mkdir(exist_ok=True)
    log.info("created the folder %s", folder)
    return folder


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
            problem = kind_problem(self.path)
            if problem is not None:
                raise FileExistsError(errno.EEXIST, f"{problem}: it is kept, not replaced")
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
                "(use --overwrite to replace it)",
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

    def write_with(self, produce: Callable[[Path], object]) -> Path:
        """Replace the target's content with what ``produce(tmp)`` writes into ``tmp``, a
        new empty temporary file, atomically; return the target. The temporary file is
        removed when ``produce`` raises. A temporary file that is no longer a regular
        file of its own when ``produce`` is done (a link put in its place, in a folder
        others may write) is refused, never given the target's name."""
        tmp = self.new_temp()
        try:
            produce(tmp)
            refuse_unless_own(tmp)
            return self.commit(tmp)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def write_bytes(self, data: bytes) -> Path:
        """Replace the target's content with ``data`` atomically; return the target. The
        bytes go through ``open_own``: never through a link."""

        def write(tmp: Path) -> None:
            with open_own(tmp) as f:
                f.write(data)

        return self.write_with(write)

    def discard(self) -> None:
        """Remove the empty claim when nothing was committed (never the user's file)."""
        if self._claimed and not self._committed:
            with contextlib.suppress(OSError):
                if self.target.stat().st_size == 0:
                    self.target.unlink()
        self._claimed = False


def refuse_unless_own(path: Path) -> None:
    """OSError unless ``path`` is missing or a regular file with one name: a symbolic or
    hard link planted in a folder others may write (models, cache, config) would make
    LiveCam write into another file."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, f"{path} is a symbolic link: refused (remove it)")
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        kind = "not a regular file" if not stat.S_ISREG(st.st_mode) else "a hard link"
        raise OSError(errno.EPERM, f"{path} is {kind}: refused (remove it)")


def open_own(path: Path, *, append: bool = False) -> io.BufferedWriter:
    """``path`` opened for writing (appended to, or emptied; created when missing),
    never through a link (``O_NOFOLLOW``; checked again on the open file)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
    try:
        fd = os.open(path, flags, FILE_MODE)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, f"{path} is a symbolic link: refused (remove it)") from e
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        raise OSError(errno.EPERM, f"{path} is not a regular file of its own: refused")
    return os.fdopen(fd, "ab" if append else "wb")


def write_atomically(
    path: str | os.PathLike[str],
    content: bytes | Callable[[Path], object],
    *,
    overwrite: bool = True,
) -> Path:
    """Write a whole file: ``content`` (bytes, or a function that writes the temporary
    file whose path it is given) goes to a new hidden temporary file beside ``path``,
    renamed over ``path`` once complete; return the name written. Raises OSError (the
    folder must exist).

    ``overwrite`` False keeps an existing file: a new name with a timestamp is claimed
    and written instead (see ``OutputFile.claim``).
    """
    out = OutputFile(path, overwrite=overwrite)
    if not overwrite:
        out.claim()
    try:
        if isinstance(content, bytes):
            return out.write_bytes(content)
        return out.write_with(content)
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
            f"{option} {cut(str(path))}: cannot write there: {problem}",
            "create the folder or choose a writable one",
        )


def is_device(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a device or a pipe (``/dev/null``, ``/dev/stdout``): written to
    in place, never replaced or renamed beside."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def stats_problem(path: str, overwrite: bool) -> str | None:
    """Why the stats file cannot be written at ``path`` (``-``: standard output, and
    devices are fine; a file must end in ``.json``, and with ``overwrite`` an existing
    one must hold JSON), or None."""
    if path == "-":
        return None
    if is_device(path):
        return None if os.access(path, os.W_OK) else "the device is not writable"
    if Path(path).suffix.lower() != ".json":
        return "a stats file must end in .json"
    if overwrite:
        problem = kind_problem(path)
        if problem is not None:
            return f"{problem}: it is kept, not replaced"
    return folder_problem(path)


def check_stats_path(path: str, option: str, overwrite: bool) -> None:
    """Raise LivecamError naming ``option`` when the stats cannot be written at ``path``."""
    problem = stats_problem(path, overwrite)
    if problem is not None:
        raise LivecamError(
            f"{option} {cut(path)}: cannot write the stats there: {problem}",
            "give a .json file in a writable folder, - for standard output, or a device",
        )


def _write_in_place(path: str, data: bytes) -> None:
    """Write ``data`` to a device or pipe. A FIFO is opened without waiting: with no
    reader it is an OSError at once (ENXIO, said in words), never a run that waits for
    ever after its end."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise OSError(e.errno, "it is a pipe (FIFO) that nobody reads") from None
        raise
    os.set_blocking(fd, True)  # a reader is there: let it take the data at its pace
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def write_output(path: str, data: bytes, *, overwrite: bool) -> str:
    """Write ``data`` (a whole file the user asked for, e.g. the run's stats) to ``path``:
    ``-`` is standard output, a device or pipe is written in place, anything else goes
    through ``write_atomically`` (an existing file of another kind is never replaced).
    Return the name written; OSError on failure."""
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return path
    if is_device(path):
        _write_in_place(path, data)
        return path
    if overwrite:
        problem = kind_problem(path)
        if problem is not None:
            raise FileExistsError(errno.EEXIST, f"{problem}: it is kept, not replaced")
    return str(write_atomically(path, data, overwrite=overwrite))
