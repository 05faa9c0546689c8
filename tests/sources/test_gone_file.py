"""A looped video file deleted while it plays ends the run: exit 1 and its one error line
(a camera is reopened until it is back; a file that is gone does not come back, and the
run used to sit at 0 fps for ever, never reaching --frames)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from unprivileged import obeying_permissions
from waiting import poll


def has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


def test_a_looped_file_deleted_mid_run_ends_the_run_with_one_line(
    testdata: Path, tmp_path: Path
) -> None:
    clip = tmp_path / "clip.mp4"
    shutil.copy(testdata / "video" / "openmpf_video_01_short_h264_aac.mp4", clip)
    args = ["run", "--source", str(clip), "--loop", "--frames", "100000", "--sink", "null", "-q"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "livecam", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert poll(lambda: has_open(proc.pid, clip), 120), "the clip was never opened"
        clip.unlink()
        _out, err = proc.communicate(timeout=120)  # a hang fails here
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert f"video file {clip} does not exist" in line, err


def test_a_video_file_nobody_may_read_is_said_so_not_called_corrupt(
    testdata: Path, tmp_path: Path
) -> None:
    """Root reads anything: the run goes without the capabilities that let it."""
    clip = tmp_path / "private.mp4"
    shutil.copy(testdata / "video" / "openmpf_video_01_short_h264_aac.mp4", clip)
    clip.chmod(0o000)
    args = ["run", "--source", str(clip), "--frames", "2", "--sink", "null", "-q"]
    done = subprocess.run(
        [sys.executable, "-m", "livecam", *args],
        preexec_fn=obeying_permissions(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    clip.chmod(0o644)
    err = [line for line in done.stderr.splitlines() if not line.startswith("INFO ")]
    assert done.returncode == 2, done.stderr
    assert err[0] == f"error: cannot read video file {clip}: Permission denied", err
    assert "corrupt" not in done.stderr and len(err) == 2, err
