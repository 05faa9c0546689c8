"""Test support: a private Xvfb display and reading videos back."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np


@contextlib.contextmanager
def xvfb_display(size: str = "640x480") -> Iterator[str | None]:
    """Start a private Xvfb of ``size`` (``WxH``) and yield its DISPLAY (``:N``), or None
    when Xvfb is absent."""
    exe = shutil.which("Xvfb")
    if exe is None or not sys.platform.startswith("linux"):
        yield None
        return
    r, w = os.pipe()
    proc = subprocess.Popen(
        [exe, "-displayfd", str(w), "-screen", "0", f"{size}x24", "-nolisten", "tcp"],
        pass_fds=(w,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(w)
    try:
        with os.fdopen(r) as f:
            number = f.readline().strip()
        yield f":{number}" if number else None
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def read_video(path: Path) -> tuple[list[np.ndarray], float]:
    """Every frame of a video file and its fps, read back with OpenCV."""
    cap = cv2.VideoCapture(str(path))
    assert cap.isOpened(), f"{path} does not play"
    fps = cap.get(cv2.CAP_PROP_FPS)
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame)
    cap.release()
    return frames, fps
