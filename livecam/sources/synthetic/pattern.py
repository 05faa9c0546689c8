"""Generated frames for demos, tests and benchmarks: a moving test pattern, or a still
portrait animated with smooth head motion; optionally time-stamped in the pixels.

Every frame is a pure function of its frame index (``render(index)``), so runs are
reproducible; ``frame_index`` tells which index the last ``read`` rendered.
"""

from __future__ import annotations

import logging
import math
import threading
import time

import cv2
import numpy as np

from livecam.config.schema import SourceConfig
from livecam.errors import SourceError
from livecam.sources.base import Source
from livecam.sources.synthetic.stamp import write_stamp
from livecam.types import Frame
from livecam.userfiles.images import fit_frame, limit_size, load_image_bgr

log = logging.getLogger(__name__)

DEFAULT_SIZE = (1280, 720)
MOTION_PERIOD = 240
"""Frames after which the head motion repeats exactly (8 s at 30 fps)."""


def head_motion(index: int) -> tuple[float, float, float, float]:
    """Head pose offsets at ``index``: (angle in degrees, scale, dx, dy as fractions of size).

    Sums of sines whose frequencies are whole multiples of 1/MOTION_PERIOD: smooth,
    periodic and deterministic. Bounds: angle within ±6°, scale within 1 ± 0.05,
    dx within ±3.5 % of the width, dy within ±2.5 % of the height.
    """
    p = 2 * math.pi * (index % MOTION_PERIOD) / MOTION_PERIOD
    angle = 4.5 * math.sin(p) + 1.5 * math.sin(3 * p + 0.7)
    scale = 1.0 + 0.035 * math.sin(2 * p + 1.0) + 0.015 * math.sin(5 * p)
    dx = 0.025 * math.sin(p + 2.0) + 0.01 * math.sin(4 * p)
    dy = 0.018 * math.sin(2 * p + 0.3) + 0.007 * math.sin(3 * p + 1.1)
    return angle, scale, dx, dy


def _gradient(w: int, h: int) -> Frame:
    """A colourful static background: horizontal/vertical ramps plus a faint grid."""
    x = np.linspace(0, 255, w, dtype=np.float32)[None, :]
    y = np.linspace(0, 255, h, dtype=np.float32)[:, None]
    bg = np.empty((h, w, 3), dtype=np.uint8)
    bg[:, :, 0] = (x * 0.8 + 30).clip(0, 255)
    bg[:, :, 1] = (y * 0.8 + 30).clip(0, 255)
    bg[:, :, 2] = ((x + y) * 0.4).clip(0, 255)
    bg[::64, :] = 255
    bg[:, ::64] = 255
    return bg


def _sprite(side: int) -> Frame:
    """A small opaque patch with a disc and cross, so motion and orientation are visible."""
    patch = np.full((side, side, 3), 40, dtype=np.uint8)
    c = side // 2
    cv2.circle(patch, (c, c), side // 2 - 2, (0, 200, 255), -1, cv2.LINE_AA)
    cv2.line(patch, (c, 4), (c, side - 5), (255, 255, 255), 3)
    cv2.line(patch, (4, c), (side - 5, c), (255, 255, 255), 3)
    return patch


class SyntheticSource(Source):
    """The ``synthetic`` source (paced by the capture thread at ``cfg.fps``).

    * default: a precomputed gradient with two small patches moving on fixed paths
      (one background copy plus two patch writes per frame);
    * ``cfg.face_motion`` = portrait path: the whole portrait, fitted inside ``cfg.size``
      (``fit_frame`` contain mode) or at its own size made even (scaled down once when
      longer than 1920 px: ``limit_size``), moved by one ``cv2.warpAffine`` per frame
      around ``centre`` (default: the image centre) following ``head_motion``;
    * ``cfg.stamp``: ``time.perf_counter_ns()`` is written into the pixels at read time
      (see ``livecam.sources.synthetic.stamp``).
    """

    name = "synthetic"
    self_paced = False

    def __init__(
        self, cfg: SourceConfig | None = None, centre: tuple[float, float] | None = None
    ) -> None:
        self.cfg = cfg or SourceConfig(spec="synthetic")
        self.centre = centre
        self.frame_index = -1
        """Index rendered by the most recent ``read`` (-1 before the first)."""
        self._base: Frame | None = None
        self._sprite = _sprite(96)
        self._lock = threading.Lock()

    @property
    def fps(self) -> float:
        return self.cfg.fps

    @property
    def size(self) -> tuple[int, int] | None:
        """(width, height) of the frames, known once open."""
        return None if self._base is None else (self._base.shape[1], self._base.shape[0])

    def open(self) -> None:
        if self.cfg.face_motion:
            portrait = load_image_bgr(self.cfg.face_motion)
            if self.cfg.size is None:
                portrait = limit_size(
                    portrait, f"the --face-motion portrait {self.cfg.face_motion}"
                )
            base = fit_frame(portrait, self.cfg.size, "contain")
        else:
            w, h = self.cfg.size or DEFAULT_SIZE
            base = _gradient(w, h)
        if self.cfg.stamp and (base.shape[0] < 32 or base.shape[1] < 160):
            raise SourceError(
                f"synthetic frames of {base.shape[1]}x{base.shape[0]} are too small for a "
                "time stamp (160x32 pixels)",
                "use a larger source.size or turn source.stamp off",
            )
        with self._lock:
            self._base = base
            self.frame_index = -1

    def render(self, index: int) -> Frame:
        """Return frame ``index`` (a new array; the same index always gives the same pixels)."""
        base = self._base
        if base is None:
            raise SourceError("synthetic source is not open", "call open() first")
        if self.cfg.face_motion:
            return self._render_face(base, index)
        return self._render_pattern(base, index)

    def _render_pattern(self, base: Frame, index: int) -> Frame:
        frame = base.copy()
        h, w = frame.shape[:2]
        s = self._sprite.shape[0]
        if w < s or h < s:
            return frame
        t = index / 60.0
        # a Lissajous path and a horizontal sweep, both within the frame
        x1 = int((w - s) * (0.5 + 0.5 * math.sin(2.0 * t)))
        y1 = int((h - s) * (0.5 + 0.5 * math.sin(3.0 * t + 0.5)))
        x2 = int((index * 7) % (2 * (w - s) or 1))
        x2 = x2 if x2 <= w - s else 2 * (w - s) - x2
        y2 = (h - s) // 2
        frame[y2 : y2 + s, x2 : x2 + s] = 255 - self._sprite
        frame[y1 : y1 + s, x1 : x1 + s] = self._sprite
        return frame

    def _render_face(self, base: Frame, index: int) -> Frame:
        h, w = base.shape[:2]
        cx, cy = self.centre if self.centre is not None else (w / 2, h / 2)
        angle, scale, dx, dy = head_motion(index)
        m = cv2.getRotationMatrix2D((cx, cy), angle, scale)
        m[0, 2] += dx * w
        m[1, 2] += dy * h
        out = cv2.warpAffine(
            base, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
        )
        return np.asarray(out, dtype=np.uint8)

    def read(self) -> Frame:
        with self._lock:
            index = self.frame_index + 1
            frame = self.render(index)
            self.frame_index = index
        if self.cfg.stamp:
            write_stamp(frame, time.perf_counter_ns())
        return frame

    def close(self) -> None:
        with self._lock:
            self._base = None
