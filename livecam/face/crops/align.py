"""5-point face alignment: the crop templates of the face models, a least-squares
similarity from keypoints to a template, and batched crops.

Templates are in crop pixels for their size (``template(name, size)``); the conventions
(ArcFace 112, inswapper's +8 px shift at 128, FFHQ 512) are those of
``../shared/MODEL_CONTRACTS.md``.
"""

from __future__ import annotations

from typing import Literal

import cv2
import numpy as np
import numpy.typing as npt

from livecam.types import Affine, Frame

Points = npt.NDArray[np.float32]
Box = npt.NDArray[np.float32]  # x1, y1, x2, y2

TemplateName = Literal["arcface_112", "arcface_128", "ffhq_512"]

#: ArcFace 112x112 5-point template (eye left-in-image, eye right, nose tip, mouth corners)
ARCFACE_112 = np.array(
    [
        [38.2946, 51.6963],
        [73.5318, 51.5014],
        [56.0252, 71.7366],
        [41.5493, 92.3655],
        [70.7299, 92.2041],
    ],
    dtype=np.float32,
)
#: inswapper's 128x128 template: ArcFace's at scale 1, shifted +8 px in x (insightface
#: >= 0.7.2; FaceFusion's ``arcface_128`` is this divided by 128)
ARCFACE_128 = (ARCFACE_112 + np.array([8.0, 0.0], np.float32)).astype(np.float32)
#: GFPGAN's FFHQ 512x512 template (GPEN, CodeFormer: the same, scaled to their size)
FFHQ_512 = np.array(
    [
        [192.98138, 239.94708],
        [318.90277, 240.1936],
        [256.63416, 314.01935],
        [201.26117, 371.41043],
        [313.08905, 371.15118],
    ],
    dtype=np.float32,
)
_TEMPLATES: dict[str, tuple[Points, int]] = {
    "arcface_112": (ARCFACE_112, 112),
    "arcface_128": (ARCFACE_128, 128),
    "ffhq_512": (FFHQ_512, 512),
}


def template(name: TemplateName, size: int) -> Points:
    """The 5 template points of ``name`` for a ``size`` x ``size`` crop (scaled from the
    template's own size: ``arcface_128`` at 256 is hyperswap's, ``ffhq_512`` at 256 is
    GPEN-BFR-256's)."""
    points, own = _TEMPLATES[name]
    return (points * np.float32(size / own)).astype(np.float32)


def umeyama(src: npt.ArrayLike, dst: npt.ArrayLike) -> Affine:
    """The least-squares similarity (rotation, uniform scale, translation) mapping ``src``
    points onto ``dst`` (Umeyama 1991; what skimage's SimilarityTransform estimates and
    insightface uses), as a (2, 3) float32 matrix."""
    s = np.asarray(src, np.float64).reshape(-1, 2)
    d = np.asarray(dst, np.float64).reshape(-1, 2)
    s_mean, d_mean = s.mean(axis=0), d.mean(axis=0)
    sc, dc = s - s_mean, d - d_mean
    cov = dc.T @ sc / len(s)
    u, sig, vt = np.linalg.svd(cov)
    sign = np.eye(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        sign[1, 1] = -1
    rot = u @ sign @ vt
    var = (sc**2).sum() / len(s)
    scale = float(np.trace(np.diag(sig) @ sign) / var) if var > 0 else 1.0
    out = np.empty((2, 3), np.float64)
    out[:, :2] = scale * rot
    out[:, 2] = d_mean - out[:, :2] @ s_mean
    return out.astype(np.float32)


def align_affine(kps: npt.ArrayLike, name: TemplateName, size: int) -> Affine:
    """The affine mapping frame pixels to a ``size`` crop of the face whose 5 keypoints are
    ``kps`` (least-squares similarity onto the template)."""
    return umeyama(kps, template(name, size))


def warp_crop(image: Frame, affine: Affine, size: int) -> Frame:
    """The ``size`` x ``size`` crop of ``image`` under ``affine`` (bilinear, border 0)."""
    crop = cv2.warpAffine(
        image, affine, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT
    )
    return np.ascontiguousarray(crop)


def invert(affine: Affine) -> Affine:
    """The inverse of a (2, 3) affine (crop pixels -> frame pixels)."""
    return cv2.invertAffineTransform(np.asarray(affine, np.float64)).astype(np.float32)


def transform_points(points: npt.ArrayLike, affine: Affine) -> Points:
    """``points`` (N, 2) mapped through ``affine``."""
    p = np.asarray(points, np.float64).reshape(-1, 2)
    a = np.asarray(affine, np.float64)
    return (p @ a[:, :2].T + a[:, 2]).astype(np.float32)


def kps_from_68(landmarks: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """ArcFace-order 5 keypoints from 68 iBUG points: eye centres (36-41, 42-47),
    nose tip (30), mouth corners (48, 54)."""
    lm = np.asarray(landmarks, dtype=np.float32)
    return np.stack(
        [lm[36:42].mean(axis=0), lm[42:48].mean(axis=0), lm[30], lm[48], lm[54]]
    ).astype(np.float32)


def square_around(points: Points, side_per_rms: float, shift: npt.NDArray[np.float32]) -> Box:
    """A square box whose side is ``side_per_rms`` times the points' RMS distance to their
    mean (rotation invariant) and whose centre is that mean moved by ``shift`` sides."""
    pts = np.asarray(points, dtype=np.float32)
    mean = pts.mean(axis=0)
    rms = float(np.sqrt(((pts - mean) ** 2).sum(axis=1).mean()))
    side = side_per_rms * rms
    centre = mean + shift * side
    half = side / 2
    return np.array(
        [centre[0] - half, centre[1] - half, centre[0] + half, centre[1] + half], dtype=np.float32
    )
