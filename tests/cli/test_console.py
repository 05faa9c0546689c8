"""`livecam run --commands`: live commands typed on standard input drive the control plane."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def wait_for(proc: subprocess.Popen[str], path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def test_typed_commands_change_the_running_stream(tmp_path: Path, testdata: Path) -> None:
    last = tmp_path / "last.png"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "livecam",
            "run",
            "--source",
            str(testdata / "faces" / "obama_small_320x240.jpg"),
            "--face",
            str(ASSETS / "grace_hopper.jpg"),
            "--sink",
            str(last),
            "--commands",
            "--quiet",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdin is not None
    try:
        wait_for(proc, last)  # the image sink writes once a second: the stream runs
        proc.stdin.write("bogus\nswap maybe\nface\nset detect_size 5\nswap off\nblank on\n")
        proc.stdin.flush()
        time.sleep(2.5)  # let the image sink write a frame after the blank
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGTERM, err  # stopped by SIGTERM: 143
    assert "error: unknown command 'bogus'" in err
    assert "expected on or off" in err and "'face' is missing an argument" in err
    assert "swap.detect_size" in err, "an invalid value is a one-line error naming the field"
    assert "controls: swap off" in err and "controls: blank on" in err
    frame = cv2.imread(str(last))
    assert frame is not None and not frame.any(), "the last frame sent is the black blank"
