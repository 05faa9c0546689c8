"""Facial landmarkers. ``Dlib68Landmarker`` fits dlib's 68-point shape predictor in a box."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Protocol, runtime_checkable

import dlib
import numpy as np
import numpy.typing as npt

from livecam.pipeline.detect import to_gray
from livecam.pipeline.dlib_files import SHAPE_68, dlib_model_path
from livecam.types import Face, Frame


@runtime_checkable
class Landmarker(Protocol):
    """Fits landmarks to a face found in a frame."""

    def fit(self, frame: Frame, face: Face) -> Face:
        """A copy of ``face`` with ``landmarks`` filled and ``kps`` derived from them."""
        ...


def kps_from_68(landmarks: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """ArcFace-order 5 keypoints from 68 iBUG points: eye centres (36-41, 42-47),
    nose tip (30), mouth corners (48, 54)."""
    lm = np.asarray(landmarks, dtype=np.float32)
    return np.stack(
        [lm[36:42].mean(axis=0), lm[42:48].mean(axis=0), lm[30], lm[48], lm[54]]
    ).astype(np.float32)


def dlib_rect(bbox: npt.NDArray[np.float32]) -> dlib.rectangle:
    """A dlib rectangle (inclusive corners) from an (x1, y1, x2, y2) box."""
    x1, y1, x2, y2 = (round(float(v)) for v in bbox)
    return dlib.rectangle(x1, y1, max(x1 + 1, x2 - 1), max(y1 + 1, y2 - 1))


class Dlib68Landmarker:
    """dlib's 68-point iBUG shape predictor (``shape_predictor_68_face_landmarks.dat``),
    run on the grayscale frame inside the face box (a dlib HOG-style box fits best)."""

    def __init__(self, model_path: Path | None = None) -> None:
        path = model_path if model_path is not None else dlib_model_path(SHAPE_68)
        self._predictor = dlib.shape_predictor(str(path))

    def fit(self, frame: Frame, face: Face) -> Face:
        return self.fit_gray(to_gray(frame), face)

    def fit_gray(self, gray: npt.NDArray[np.uint8], face: Face) -> Face:
        """Like ``fit`` on an already grayscale frame (H, W) uint8."""
        landmarks = self.points_gray(gray, face.bbox)
        return dataclasses.replace(face, landmarks=landmarks, kps=kps_from_68(landmarks))

    def points_gray(
        self, gray: npt.NDArray[np.uint8], bbox: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """The (68, 2) float32 landmarks fitted in ``bbox`` of a grayscale frame."""
        shape = self._predictor(gray, dlib_rect(bbox))
        return np.array([(p.x, p.y) for p in shape.parts()], dtype=np.float32)
