"""`livecam run --commands`: live commands typed on standard input drive the control plane."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
from cli_output import livecam_with_commands
from waiting import poll

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def wait_for(proc: subprocess.Popen[str], check: Callable[[], bool], what: str) -> None:
    """Wait until ``check()`` holds while ``proc`` runs (its stderr if it ended first)."""
    assert poll(lambda: check() or proc.poll() is not None, 60), what
    assert proc.poll() is None, proc.communicate()[1]


def black(path: Path) -> bool:
    frame = cv2.imread(str(path))  # None while the file is being replaced
    return frame is not None and not frame.any()


def test_typed_commands_change_the_running_stream(tmp_path: Path, testdata: Path) -> None:
    last = tmp_path / "last.png"
    photo = testdata / "faces" / "obama_small_320x240.jpg"
    face = ASSETS / "grace_hopper.jpg"
    # --frames: a still photo into a still file is otherwise one frame, and the run ends
    proc = livecam_with_commands(
        ["--source", str(photo), "--face", str(face), "--sink", str(last), "--frames", "100000"]
    )
    assert proc.stdin is not None
    try:
        wait_for(proc, last.exists, f"{last} never appeared")  # the stream runs
        assert not black(last)
        proc.stdin.write("bogus\nswap maybe\nface\nset detect_size 5\nswap off\nblank on\n")
        proc.stdin.flush()
        # the commands are applied in order: the image sink writes the blank (once a second)
        wait_for(proc, lambda: black(last), "the blank never reached the image sink")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGTERM, err  # stopped by SIGTERM: 143
    assert "error: unknown command 'bogus'" in err
    assert "expected on or off" in err and "'face' is missing an argument" in err
    assert "swap.detect.detect_size" in err, "an invalid value is a one-line error naming the field"
    assert "controls: swap off" in err and "controls: blank on" in err
    frame = cv2.imread(str(last))
    assert frame is not None and not frame.any(), "the last frame sent is the black blank"


def test_mirror_command_flips_the_running_picture(tmp_path: Path, testdata: Path) -> None:
    photo = testdata / "faces" / "obama_small_320x240.jpg"
    picture = cv2.imread(str(photo))
    assert picture is not None
    last = tmp_path / "last.png"

    def shown_like(expected: np.ndarray) -> bool:
        frame = cv2.imread(str(last))  # None while the file is being replaced
        return (
            frame is not None
            and frame.shape == picture.shape
            and (float(cv2.absdiff(frame, expected).mean()) < 3)
        )

    # --frames: a still photo into a still file is otherwise one frame, and the run ends
    proc = livecam_with_commands(
        ["--source", str(photo), "--sink", str(last), "--frames", "100000"]
    )
    assert proc.stdin is not None
    try:
        wait_for(proc, lambda: shown_like(picture), "the picture never reached the sink")
        proc.stdin.write("mirror maybe\nmirror on\n")
        proc.stdin.flush()
        wait_for(proc, lambda: shown_like(cv2.flip(picture, 1)), "the picture never flipped")
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "expected on or off" in err and "`mirror on|off`" in err
    assert "controls: mirror on" in err
