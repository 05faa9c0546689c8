"""The on-output label (responsible use): a short text such as "AI-modified" drawn in a
corner of every output frame, white on a dark box, scaled to the frame height."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from livecam.config import LabelPosition, OutputConfig
from livecam.types import Frame

FONT = cv2.FONT_HERSHEY_SIMPLEX
#: the text's cap height is ``size * frame height``; the box adds this share of it around
PAD = 0.4
#: distance of the box from the frame's edges, as a share of the frame height
MARGIN = 0.02


@dataclass(frozen=True)
class Label:
    """What to draw: ``text`` in ``position``, ``size`` x frame height tall."""

    text: str
    position: LabelPosition = "bottom-right"
    size: float = 0.05

    @staticmethod
    def of(output: OutputConfig) -> Label | None:
        """The label ``output`` asks for, or None."""
        if output.label is None:
            return None
        return Label(output.label, output.label_position, output.label_size)

    def draw(self, frame: Frame) -> Frame:
        return draw_label(frame, self.text, self.position, self.size)


def label_box(
    shape: tuple[int, ...], text: str, position: LabelPosition, size: float
) -> tuple[int, int, int, int]:
    """Where the label's dark box lies in a frame of ``shape``: (x0, y0, x1, y1), clipped."""
    h, w = shape[:2]
    scale, thickness = _font(h, size)
    (tw, th), base = cv2.getTextSize(text, FONT, scale, thickness)
    pad = max(2, round(th * PAD))
    margin = round(h * MARGIN)
    bw, bh = tw + 2 * pad, th + base + 2 * pad
    x0 = margin if position.endswith("left") else w - margin - bw
    y0 = margin if position.startswith("top") else h - margin - bh
    x0, y0 = max(0, x0), max(0, y0)
    return x0, y0, min(w, x0 + bw), min(h, y0 + bh)


def draw_label(frame: Frame, text: str, position: LabelPosition, size: float) -> Frame:
    """A copy of ``frame`` (uint8 BGR) with ``text`` in a dark box at ``position``; the
    text's height is ``size`` x the frame height. ``frame`` itself is never changed."""
    out = np.array(frame, dtype=np.uint8, copy=True, order="C")
    x0, y0, x1, y1 = label_box(out.shape, text, position, size)
    box = out[y0:y1, x0:x1]
    box[:] = box // 4  # dark but not opaque: the frame shows faintly through
    scale, thickness = _font(out.shape[0], size)
    (_, th), base = cv2.getTextSize(text, FONT, scale, thickness)
    pad = max(2, round(th * PAD))
    origin = (x0 + pad, y0 + pad + th)
    cv2.putText(out, text, origin, FONT, scale, (255, 255, 255), thickness, cv2.LINE_AA)
    return out


def _font(height: int, size: float) -> tuple[float, int]:
    """Hershey scale and stroke width for a cap height of ``size * height`` pixels."""
    target = max(6.0, size * height)
    (_, base_h), _ = cv2.getTextSize("H", FONT, 1.0, 1)
    scale = target / base_h
    return scale, max(1, round(target / 12))
