"""Screen capture with mss: a whole monitor or a region of the desktop.

mss instances are bound to the thread that made them, so the instance is created in
``open`` and used by ``read`` on the same (capture) thread.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

import cv2
import mss
import numpy as np

from livecam.config.schema import SourceConfig
from livecam.errors import SourceError
from livecam.sources.base import Source
from livecam.types import Frame
from livecam.userfiles.images import fit_frame

log = logging.getLogger(__name__)

Region = tuple[int, int, int, int]
"""(x, y, width, height) in desktop pixels, as mss counts them (may start below 0)."""


def _new_mss() -> Any:
    factory = getattr(mss, "MSS", None) or mss.mss  # mss >= 10 renamed the factory
    return factory()


def describe_monitors(monitors: list[dict[str, int]]) -> str:
    """'1: 1920x1080 at (0,0); 2: ...' for mss's monitor list (entry 0 is the whole desktop)."""
    parts = [
        f"{i}: {m['width']}x{m['height']} at ({m['left']},{m['top']})"
        for i, m in enumerate(monitors)
        if i > 0
    ]
    return "; ".join(parts) or "none"


def list_monitors() -> list[dict[str, int]]:
    """The monitors as mss numbers them (entry ``i`` is ``screen:i+1``): ``left``, ``top``,
    ``width``, ``height``. SourceError when there is no display to ask."""
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
        raise SourceError(
            "no display to list monitors of: DISPLAY is not set",
            "run LiveCam inside a desktop session (on Wayland, through XWayland)",
        )
    try:
        with _new_mss() as sct:
            monitors = list(sct.monitors)
    except mss.ScreenShotError as e:
        raise SourceError(f"cannot connect to the display to list monitors: {e}") from None
    return [{k: int(m[k]) for k in ("left", "top", "width", "height")} for m in monitors[1:]]


class ScreenSource(Source):
    """Captures monitor ``monitor`` (1-based as mss; 0 = every monitor) or ``region``.

    Paced by the capture thread at ``cfg.fps``. Odd capture sizes lose their last
    row/column (so encoders get even sizes); ``cfg.size`` fits the capture to that size.
    """

    name = "screen"
    self_paced = False

    def __init__(
        self,
        monitor: int = 1,
        region: Region | None = None,
        cfg: SourceConfig | None = None,
    ) -> None:
        self.monitor = monitor
        self.region = region
        self.cfg = cfg or SourceConfig(spec="screen")
        self._sct: Any = None
        self._box: dict[str, int] | None = None
        self._lock = threading.Lock()

    @property
    def fps(self) -> float:
        return self.cfg.fps

    @property
    def box(self) -> dict[str, int] | None:
        """The captured area as mss's dict (left, top, width, height), known once open."""
        return self._box

    def _pick_box(self, monitors: list[dict[str, int]]) -> dict[str, int]:
        listing = describe_monitors(monitors)
        if self.region is None:
            if not 0 <= self.monitor < len(monitors):
                raise SourceError(
                    f"monitor {self.monitor} does not exist (monitors: {listing})",
                    f"use screen:N with N from 1 to {len(monitors) - 1}, or screen:0 for all",
                )
            m = monitors[self.monitor]
            return {"left": m["left"], "top": m["top"], "width": m["width"], "height": m["height"]}
        x, y, w, h = self.region
        desk = monitors[0]
        inside = (
            w >= 2
            and h >= 2
            and x >= desk["left"]
            and y >= desk["top"]
            and x + w <= desk["left"] + desk["width"]
            and y + h <= desk["top"] + desk["height"]
        )
        if not inside:
            raise SourceError(
                f"screen region x={x}, y={y}, w={w}, h={h} is outside the desktop "
                f"({desk['width']}x{desk['height']} at ({desk['left']},{desk['top']}); "
                f"monitors: {listing})",
                "pick a region inside the desktop, e.g. screen:0,0,640,480",
            )
        return {"left": x, "top": y, "width": w - w % 2, "height": h - h % 2}

    def open(self) -> None:
        if sys.platform.startswith("linux") and not os.environ.get("DISPLAY"):
            raise SourceError(
                "no display to capture: DISPLAY is not set",
                "run LiveCam inside a desktop session (on Wayland, through XWayland), or "
                "start a virtual one: Xvfb :99 & export DISPLAY=:99",
            )
        try:
            sct = _new_mss()
        except mss.ScreenShotError as e:
            raise SourceError(
                f"cannot connect to the display for screen capture: {e}",
                "check DISPLAY points to a running X server you may use (xhost, XAUTHORITY)",
            ) from None
        try:
            box = self._pick_box(list(sct.monitors))
        except SourceError:
            sct.close()
            raise
        with self._lock:
            self._release()
            self._sct, self._box = sct, box
        log.info("screen source: %(width)dx%(height)d at (%(left)d,%(top)d)", box)

    def read(self) -> Frame:
        with self._lock:
            if self._sct is None or self._box is None:
                raise SourceError("screen source is not open", "call open() first")
            try:
                shot = self._sct.grab(self._box)
            except mss.ScreenShotError as e:
                raise SourceError(
                    f"screen capture failed: {e}",
                    "the display may have closed or changed; LiveCam retries",
                ) from None
        h, w = shot.height, shot.width
        bgra = np.frombuffer(shot.raw, dtype=np.uint8).reshape(h, w, 4)
        frame = np.asarray(cv2.cvtColor(bgra, cv2.COLOR_BGRA2BGR), dtype=np.uint8)
        return fit_frame(frame, self.cfg.size)

    def _release(self) -> None:
        if self._sct is not None:
            try:
                self._sct.close()
            except Exception as e:  # closing a dead display connection must not raise
                log.debug("closing mss: %s", e)
            self._sct = None

    def close(self) -> None:
        with self._lock:
            self._release()
            self._box = None
