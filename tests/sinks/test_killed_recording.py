"""A recording killed with SIGKILL keeps all but about its last second (.mp4 is
fragmented MP4), and the next recording into that folder gives it its name (or removes
what does not play) with one line; a live recording's files are never touched.

Real processes are killed: a ``livecam run`` recording a testdata clip, and a small child
that feeds a RecorderSink the clip's frames and prints how many it sent, so what was lost
can be counted."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import av
import numpy as np
import pytest
from framegen import psnr

from livecam.cli.main import main
from livecam.sinks import RecorderSink
from livecam.sinks.recording.recovery import playable

CLIP = "video/liveportrait_d6.mp4"  # 1008 frames, 480x480, 30 fps
FPS = 30

#: feeds a RecorderSink (argv 1) the clip's frames (argv 2), each stamped at its own time
#: times the slowdown (argv 3: 5 is a pipeline that delivers 6 of a 30 fps camera's frames)
FEEDER = """
import sys, av
from livecam.sinks import RecorderSink
sink = RecorderSink(sys.argv[1])
slowdown = float(sys.argv[3])
with av.open(sys.argv[2]) as clip:
    for i, picture in enumerate(clip.decode(video=0)):
        frame = picture.to_ndarray(format="bgr24")
        if i == 0:
            sink.open(frame.shape[1], frame.shape[0], 30.0)
        sink.send(frame, round(float(picture.time) * slowdown * 1e9))
        print(i + 1, flush=True)
"""


@pytest.fixture(autouse=True)
def _own_journal(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test notes its recordings in a cache folder of its own (its children too):
    what these tests kill is never recovered by another test's start."""
    monkeypatch.setenv("LIVECAM_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def temps(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.recording-*"))


def decoded(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [p.to_ndarray(format="bgr24") for p in container.decode(video=0)]


def kill_feeder_after(out: Path, clip: Path, frames: int, slowdown: float = 1.0) -> None:
    """Run FEEDER into ``out`` and SIGKILL it once it has sent ``frames`` frames."""
    child = subprocess.Popen(
        [sys.executable, "-c", FEEDER, str(out), str(clip), str(slowdown)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    for line in child.stdout:
        if int(line) >= frames:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(30)


@pytest.mark.parametrize("sent", [100, 300])
def test_a_killed_mp4_keeps_every_frame_but_about_the_last_second(
    testdata: Path, tmp_path: Path, sent: int
) -> None:
    """Frames are lost only from the fragment being filled (up to 1 s) and the encoder's
    lookahead; everything before plays, frame for frame the clip's."""
    clip = testdata / CLIP
    out = tmp_path / "show.mp4"
    kill_feeder_after(out, clip, sent)
    assert out.stat().st_size == 0, "the claimed name, empty"
    [temp] = temps(tmp_path)
    kept = decoded(temp)
    assert sent - 1.5 * FPS <= len(kept) < sent, f"{len(kept)} of {sent} frames kept"
    with av.open(str(clip)) as container:
        source = [p.to_ndarray(format="bgr24") for _, p in zip(kept, container.decode(video=0))]
    assert min(psnr(got, want) for got, want in zip(kept, source, strict=True)) > 30


@pytest.mark.parametrize("suffix", [".mp4", ".mkv"])
def test_a_killed_recording_of_a_slow_pipeline_loses_at_most_about_a_second(
    testdata: Path, tmp_path: Path, suffix: str
) -> None:
    """At 6 frames a second (a slow pipeline behind a 30 fps camera) the loss is still
    bounded in seconds: a keyframe and a fragment each second of time, no encoder
    lookahead (it was 13 frames: over 2 s at 6 fps)."""
    out = tmp_path / f"slow{suffix}"
    sent = 60  # 10 s of stream time
    kill_feeder_after(out, testdata / CLIP, sent, slowdown=5.0)
    [temp] = temps(tmp_path)
    facts = playable(temp)
    assert facts is not None, "nothing of 10 s plays"
    frames, seconds = facts
    assert seconds >= sent / 6 - 1.5, f"{frames} frames, {seconds:.2f} s kept of {sent / 6} s"


def test_any_start_recovers_a_recording_killed_in_another_folder(
    testdata: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A killed recording's folder is noted in the cache: the next start that writes a
    still elsewhere gives it its name, with one line (it used to stay a 0-byte file and a
    hidden temporary, without a word)."""
    (tmp_path / "shows").mkdir()
    out = tmp_path / "shows" / "show.mp4"
    kill_feeder_after(out, testdata / CLIP, 100)
    [temp] = temps(out.parent)
    on_disk = playable(temp)
    assert on_disk is not None and out.stat().st_size == 0
    still = tmp_path / "elsewhere" / "still.png"
    still.parent.mkdir()
    face = Path(__file__).resolve().parents[2] / "assets" / "grace_hopper.jpg"
    args = ["run", "--source", str(face), "--frames", "1", "--quiet", "--sink", str(still)]
    with caplog.at_level(logging.WARNING):
        assert main(args) == 0
    said = [r.getMessage() for r in caplog.records if "cut short" in r.getMessage()]
    assert len(said) == 1 and "RECOVERED" in said[0] and str(out) in said[0], said
    assert len(decoded(out)) == on_disk[0]
    assert temps(out.parent) == [] and still.is_file()


def test_the_next_run_recovers_a_killed_livecam_recording(testdata: Path, tmp_path: Path) -> None:
    """``livecam run`` killed mid-recording; the next run into that folder gives the
    recording its name (one line) and records itself under a new one."""
    out = tmp_path / "show.mp4"
    argv = [sys.executable, "-m", "livecam", "run", "--quiet", "--sink", str(out)]
    child = subprocess.Popen(
        [*argv, "--source", str(testdata / CLIP), "--realtime"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # wait for two fragments on disk (each is a second of frames), not for time
        sizes: set[int] = set()
        deadline = time.monotonic() + 120
        while len(sizes - {0}) < 3 and time.monotonic() < deadline:
            found = temps(tmp_path)
            if found:
                sizes.add(found[0].stat().st_size)
            time.sleep(0.02)
        assert len(sizes - {0}) >= 3, "the recording never grew"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    [temp] = temps(tmp_path)
    on_disk = playable(temp)
    assert on_disk is not None and on_disk[0] >= FPS, on_disk
    assert out.stat().st_size == 0

    again = subprocess.run(
        [*argv, "--source", "synthetic", "--size", "160x120", "--frames", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    said = [line for line in again.stderr.splitlines() if "cut short" in line]
    assert len(said) == 1 and "RECOVERED" in said[0] and str(out) in said[0], said
    assert f"{on_disk[0]} frames" in said[0]
    assert len(decoded(out)) == on_disk[0]
    assert temps(tmp_path) == []
    [new] = [p for p in tmp_path.iterdir() if p != out]
    assert new.name.startswith("show-") and f"wrote {new}" in again.stdout


def test_a_stale_temporary_that_does_not_play_is_removed_with_its_empty_claim(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What a process killed before its first fragment leaves: an empty claim and a
    temporary file with a header only (here a bare ``ftyp`` box)."""
    claim = tmp_path / "talk.mp4"
    claim.touch()
    stale = tmp_path / ".talk.recording-0badc0de.mp4"
    stale.write_bytes(b"\x00\x00\x00\x20ftypisom" + bytes(20))
    sink = RecorderSink(tmp_path / "other.mp4")
    with caplog.at_level(logging.WARNING):
        sink.open(64, 48, 30.0)
        sink.send(np.zeros((48, 64, 3), np.uint8), 0)
        sink.close()
    said = [r.getMessage() for r in caplog.records if "cut short" in r.getMessage()]
    assert len(said) == 1 and "does not play" in said[0] and "talk.mp4" in said[0], said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.mp4"]


def test_a_recovered_recording_never_takes_a_users_file(testdata: Path, tmp_path: Path) -> None:
    """The claimed name holds a file again (the user's): the recording goes beside it."""
    out = tmp_path / "show.mp4"
    kill_feeder_after(out, testdata / CLIP, 100)
    out.write_bytes(b"the user's own file")
    sink = RecorderSink(tmp_path / "next.mp4")
    sink.open(64, 48, 30.0)
    sink.close()  # no frame: nothing of its own is left
    assert out.read_bytes() == b"the user's own file"
    recovered = tmp_path / "show-recovered.mp4"
    assert playable(recovered) is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == [recovered.name, out.name]


def test_a_live_recording_is_left_alone(tmp_path: Path) -> None:
    """A recording being written (its temporary file locked by this process) is not
    stale: a second recorder into the folder leaves it, and it finishes whole."""
    first = RecorderSink(tmp_path / "a.mp4")
    first.open(64, 48, 30.0)
    for i in range(40):
        first.send(np.full((48, 64, 3), i * 6, np.uint8), i * 33_333_333)
    [live] = temps(tmp_path)
    second = RecorderSink(tmp_path / "b.mp4")
    second.open(64, 48, 30.0)
    assert live.exists() and (tmp_path / "a.mp4").stat().st_size == 0
    second.send(np.zeros((48, 64, 3), np.uint8), 0)
    second.close()
    first.close()
    assert len(decoded(tmp_path / "a.mp4")) == 40
    assert temps(tmp_path) == [] and not os.path.exists(tmp_path / "a-recovered.mp4")
