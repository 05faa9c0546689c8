"""The camera face's own glasses, found from its 68 landmarks and the picture's thin lines:
the classic swap keeps their frames over the swapped face.

A frame is a thin line (a black-hat or top-hat of the lightness, a structuring element of
about 5 % of the eye-to-chin distance) that stands far above the face's own fine detail
(the cheeks' median). The face wears glasses when such a line runs across its nose bridge
(between the inner eye corners, from the brows down to the bridge): a bare nose bridge has
none. The frames are then those lines around the eyes, brows and eye openings left out (the
camera's brows and eyes are not glasses; the eyes are the camera's in the default eye mode).
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from livecam.face.paste import colour as blend
from livecam.face.swap import mesh

FloatImage = npt.NDArray[np.float32]
Points = npt.NDArray[np.float32]

_LINE = 0.05  # the structuring element's size, share of the eye-to-chin distance
_ABOVE_SKIN = 6.0  # a frame's line is this many times the cheeks' median thin-line value
_FLOOR = 10.0  # and at least this (Lab lightness, 8-bit scaling)
_LENGTH = 0.12  # a frame's piece spans at least this share of the eye-to-chin distance


def thin_lines(lightness: FloatImage, size: float) -> FloatImage:
    """The larger of the black-hat (dark lines) and top-hat (bright lines) of
    ``lightness`` with an ellipse of ``_LINE`` face sizes (``size``: eye-to-chin px)."""
    k = max(3, int(_LINE * size) | 1)
    disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    dark = cv2.morphologyEx(lightness, cv2.MORPH_BLACKHAT, disk)
    bright = cv2.morphologyEx(lightness, cv2.MORPH_TOPHAT, disk)
    return np.asarray(np.maximum(dark, bright), np.float32)


def _box(points: Points, pad: float, shape: tuple[int, int]) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1): ``points``' bounding box grown by ``pad`` px, clipped to ``shape``."""
    h, w = shape
    x0, y0 = (max(0, int(v - pad)) for v in points.min(axis=0))
    x1, y1 = (int(v + pad) + 1 for v in points.max(axis=0))
    return x0, y0, min(x1, w), min(y1, h)


def camera_glasses(lightness: FloatImage, lm: Points) -> tuple[float, FloatImage]:
    """(bridge, frames) of the camera face with 68 landmarks ``lm`` in ``lightness`` (its
    Lab L, any ROI holding the face): ``bridge`` is the share of the nose bridge's width
    that one thin line crosses (near 1 with glasses, under 0.4 on the bare test faces);
    ``frames`` (0..1, ``lightness``'s size) the thin lines around the eyes, brows and eye
    openings left out, softened by a pixel."""
    shape = lightness.shape[:2]
    frames = np.zeros(shape, np.float32)
    up, _, size = mesh.face_frame(lm)
    # the zone glasses can cover: temple to temple, from under the brows to the nose's middle
    zone_pts = np.vstack(
        [
            lm[[0, 1]],
            lm[29][None] - up * (0.08 * size),
            lm[[15, 16]],
            lm[26:16:-1] - up * (0.04 * size),
        ]
    ).astype(np.float32)
    x0, y0, x1, y1 = _box(zone_pts, 2, shape)
    if x1 - x0 < 8 or y1 - y0 < 8:
        return 0.0, frames
    origin = np.array([x0, y0], np.float32)
    sub_shape = (y1 - y0, x1 - x0)
    lines = thin_lines(np.ascontiguousarray(lightness[y0:y1, x0:x1]), size)
    cheeks = blend.polygon_mask(
        sub_shape, [p - origin for p in mesh.skin_sample_polygons(lm)], convex=False
    )
    if cv2.countNonZero(cheeks) < 10:
        return 0.0, frames
    threshold = max(_FLOOR, _ABOVE_SKIN * float(np.median(lines[cheeks > 0])))
    hit = (lines > threshold).astype(np.uint8)
    reach = max(1, int(0.02 * size))  # a slanted or curved line spans a few rows
    tall = cv2.dilate(hit, np.ones((2 * reach + 1, 1), np.uint8))
    left, right = lm[39, 0], lm[42, 0]
    bx0 = int(left + 0.15 * (right - left) - x0)
    bx1 = int(right - 0.15 * (right - left) - x0)
    by0 = int((lm[21, 1] + lm[22, 1]) / 2 - y0)
    by1 = int(lm[28, 1] - y0)
    bridge = tall[max(0, by0) : max(0, by1) + 1, max(0, bx0) : max(0, bx1) + 1]
    cover = float(bridge.mean(axis=1).max()) if bridge.size else 0.0
    zone = blend.polygon_mask(sub_shape, [zone_pts - origin], convex=False)
    grow = max(1.0, 0.03 * size)
    brows = [
        np.vstack([b + up * grow, b[::-1] - up * grow]) - origin for b in (lm[17:22], lm[22:27])
    ]
    out = blend.polygon_mask(sub_shape, brows, convex=False)
    eyes = blend.polygon_mask(
        sub_shape, [lm[mesh.LEFT_EYE] - origin, lm[mesh.RIGHT_EYE] - origin], convex=False
    )
    g = max(1, int(grow))
    near_eyes = np.asarray(cv2.dilate(eyes, np.ones((2 * g + 1, 2 * g + 1), np.uint8)), np.uint8)
    out = np.maximum(out, near_eyes)
    keep = (hit * (zone > 0) * (out == 0)).astype(np.uint8)
    # a frame is a long line: specks (a mole, a lash, a shadow's edge) are left out
    _, labels, stats, _ = cv2.connectedComponentsWithStats(keep, connectivity=8)
    longest = np.maximum(stats[:, cv2.CC_STAT_WIDTH], stats[:, cv2.CC_STAT_HEIGHT])
    long_enough = longest >= _LENGTH * size
    long_enough[0] = False  # the background
    keep = long_enough[labels].astype(np.uint8)
    keep = cv2.dilate(keep, np.ones((3, 3), np.uint8)).astype(np.float32)
    frames[y0:y1, x0:x1] = cv2.GaussianBlur(keep, (0, 0), 0.7)
    return cover, np.clip(frames * 1.5, 0.0, 1.0)
