"""Expression figures of a face from its landmarks, and the figures that compare two series
of them: mouth and eye openings (``mesh_measures`` from 468 face-mesh points,
``dlib68_measures`` from 68 iBUG points), the correlation of two series (``pearson``) and the
spread of per-frame offsets (``swim``). ``livecam check`` and the live-face benchmark
(``livecam.benchmark.live_face``) both measure a swapped face with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from livecam.types import Face

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Layout:
    """Where the measures read a landmark layout: the inner lips (upper, lower point
    pairs), the mouth corners, each eye's corners and lid pairs (upper, lower), and the
    two outer eye corners. "Right" is the subject's right (the left eye in the image)."""

    lips: tuple[tuple[int, int], ...]
    mouth_corners: tuple[int, int]
    right_corners: tuple[int, int]
    right_lids: tuple[tuple[int, int], ...]
    left_corners: tuple[int, int]
    left_lids: tuple[tuple[int, int], ...]
    outer_corners: tuple[int, int]


MESH_LAYOUT = Layout(
    lips=((13, 14), (82, 87), (312, 317)),
    mouth_corners=(61, 291),
    right_corners=(33, 133),
    right_lids=((160, 144), (159, 145), (158, 153)),
    left_corners=(362, 263),
    left_lids=((385, 380), (386, 374), (387, 373)),
    outer_corners=(33, 263),
)
"""MediaPipe face mesh indices (canonical face model topology)."""

DLIB68_LAYOUT = Layout(
    lips=((61, 67), (62, 66), (63, 65)),
    mouth_corners=(48, 54),
    right_corners=(36, 39),
    right_lids=((37, 41), (38, 40)),
    left_corners=(42, 45),
    left_lids=((43, 47), (44, 46)),
    outer_corners=(36, 45),
)
"""The 68 iBUG points in dlib's order (what every 68-point landmarker of LiveCam gives)."""


@dataclass(frozen=True)
class FaceMeasures:
    """One face's expression measures: ``mouth`` = inner-lip gap / mouth width, ``eye_right``
    and ``eye_left`` = lid gap / eye width (the subject's eyes), ``eye`` their mean, and
    ``eye_distance`` the outer eye corners' distance in pixels."""

    mouth: float
    eye_right: float
    eye_left: float
    eye: float
    eye_distance: float


def _dist(points: Floats, a: int, b: int) -> float:
    return float(np.hypot(*(points[a] - points[b])))


def _opening(points: Floats, pairs: Sequence[tuple[int, int]], corners: tuple[int, int]) -> float:
    gap = float(np.mean([_dist(points, a, b) for a, b in pairs]))
    return gap / max(_dist(points, *corners), 1e-6)


def measures(points: npt.ArrayLike, layout: Layout) -> FaceMeasures:
    """The measures of one face's ``points`` (N, 2) read through ``layout``."""
    p = np.asarray(points, np.float64).reshape(-1, 2)
    right = _opening(p, layout.right_lids, layout.right_corners)
    left = _opening(p, layout.left_lids, layout.left_corners)
    return FaceMeasures(
        mouth=_opening(p, layout.lips, layout.mouth_corners),
        eye_right=right,
        eye_left=left,
        eye=(right + left) / 2,
        eye_distance=_dist(p, *layout.outer_corners),
    )


def mesh_measures(points: npt.ArrayLike) -> FaceMeasures:
    """The measures from 468 face-mesh points."""
    return measures(points, MESH_LAYOUT)


def dlib68_measures(points: npt.ArrayLike) -> FaceMeasures:
    """The measures from 68 landmarks in dlib's order (the presets' 68-point landmarkers)."""
    return measures(points, DLIB68_LAYOUT)


def pearson(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson correlation of two series (nan when either is constant or shorter than 2)."""
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.size < 2 or x.size != y.size:
        return math.nan
    x, y = x - x.mean(), y - y.mean()
    den = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / den if den > 1e-12 else math.nan


def swim(offsets: npt.ArrayLike) -> float:
    """The standard deviation over frames of per-frame 2-D offsets (already in eye-corner
    distances): sqrt(var x + var y); nan for fewer than 2 frames."""
    o = np.asarray(offsets, np.float64).reshape(-1, 2)
    if len(o) < 2:
        return math.nan
    return float(math.sqrt(float(o.var(axis=0).sum())))


def largest_face(faces: Sequence[Face]) -> Face | None:
    """The largest face of a detection (None when there is none)."""
    return max(faces, key=lambda f: f.area) if faces else None
