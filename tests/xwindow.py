"""Test support: find, grab and type into top-level windows on an Xvfb display."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

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


def find_window(display: str, title: str, within_s: float = 60.0) -> str:
    """The id of the first visible window whose title matches, waiting up to ``within_s``.

    ``xdotool search --sync`` blocks until a window matches, but it exits 1 on an X error:
    a window that closes while xdotool reads its properties (another test's, or a transient
    one of Qt's) ends the search with BadWindow. Such a search is run again; any other
    failure, or no window within the time, fails with xdotool's own words.
    """
    deadline = time.monotonic() + within_s
    while True:
        left = deadline - time.monotonic()
        command = ["xdotool", "search", "--sync", "--onlyvisible", "--name", title]
        try:
            out = subprocess.run(
                command,
                env={**os.environ, "DISPLAY": display},
                capture_output=True,
                text=True,
                timeout=max(left, 1.0),
            )
        except subprocess.TimeoutExpired:
            late = f"no visible window titled {title!r} within {within_s:.0f} s"
            raise AssertionError(late) from None
        if out.returncode == 0 and out.stdout.split():
            return out.stdout.split()[0]
        if "X Error" not in out.stderr or time.monotonic() >= deadline:
            failed = f"xdotool search {title!r} failed ({out.returncode}): {out.stderr.strip()}"
            raise AssertionError(failed)


def wait_window(display: str, title: str = "^LiveCam") -> tuple[str, tuple[int, int, int, int]]:
    """The id and (x, y, w, h) of the first visible window whose title matches, once shown."""
    wid = find_window(display, title)
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
