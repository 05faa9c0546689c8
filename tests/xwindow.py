"""Test support: find, grab and type into top-level windows on an Xvfb display."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import mss
import numpy as np
from conftest import missing

from livecam.sinks.preview import window_problem


def require_windows(display: str) -> None:
    """Skip (fail in CI) unless Qt windows can open on ``display`` and xdotool exists."""
    if shutil.which("xdotool") is None:
        missing("xdotool is not installed (apt-get install xdotool)")
    why = window_problem({"DISPLAY": display})
    if why is not None:
        missing(f"no Qt window on the Xvfb display: {why}")


def xdotool(display: str, *args: str) -> str:
    """Run ``xdotool ARGS`` against ``display``; its stdout."""
    out = subprocess.run(
        ["xdotool", *args],
        env={**os.environ, "DISPLAY": display},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return out.stdout


def wait_window(display: str, title: str = "^LiveCam") -> tuple[str, tuple[int, int, int, int]]:
    """The id and (x, y, w, h) of the first visible window whose title matches, once shown."""
    wid = xdotool(display, "search", "--sync", "--onlyvisible", "--name", title).split()[0]
    geometry = xdotool(display, "getwindowgeometry", wid)
    position = re.search(r"Position: (\d+),(\d+)", geometry)
    size = re.search(r"Geometry: (\d+)x(\d+)", geometry)
    assert position and size, geometry
    x, y = int(position[1]), int(position[2])
    return wid, (x, y, int(size[1]), int(size[2]))


def window_title(display: str, wid: str) -> str:
    """The title of window ``wid`` as the X server has it now."""
    return xdotool(display, "getwindowname", wid).strip()


def grab(display: str, rect: tuple[int, int, int, int]) -> np.ndarray:
    """The screen pixels of ``rect`` (x, y, w, h) as a BGR array."""
    x, y, w, h = rect
    with mss.MSS(display=display) as screen:
        shot = np.asarray(screen.grab({"left": x, "top": y, "width": w, "height": h}))
    return np.ascontiguousarray(shot[:, :, :3])


def press(display: str, wid: str, key: str) -> None:
    """Focus window ``wid`` and type ``key`` into it (as a user would)."""
    xdotool(display, "windowfocus", "--sync", wid)
    xdotool(display, "key", "--clearmodifiers", key)
