"""Recordings cut short by a crash: find them, give them their name, remove the junk.

A recording is written to a hidden temporary file beside its name (``.NAME.recording-
TOKEN.ext``, see ``livecam.userfiles``), which the writing process holds an exclusive
lock on (``hold``; ``fcntl.flock``, released by the system when the process dies, so a
killed process's lock is gone and a live one's, in this process or another, is kept).
At the start of a recording, ``recover`` looks at the hidden temporaries of its folder
that no live process holds: one that plays (.mp4 and .mov are fragmented, so a killed
recording keeps all but its last second) takes its claimed name when that name is free
or the empty file its run claimed, else a ``NAME-recovered`` name beside it; one that
does not play is removed, with the empty claim it left. Each is said in one line. A
recovered file is not signed (signing happens when a recording is finished).

Each recording being written is also noted in LiveCam's cache folder (``note``: one small
file naming its temporary file, removed when the recording ends), so that any later
start, whatever it writes and wherever (``recover_noted``, when the sinks are built),
recovers what a killed recording left in another folder. Where
there is no ``fcntl`` (Windows) nothing is recovered: a live recording cannot be told
from a dead one's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
from pathlib import Path

import av
import platformdirs

from livecam.userfiles import OutputFile

try:
    import fcntl
except ImportError:  # Windows: an open file cannot be renamed there, which is the lock
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

#: a hidden temporary recording or signed copy: ``.NAME.recording-1a2b3c4d.mp4``
TEMP_NAME = re.compile(r"^\.(?P<stem>.+)\.(?P<tag>recording|signed)-[0-9a-f]{8}(?P<suffix>\.\w+)$")


class Lock:
    """An exclusive lock on a temporary file, held until ``release`` (or the process
    ends); ``Lock.take(path)`` is None when another holder has it."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    @classmethod
    def take(cls, path: Path, *, create: bool = False) -> Lock | None:
        if fcntl is None:
            return cls(None)
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        fd = os.open(path, flags, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return cls(fd)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # the lock goes with the descriptor


def hold(path: Path) -> Lock:
    """Create ``path`` (empty) if needed and lock it for this recording."""
    lock = Lock.take(path, create=True)
    if lock is None:  # a new random name: nobody else can hold it
        raise OSError(f"{path} is locked by another process")
    return lock


def playable(path: Path) -> tuple[int, float] | None:
    """(video frames, seconds) of a file PyAV opens and decodes a first frame of, or None."""
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            if next(container.decode(stream), None) is None:
                return None
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            frames, end = 0, 0.0
            for packet in container.demux(stream):
                if packet.size and packet.pts is not None and packet.time_base is not None:
                    frames += 1
                    end = max(end, float((packet.pts + (packet.duration or 0)) * packet.time_base))
            return frames, end
    except Exception:
        return None


#: the containers written as fragmented MP4: ISO boxes from the first byte to the last
BOXED = (".mp4", ".mov")


def cut_to_whole_boxes(path: Path) -> None:
    """Cut a fragmented MP4 cut short (a full disk, a kill) after its last whole box that
    is not a fragment's header (``moof``) whose samples (``mdat``) never came, so that
    what is left ends with a complete fragment. A file whose boxes do not parse is left
    as it is."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            at, end = 0, 0
            while at + 8 <= size:
                f.seek(at)
                head = f.read(16)
                length, kind = int.from_bytes(head[:4], "big"), head[4:8]
                if length == 1 and len(head) == 16:
                    length = int.from_bytes(head[8:16], "big")
                elif length == 0:
                    length = size - at
                if length < 8 or at + length > size:
                    break
                at += length
                if kind != b"moof":
                    end = at
        if 0 < end < size:
            os.truncate(path, end)
    except OSError as e:
        log.debug("could not cut %s to whole boxes: %s", path, e)


def recover(folder: Path, suffixes: tuple[str, ...], *, keep: Path | None = None) -> list[Path]:
    """Recover or remove the stale temporaries (of ``suffixes``) in ``folder`` (see the
    module docstring); return the files recovered. ``keep``: a name this run is about to
    replace (``overwrite``): a recording found for it goes to a ``-recovered`` name."""
    if fcntl is None:
        return []  # no lock to tell a live recording from a dead one's
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    temps = [(folder / n, m) for n in names if (m := TEMP_NAME.match(n))]
    temps = [(p, m) for p, m in temps if m["suffix"].lower() in suffixes]
    stale: list[tuple[Path, re.Match[str], Lock]] = []
    live: set[str] = set()  # the claims of recordings being written now
    for temp, match in temps:
        try:
            lock = Lock.take(temp)
        except OSError:
            continue  # vanished, or not ours to open
        if lock is None:
            live.add(match["stem"] + match["suffix"])
        else:
            stale.append((temp, match, lock))
    recording = {m["stem"] + m["suffix"] for _, m, _ in stale if m["tag"] == "recording"}
    found: list[Path] = []
    for temp, match, lock in stale:
        claim = folder / (match["stem"] + match["suffix"])
        try:
            if claim.name in live:
                log.warning("a recording cut short is left at %s: %s is recording", temp, claim)
                continue
            if match["tag"] == "signed" and claim.name in recording:
                _remove(temp, None, "a signed copy left unfinished beside its recording")
                continue
            done = _recover_one(temp, claim, keep)
            if done is not None:
                found.append(done)
        finally:
            lock.release()
    return found


def _recover_one(temp: Path, claim: Path, keep: Path | None) -> Path | None:
    if temp.suffix.lower() in BOXED:
        cut_to_whole_boxes(temp)
    facts = playable(temp)
    empty_claim = _is_empty(claim)
    if facts is None:
        _remove(temp, claim if empty_claim else None, "a recording cut short that does not play")
        return None
    frames, seconds = facts
    try:
        if (empty_claim or not claim.exists()) and claim != keep:
            os.replace(temp, claim)
            target = claim
        else:
            out = OutputFile(claim.with_name(f"{claim.stem}-recovered{claim.suffix}"))
            target = out.claim()
            out.commit(temp)
    except OSError as e:
        log.warning("a recording cut short is left at %s: %s", temp, e.strerror or e)
        return None
    log.warning(
        "RECOVERED a recording cut short (a crash or kill): %s, %d frames (%.1f s), unsigned",
        target,
        frames,
        seconds,
    )
    return target


def _is_empty(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _remove(temp: Path, claim: Path | None, what: str) -> None:
    with contextlib.suppress(OSError):
        temp.unlink()
        if claim is not None:
            claim.unlink()
    also = f" and its empty claim {claim.name}" if claim is not None else ""
    log.warning("removed %s: %s%s", what, temp, also)


def journal_folder() -> Path:
    """Where the recordings being written are noted: ``recordings`` in LiveCam's cache
    folder (``$LIVECAM_CACHE_DIR`` or the user cache dir)."""
    env = os.environ.get("LIVECAM_CACHE_DIR")
    return (Path(env) if env else Path(platformdirs.user_cache_dir("livecam"))) / "recordings"


def note(temp: Path, journal: Path | None = None) -> Path | None:
    """Note the temporary file of a recording that begins; the note (forget it when the
    recording ends), or None when it cannot be written (the recording goes on; only a
    later start elsewhere would not find it if it were killed)."""
    folder = journal or journal_folder()
    path = folder / f"{secrets.token_hex(8)}.txt"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(str(temp.absolute()))
    except OSError as e:
        log.debug("the recording %s is not noted in %s: %s", temp, folder, e)
        return None
    return path


def forget(noted: Path | None) -> None:
    if noted is not None:
        with contextlib.suppress(OSError):
            noted.unlink()


def recover_noted(journal: Path | None = None) -> list[Path]:
    """Recover (``recover``) the folders of the noted recordings that no live process is
    writing; forget the notes of those that are gone. Return the files recovered."""
    folder = journal or journal_folder()
    try:
        notes = sorted(folder.glob("*.txt"))
    except OSError:
        return []
    found: list[Path] = []
    for noted in notes:
        try:
            if noted.is_symlink() or noted.stat().st_size > 4096:
                raise ValueError("not a note of ours")
            temp = Path(noted.read_text(encoding="utf-8").strip())
            if not temp.is_absolute() or not TEMP_NAME.match(temp.name):
                raise ValueError("not a recording's temporary file")
        except (OSError, ValueError, UnicodeError):
            forget(noted)
            continue
        if temp.exists():
            found += recover(temp.parent, (temp.suffix.lower(),))
        if not temp.exists():
            forget(noted)
    return found
