"""Landmarker parts. ``Dlib68Landmarker`` fits dlib's 68-point shape predictor in a box;
``Dlib5Landmarker`` fits dlib's 5-point predictor (ArcFace keypoints only)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import dlib
import numpy as np
import numpy.typing as npt

from livecam.face.crops.align import ARCFACE_112 as ARCFACE_TEMPLATE
from livecam.face.crops.align import kps_from_68, square_around
from livecam.face.dlib_files import (
    SHAPE_5,
    SHAPE_68,
    Shared,
    dlib_model_path,
    load_dlib_model,
)
from livecam.face.parts import Box, CpuPart, FrameContext, Points
from livecam.types import Face, FaceWork

# A dlib-HOG-like box from 68 landmarks (measured on the test portraits): the square's side
# is 2.69x the RMS distance of the points to their mean (rotation invariant), its centre
# sits 0.02 side right and 0.07 side above that mean.
_SIDE_PER_RMS = 2.69
_CENTRE_SHIFT = np.array([0.02, -0.07], dtype=np.float32)
# The same box from 5 ArcFace-order keypoints (YuNet's), measured on the test portraits
# composed at 8-30 % of a 1280x720 frame and tilted by 0 and +-8 deg (bench/bench_recall.py
# composes them): side 3.57x the keypoints' RMS distance to their mean (sd 6 %), centre
# 0.028 side right and 0.026 side above their mean. The 68 points fitted in it are as
# close to the truth (0.021 inter-ocular) as those fitted in the box of the true points.
_SIDE_PER_KPS_RMS = 3.57
_KPS_CENTRE_SHIFT = np.array([0.028, -0.026], dtype=np.float32)


def dlib_rect(bbox: npt.NDArray[np.float32]) -> dlib.rectangle:
    """A dlib rectangle (inclusive corners) from an (x1, y1, x2, y2) box."""
    x1, y1, x2, y2 = (round(float(v)) for v in bbox)
    return dlib.rectangle(x1, y1, max(x1 + 1, x2 - 1), max(y1 + 1, y2 - 1))


def box_from_landmarks(landmarks: Points) -> Box:
    """The dlib-HOG-style (x1, y1, x2, y2) box the 68-point predictor expects for these
    points (so it can refit them in the next frame)."""
    return square_around(landmarks, _SIDE_PER_RMS, _CENTRE_SHIFT)


def box_from_kps(kps: Points) -> Box:
    """The same box from a detector's 5 ArcFace-order keypoints (where the 68-point
    predictor starts on a face a keypoint detector such as YuNet found)."""
    return square_around(kps, _SIDE_PER_KPS_RMS, _KPS_CENTRE_SHIFT)


def dlib_points(
    predictor: dlib.shape_predictor, gray: npt.NDArray[np.uint8], bbox: Box
) -> npt.NDArray[np.float32]:
    """The (N, 2) float32 points of a dlib shape predictor fitted in ``bbox`` of ``gray``."""
    shape = predictor(gray, dlib_rect(bbox))
    return np.array([(p.x, p.y) for p in shape.parts()], dtype=np.float32)


class _DlibShapeLandmarker(CpuPart):
    """A dlib shape predictor run on the grayscale frame inside each face's box."""

    model_file = ""

    def __init__(
        self, model_path: Path | None = None, *, model: Shared[dlib.shape_predictor] | None = None
    ) -> None:
        if model is None:
            path = model_path if model_path is not None else dlib_model_path(self.model_file)
            model = Shared(load_dlib_model(dlib.shape_predictor, path))
        self._predictor = model

    def fit(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        with self._predictor.lock:
            for work in faces:
                gray = frames[work.frame_index].gray
                pts = dlib_points(self._predictor.model, gray, work.face.bbox)
                work.face = self._fitted(work.face, pts)
        return list(faces)

    def _fitted(self, face: Face, points: Points) -> Face:
        """``face`` with what these predictor points say about it."""
        raise NotImplementedError


class Dlib68Landmarker(_DlibShapeLandmarker):
    """dlib's 68-point iBUG shape predictor (``shape_predictor_68_face_landmarks.dat``),
    run on the grayscale frame inside the face box (a dlib HOG-style box fits best)."""

    model_id = "dlib-shape68"
    model_file = SHAPE_68

    def _fitted(self, face: Face, points: Points) -> Face:
        return dataclasses.replace(face, landmarks=points, kps=kps_from_68(points))

    def box_for(self, landmarks: Points) -> Box:
        return box_from_landmarks(landmarks)

    def box_for_kps(self, kps: Points) -> Box:
        return box_from_kps(kps)


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


class Dlib5Landmarker(_DlibShapeLandmarker):
    """dlib's 5-point predictor (``shape_predictor_5_face_landmarks.dat``): eye corners and
    the base of the nose, about 10x cheaper than the 68-point fit.

    It fills only ``kps`` (ArcFace order; nose tip and mouth corners placed from the eye
    centres with the ArcFace template), enough to align a face crop for ONNX models; the
    classic swapper needs the 68-point ``Dlib68Landmarker``.
    """

    model_id = "dlib-shape5"
    model_file = SHAPE_5

    def _fitted(self, face: Face, points: Points) -> Face:
        # dlib order: 0-1 corners of the eye on the image's right, 2-3 on its left, 4 nose
        kps = kps_from_eyes(points[2:4].mean(axis=0), points[0:2].mean(axis=0))
        return dataclasses.replace(face, landmarks=None, kps=kps)
