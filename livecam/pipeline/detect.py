"""Face detectors. ``DlibHogDetector`` runs dlib's HOG frontal-face detector (weights in dlib).

Detectors return ``Face`` objects with a box, a score and 5 keypoints. HOG finds no
keypoints, so ``DlibHogDetector`` places them at their average position inside a HOG box
(measured on the test portraits); a landmarker replaces them with fitted ones.
"""

from __future__ import annotations

import logging
from typing import Protocol, runtime_checkable

import cv2
import dlib
import numpy as np
import numpy.typing as npt

from livecam.types import Face, Frame

log = logging.getLogger(__name__)

# Mean position of the 5 ArcFace-order keypoints inside a dlib HOG box, as fractions of its
# width/height: eye (image left), eye (image right), nose tip, mouth corner left, right.
HOG_BOX_KPS = np.array(
    [[0.30, 0.29], [0.71, 0.31], [0.50, 0.52], [0.26, 0.73], [0.70, 0.75]], dtype=np.float32
)


@runtime_checkable
class FaceDetector(Protocol):
    """Finds faces in a BGR frame."""

    def detect(self, frame: Frame) -> list[Face]:
        """Faces in ``frame`` (bbox, score, 5 kps), in frame pixels, any order."""
        ...


def to_gray(frame: Frame) -> npt.NDArray[np.uint8]:
    """Grayscale copy of a BGR frame (what dlib's HOG and shape predictor work on)."""
    return np.ascontiguousarray(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY))


def kps_from_box(bbox: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Estimated 5 keypoints for a HOG box (see ``HOG_BOX_KPS``)."""
    x1, y1, x2, y2 = (float(v) for v in bbox)
    origin = np.array([x1, y1], dtype=np.float32)
    size = np.array([x2 - x1, y2 - y1], dtype=np.float32)
    return (origin + HOG_BOX_KPS * size).astype(np.float32)


class DlibHogDetector:
    """dlib HOG + linear SVM frontal-face detector on a downscaled grayscale frame.

    ``max_side``: the frame is shrunk so its long side is at most this many pixels before
    detection (speed); HOG finds faces of about 80 px and up in that image, so at
    ``max_side=400`` a 640x480 frame finds faces of about 130 px and up. ``upsample``: dlib's
    pyramid upsampling count (each step halves the smallest face found and costs ~4x).
    ``min_score``: dlib's ``adjust_threshold``; detections scoring below it are dropped.
    """

    def __init__(self, max_side: int = 400, upsample: int = 0, min_score: float = 0.0) -> None:
        if max_side < 64:
            raise ValueError(f"max_side must be >= 64, got {max_side}")
        if upsample < 0:
            raise ValueError(f"upsample must be >= 0, got {upsample}")
        self.max_side = max_side
        self.upsample = upsample
        self.min_score = min_score
        self._detector = dlib.get_frontal_face_detector()

    def detect(self, frame: Frame) -> list[Face]:
        return self.detect_gray(to_gray(frame))

    def detect_gray(self, gray: npt.NDArray[np.uint8]) -> list[Face]:
        """Like ``detect`` on an already grayscale frame (H, W) uint8."""
        h, w = gray.shape[:2]
        scale = min(1.0, self.max_side / max(h, w))
        small = gray
        if scale < 1.0:
            size = (max(1, round(w * scale)), max(1, round(h * scale)))
            small = np.asarray(cv2.resize(gray, size, interpolation=cv2.INTER_AREA), np.uint8)
        rects, scores, _ = self._detector.run(small, self.upsample, self.min_score)
        faces = []
        for rect, score in zip(rects, scores, strict=True):
            box = np.array(
                [rect.left(), rect.top(), rect.right() + 1, rect.bottom() + 1], dtype=np.float32
            )
            box /= np.float32(scale)
            box[[0, 2]] = np.clip(box[[0, 2]], 0, w)
            box[[1, 3]] = np.clip(box[[1, 3]], 0, h)
            if box[2] - box[0] < 2 or box[3] - box[1] < 2:
                continue
            faces.append(Face(bbox=box, score=float(score), kps=kps_from_box(box)))
        return faces
