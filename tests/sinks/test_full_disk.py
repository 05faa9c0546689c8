"""A full disk fails every writer of ``livecam run``: exit status 1, one error line naming
the file and the cause, no "wrote" line and no hidden temporary file left.

The full disk is a file-size limit (``RLIMIT_FSIZE``) set in the child process with
SIGXFSZ ignored, so every write past the limit fails with EFBIG as a write to a full disk
fails with ENOSPC (a tmpfs or loop mount would need root). Each writer is tried with the
limit hit at its first writes ("early") and at its very last byte ("late": an .avi's index,
the last fragment and index of a fragmented .mp4/.mov, the tag copy of an .mkv, a still's
last block), the sizes taken from an unlimited conversion of a real clip (31 frames with
AAC sound, converted frame by frame: the same bytes every run). What of a recording
plays is kept under its name, and the error line says so."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path

import av
import pytest
from unprivileged import obeying_permissions

from livecam.sinks.recording.provenance import read_provenance, user_signing_key
from livecam.sinks.recording.recovery import recover

CLIP = "video/openmpf_video_01_short_h264_aac.mp4"
VIDEOS = (".mp4", ".mov", ".mkv", ".avi")
FORMATS = (*VIDEOS, ".png", ".jpg")


def livecam(args: list[str], limit: int | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m livecam ARGS`` with files limited to ``limit`` bytes (None: no limit)."""

    def full_disk(size: int) -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return subprocess.run(
        [sys.executable, "-m", "livecam", *args],
        preexec_fn=None if limit is None else lambda: full_disk(limit),
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def frames_in(path: Path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture(scope="module")
def full_sizes(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    """The size of each writer's file from one unlimited conversion of CLIP."""
    folder = tmp_path_factory.mktemp("unlimited")
    sinks = [a for s in FORMATS for a in ("--sink", str(folder / f"clip{s}"))]
    done = livecam(["run", "--source", str(testdata / CLIP), "--quiet", *sinks])
    assert done.returncode == 0, done.stderr
    return {s: (folder / f"clip{s}").stat().st_size for s in FORMATS}


#: a still is one write: its early and late limits would fail the same call
STILLS_EARLY = {(".png", "early"), (".jpg", "early")}
CASES = [(s, w) for s in FORMATS for w in ("early", "late") if (s, w) not in STILLS_EARLY]


@pytest.mark.parametrize(("suffix", "when"), CASES)
def test_a_full_disk_fails_every_writer_with_status_1(
    testdata: Path, tmp_path: Path, full_sizes: dict[str, int], suffix: str, when: str
) -> None:
    out = tmp_path / f"clip{suffix}"
    limit = 4096 if when == "early" else full_sizes[suffix] - 1
    done = livecam(["run", "--source", str(testdata / CLIP), "--quiet", "--sink", str(out)], limit)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "wrote" not in done.stdout
    [line] = errors(done.stderr)  # one line, the failed sink listed once
    assert str(out) in line and "File too large" in line
    assert line.count("File too large") == 1, line
    assert leftovers(tmp_path) == []
    if suffix in VIDEOS and when == "late":  # what plays is kept, and the line says so
        assert out.exists(), line
        kept = frames_in(out)
        assert f"its first {kept} frames" in line or "kept UNSIGNED" in line, line
        assert kept >= 30, line  # all but the last fragment (at most a second)
    elif out.exists():  # only the .mkv, whole, when its tagged copy did not fit
        assert suffix == ".mkv" and "kept UNSIGNED" in line
        assert frames_in(out) == 31
    else:
        assert "nothing was saved" in line or suffix in (".png", ".jpg"), line


@pytest.mark.parametrize("suffix", VIDEOS)
def test_a_disk_that_fills_mid_recording_keeps_what_plays_under_its_name(
    testdata: Path, tmp_path: Path, suffix: str
) -> None:
    """The disk fills seconds into a conversion (250 KB: about 4 s of a 480x480 clip):
    the frames written up to the last whole fragment keep the chosen name, the error
    line says how many, and the run fails (it used to remove them all)."""
    out = tmp_path / f"long{suffix}"
    clip = testdata / "video" / "liveportrait_d6.mp4"
    done = livecam(["run", "--source", str(clip), "--quiet", "--sink", str(out)], 250_000)
    assert done.returncode == 1, done.stderr
    [line] = errors(done.stderr)
    assert "No space" in line or "File too large" in line, line
    written = int(re.search(r"failed after (\d+) frames", line)[1])  # type: ignore[index]
    kept = frames_in(out)
    # all but the fragment whose write failed and the one being filled: at most 2 s
    assert kept >= max(10, written - 2 * 31), line
    assert f"its first {kept} frames" in line and str(out) in line, line
    assert "nothing was saved" not in line
    assert leftovers(tmp_path) == []


FOLDER_LOCKER = """
import os, sys
import numpy as np
from livecam.errors import SinkError
from livecam.sinks import RecorderSink
out = sys.argv[1]
sink = RecorderSink(out)
sink.open(64, 48, 30.0)
for i in range(60):
    sink.send(np.full((48, 64, 3), i * 4, np.uint8), i * 33_333_333)
os.chmod(os.path.dirname(out), 0o555)  # the folder turns read-only before the end
try:
    sink.close()
except SinkError as e:
    print(e.message)
"""


def test_a_folder_made_unwritable_mid_recording_leaves_the_recording_under_its_name(
    tmp_path: Path,
) -> None:
    """The finished recording cannot be renamed into place: its content goes into the
    claimed file (never a 0-byte file under the user's name); the hidden copy, which the
    folder does not let go, is emptied and named in the line, and the next start there
    removes it (it held a second copy, which it would have recovered as o-recovered.mp4).
    Root writes anywhere: as root the recorder runs without the capabilities that let it
    (``obeying_permissions``)."""
    folder = tmp_path / "shows"
    folder.mkdir()
    out = folder / "o.mp4"
    env = {**os.environ, "LIVECAM_CACHE_DIR": str(folder / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", FOLDER_LOCKER, str(out)],
        preexec_fn=obeying_permissions(),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    folder.chmod(0o755)
    assert done.returncode == 0, done.stderr
    said = done.stdout.strip()
    assert "Permission denied" in said and f"are kept in {out}" in said, said
    assert frames_in(out) == 60
    [copy] = leftovers(folder)
    assert f"emptied hidden file {copy}" in said, said
    assert (folder / copy).stat().st_size == 0
    assert recover(folder, (".mp4",)) == [] and leftovers(folder) == []
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".mp4") == ["o.mp4"]


def test_a_full_disk_while_signing_keeps_the_recording_unsigned_with_status_1(
    tmp_path: Path,
) -> None:
    """The signed copy of a finished .mp4 does not fit: the whole unsigned recording
    keeps its name, and the run says so and fails (no "wrote")."""
    user_signing_key()  # made beforehand: the key file must not be what hits the limit
    # every frame recorded (a live run under load may drop one: a smaller file that fits)
    args = ["run", "--source", "synthetic", "--size", "160x120", "--frames", "30", "--quiet"]
    args += ["--lossless", "--unpaced"]
    signed = tmp_path / "signed.mp4"
    assert livecam([*args, "--sink", str(signed)]).returncode == 0
    assert read_provenance(signed).signature_valid
    out = tmp_path / "out.mp4"
    # the manifest adds ~3.4 KB: the temporary file fits, the signed copy does not
    done = livecam([*args, "--sink", str(out)], signed.stat().st_size - 500)
    assert done.returncode == 1, done.stderr
    assert "wrote" not in done.stdout
    [line] = errors(done.stderr)
    assert "copy with provenance could not be written (File too large)" in line
    assert f"{out} is kept UNSIGNED" in line
    assert not read_provenance(out).present
    with av.open(str(out)) as container:
        assert sum(1 for _ in container.decode(video=0)) >= 25
    assert leftovers(tmp_path) == []


def test_a_full_disk_fails_the_stats_file_with_status_1(tmp_path: Path) -> None:
    stats = tmp_path / "stats.json"
    args = ["run", "--source", "synthetic", "--size", "160x120", "--frames", "10", "--quiet"]
    done = livecam([*args, "--sink", "null", "--stats-json", str(stats)], 200)
    assert done.returncode == 1, done.stderr
    assert "wrote" not in done.stdout
    [line] = errors(done.stderr)
    assert str(stats) in line and "File too large" in line
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_fails_save_config_with_status_1(tmp_path: Path) -> None:
    saved = tmp_path / "show.toml"
    done = livecam(["run", "--source", "synthetic", "--save-config", str(saved)], 100)
    assert done.returncode == 1, done.stderr
    assert "wrote" not in done.stdout
    [line] = errors(done.stderr)
    assert str(saved) in line and "File too large" in line
    assert list(tmp_path.iterdir()) == []
