"""A still frame with several real portraits side by side, for the ``synthetic`` source's
face motion (``source.face_motion``): benchmarks of 2 or 4 faces.

Each portrait is cropped to a square around its face (found by the bundled YuNet), so a
face fills ~40 % of its tile; tiles sit in one row (2 faces) or a 2x2 grid (4 faces)
below a free band at the top that keeps the pixel time stamp (160x32, top-left) clear of
pasted faces.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from livecam.errors import SourceError
from livecam.types import Frame
from livecam.userfiles.images import load_image_bgr

log = logging.getLogger(__name__)

TOP_BAND = 64
"""Pixels at the top left free of portraits (the stamp is 32 px high; head motion moves
the portraits by a few per cent)."""
CROP_PER_FACE = 2.5
"""Side of a portrait's square crop in face widths."""


def face_crop(image: Frame, what: str) -> Frame:
    """A square crop of ``image`` around its largest face, ``CROP_PER_FACE`` face widths
    on a side (clipped to the image); SourceError when no face is found."""
    from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
    from livecam.types import FrameContext

    faces = YuNetDetector(bundled_yunet(), max_sides=(640,)).detect([FrameContext(image)])[0]
    if not faces:
        raise SourceError(f"no face found in the portrait {what}", "use a photo of one face")
    face = max(faces, key=lambda f: f.area)
    x0, y0, x1, y1 = (float(v) for v in face.bbox)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    h, w = image.shape[:2]
    half = min(CROP_PER_FACE * (x1 - x0) / 2, cx, cy, w - cx, h - cy)
    left, top, side = int(cx - half), int(cy - half), int(2 * half)
    return image[top : top + side, left : left + side]


def grid_shape(faces: int) -> tuple[int, int]:
    """(columns, rows) of the tiles: one row up to 3 faces, else a near-square grid."""
    cols = faces if faces <= 3 else math.ceil(math.sqrt(faces))
    return cols, math.ceil(faces / cols)


def portrait_grid(portraits: Sequence[Path], faces: int, size: tuple[int, int]) -> Frame:
    """A ``size`` (width, height) frame with ``faces`` portraits (``portraits`` reused in
    turn) as face crops in a grid below ``TOP_BAND``, on a neutral grey backdrop."""
    if faces < 1 or not portraits:
        raise ValueError("portrait_grid needs at least one face and one portrait")
    w, h = size
    cols, rows = grid_shape(faces)
    cell_w, cell_h = w // cols, (h - TOP_BAND) // rows
    side = int(min(cell_w, cell_h) * 0.95)
    if side < 32:
        raise SourceError(
            f"{w}x{h} is too small for {faces} faces side by side",
            "use a larger --size (e.g. 640x480)",
        )
    crops = [face_crop(load_image_bgr(p), str(p)) for p in portraits]
    frame = np.full((h, w, 3), 96, np.uint8)
    for i in range(faces):
        tile = cv2.resize(crops[i % len(crops)], (side, side), interpolation=cv2.INTER_AREA)
        col, row = i % cols, i // cols
        x = col * cell_w + (cell_w - side) // 2
        y = TOP_BAND + row * cell_h + (cell_h - side) // 2
        frame[y : y + side, x : x + side] = tile
    log.debug("%d portraits in a %dx%d grid, tiles of %d px", faces, cols, rows, side)
    return frame
