"""A minimal preview window (OpenCV highgui), driven from the output thread."""

from __future__ import annotations

import logging
import os
import platform
from collections.abc import Mapping

import cv2

from livecam.errors import SinkError
from livecam.sinks.base import Sink
from livecam.types import Frame

log = logging.getLogger(__name__)

_CLOSE_KEYS = (27, ord("q"))  # Esc, q


def display_available(env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether windows can be shown: (ok, detail). Linux needs DISPLAY or WAYLAND_DISPLAY."""
    if platform.system() != "Linux":
        return True, f"{platform.system()} desktop"
    env = os.environ if env is None else env
    found = [f"{k}={env[k]}" for k in ("DISPLAY", "WAYLAND_DISPLAY") if env.get(k)]
    if found:
        return True, ", ".join(found)
    return False, "neither DISPLAY nor WAYLAND_DISPLAY is set (no graphical session)"


def window_problem(env: Mapping[str, str] | None = None) -> str | None:
    """Why an OpenCV window cannot open here, or None when it can.

    The opencv-python wheels draw with Qt 5 on X11 (xcb) only: on Linux they need DISPLAY
    (X11 or XWayland), and any other QT_QPA_PLATFORM makes Qt abort the whole process.
    """
    env = os.environ if env is None else env
    ok, why = display_available(env)
    if not ok:
        return why
    if platform.system() != "Linux":
        return None
    if not env.get("DISPLAY"):
        return "only WAYLAND_DISPLAY is set; OpenCV windows need X11 (enable XWayland)"
    qpa = env.get("QT_QPA_PLATFORM", "")
    if qpa and qpa != "xcb" and "QT" in _gui_backend().upper():
        return f"QT_QPA_PLATFORM={qpa} would make OpenCV's Qt window abort the process"
    return None


def _gui_backend() -> str:
    for line in cv2.getBuildInformation().splitlines():
        if line.strip().startswith("GUI:"):
            return line.split(":", 1)[1].strip()
    return ""


class PreviewWindowSink(Sink):
    """Shows frames in an OpenCV window. When the user closes it (window button, Esc or q)
    ``closed`` becomes True and later frames are dropped; it is never reopened."""

    name = "window"
    wants_repeats = True

    def __init__(self, title: str = "LiveCam") -> None:
        self.title = title
        self._open = False
        self._created = False
        self._size = (0, 0)
        self.closed = False

    def open(self, width: int, height: int, fps: float) -> None:
        """Check a window can be shown; the window itself is created by the first ``send``
        so that it lives on the output thread (highgui windows are thread-bound)."""
        why = window_problem()
        if why is None and _gui_backend().upper() in ("", "NONE"):
            why = "this OpenCV build has no window support (opencv-python-headless?)"
        if why is not None:
            raise SinkError(
                f"cannot open a preview window: {why}",
                "run LiveCam inside an X11/XWayland desktop session (or `xvfb-run`) with "
                "QT_QPA_PLATFORM unset, or choose another output sink: virtualcam, "
                "a file such as out.mp4, or null (with opencv-python-headless: "
                "`pip install --force-reinstall opencv-python`)",
            )
        self._size = (width, height)
        self._open = True
        self._created = False
        self.closed = False

    def send(self, frame: Frame) -> None:
        if not self._open:
            if self.closed:
                return
            raise SinkError("preview window: send() before open()")
        if not self._created:
            try:
                cv2.namedWindow(self.title, cv2.WINDOW_NORMAL)
                cv2.resizeWindow(self.title, *self._size)
            except cv2.error as e:
                raise SinkError(f"cannot create the preview window: {e.err}") from e
            self._created = True
        elif not self._visible():  # closed since the last frame: don't let imshow reopen it
            self._user_closed()
            return
        cv2.imshow(self.title, frame)
        key = cv2.waitKey(1) & 0xFF
        if key in _CLOSE_KEYS or not self._visible():
            self._user_closed()

    def _visible(self) -> bool:
        try:
            return cv2.getWindowProperty(self.title, cv2.WND_PROP_VISIBLE) >= 1
        except cv2.error:
            return False

    def _user_closed(self) -> None:
        log.info("preview window closed by the user")
        self.close()
        self.closed = True

    def close(self) -> None:
        if self._open:
            self._open = False
            if not self._created:
                return
            self._created = False
            try:
                cv2.destroyWindow(self.title)
                cv2.waitKey(1)  # let highgui process the destroy event
            except cv2.error:
                pass
