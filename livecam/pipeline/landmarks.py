"""Facial landmarkers. ``Dlib68Landmarker`` fits dlib's 68-point shape predictor in a box."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Protocol, runtime_checkable

import dlib
import numpy as np
import numpy.typing as npt

from livecam.pipeline.detect import to_gray
from livecam.pipeline.dlib_files import SHAPE_5, SHAPE_68, dlib_model_path, load_dlib_model
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
        self._predictor = load_dlib_model(dlib.shape_predictor, path)

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


#: ArcFace 112x112 5-point template (eye left-in-image, eye right, nose tip, mouth corners)
ARCFACE_TEMPLATE = np.array(
    [
        [38.2946, 51.6963],
        [73.5318, 51.5014],
        [56.0252, 71.7366],
        [41.5493, 92.3655],
        [70.7299, 92.2041],
    ],
    dtype=np.float32,
)


def kps_from_eyes(
    left_eye: npt.NDArray[np.float32], right_eye: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """ArcFace-order keypoints from the two eye centres: the similarity that maps the
    template's eyes onto them places the nose tip and mouth corners."""
    src = ARCFACE_TEMPLATE[1] - ARCFACE_TEMPLATE[0]
    dst = np.asarray(right_eye, np.float32) - np.asarray(left_eye, np.float32)
    # rotation+scale as one complex number: dst = z * src
    z = complex(*dst) / complex(*src)
    rel = [complex(*(p - ARCFACE_TEMPLATE[0])) * z for p in ARCFACE_TEMPLATE]
    return np.array([[c.real, c.imag] for c in rel], np.float32) + np.asarray(left_eye, np.float32)


class Dlib5Landmarker:
    """dlib's 5-point predictor (``shape_predictor_5_face_landmarks.dat``): eye corners and
    the base of the nose, about 10x cheaper than the 68-point fit.

    It fills only ``kps`` (ArcFace order; nose tip and mouth corners placed from the eye
    centres with the ArcFace template), enough to align a face crop for ONNX models; the
    classic swapper needs the 68-point ``Dlib68Landmarker``.
    """

    def __init__(self, model_path: Path | None = None) -> None:
        path = model_path if model_path is not None else dlib_model_path(SHAPE_5)
        self._predictor = load_dlib_model(dlib.shape_predictor, path)

    def fit(self, frame: Frame, face: Face) -> Face:
        shape = self._predictor(to_gray(frame), dlib_rect(face.bbox))
        pts = np.array([(p.x, p.y) for p in shape.parts()], dtype=np.float32)
        # dlib order: 0-1 corners of the eye on the image's right, 2-3 on its left, 4 nose base
        kps = kps_from_eyes(pts[2:4].mean(axis=0), pts[0:2].mean(axis=0))
        return dataclasses.replace(face, landmarks=None, kps=kps)
