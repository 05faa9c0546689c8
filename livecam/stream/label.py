"""The on-output label (responsible use): a short text such as "AI-modified" drawn in a
corner of every output frame, white on a dark box, scaled to the frame height."""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from livecam.types import Frame

FONT = cv2.FONT_HERSHEY_SIMPLEX
#: the text's cap height is ``size * frame height``; the box adds this share of it around
PAD = 0.4
#: distance of the box from the frame's edges, as a share of the frame height
MARGIN = 0.02


@dataclass(frozen=True)
class Layout:
    """Where a label lies in frames of one size: its dark ``box`` (x0, y0, x1, y1, clipped),
    the text's baseline ``origin`` and the Hershey ``scale`` and ``thickness``."""

    box: tuple[int, int, int, int]
    origin: tuple[int, int]
    scale: float
    thickness: int


@dataclass(frozen=True)
class Label:
    """What to draw: ``text`` in ``position`` (a corner: ``top-left`` ... ``bottom-right``,
    ``output.label_position``), ``size`` x frame height tall. ``draw`` lays the text out once
    per frame size, not once per frame."""

    text: str
    position: str = "bottom-right"
    size: float = 0.05
    _layouts: dict[tuple[int, int], Layout] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def draw(self, frame: Frame) -> Frame:
        """A copy of ``frame`` with the label (see ``draw_label``)."""
        h, w = frame.shape[:2]
        layout = self._layouts.get((h, w))
        if layout is None:
            layout = layout_label(frame.shape, self.text, self.position, self.size)
            self._layouts.clear()  # one frame size at a time
            self._layouts[(h, w)] = layout
        return _draw(frame, self.text, layout)


def layout_label(shape: tuple[int, ...], text: str, position: str, size: float) -> Layout:
    """The label's layout in a frame of ``shape``."""
    h, w = shape[:2]
    target = max(6.0, size * h)  # the cap height in pixels
    (_, cap_h), _ = cv2.getTextSize("H", FONT, 1.0, 1)
    scale, thickness = target / cap_h, max(1, round(target / 12))
    (tw, th), base = cv2.getTextSize(text, FONT, scale, thickness)
    pad = max(2, round(th * PAD))
    margin = round(h * MARGIN)
    bw, bh = tw + 2 * pad, th + base + 2 * pad
    x0 = margin if position.endswith("left") else w - margin - bw
    y0 = margin if position.startswith("top") else h - margin - bh
    x0, y0 = max(0, x0), max(0, y0)
    box = (x0, y0, min(w, x0 + bw), min(h, y0 + bh))
    return Layout(box, (x0 + pad, y0 + pad + th), scale, thickness)


def label_box(
    shape: tuple[int, ...], text: str, position: str, size: float
) -> tuple[int, int, int, int]:
    """Where the label's dark box lies in a frame of ``shape``: (x0, y0, x1, y1), clipped."""
    return layout_label(shape, text, position, size).box


def draw_label(frame: Frame, text: str, position: str, size: float) -> Frame:
    """A copy of ``frame`` (uint8 BGR) with ``text`` in a dark box at ``position``; the
    text's height is ``size`` x the frame height. ``frame`` itself is never changed."""
    return _draw(frame, text, layout_label(frame.shape, text, position, size))


def _draw(frame: Frame, text: str, layout: Layout) -> Frame:
    out = np.array(frame, dtype=np.uint8, copy=True, order="C")
    x0, y0, x1, y1 = layout.box
    box = out[y0:y1, x0:x1]
    box[:] = box // 4  # dark but not opaque: the frame shows faintly through
    white = (255, 255, 255)
    cv2.putText(out, text, layout.origin, FONT, layout.scale, white, layout.thickness, cv2.LINE_AA)
    return out
