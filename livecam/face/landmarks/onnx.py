"""ONNX landmarker parts: ``Pfld68Landmarker`` (68 iBUG points: PFLD, or Peppa's slim
160) and ``Landmarker106`` (insightface's 2d106det). Every face of every frame is cropped,
and all crops go through the model in one batched call; the points are mapped back to
frame pixels through the inverse of each crop's affine."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from livecam.errors import ModelError
from livecam.face.crops.align import invert, kps_from_68, square_around, transform_points, warp_crop
from livecam.face.crops.onnx_input import check_color, image_input, to_blob
from livecam.face.parts import Box, Points
from livecam.runtime.onnx_model import OnnxModel
from livecam.types import Affine, FaceWork, FrameContext

#: the lips of insightface's 106-point layout (2d106det), each in polygon order
LIPS_106_OUTER = (52, 64, 63, 71, 67, 68, 61, 58, 59, 53, 56, 55)
LIPS_106_INNER = (65, 66, 62, 70, 69, 57, 60, 54)
#: the 106 point that stands for each of the 68 iBUG points (insightface's markup)
LANDMARKS_106_TO_68 = (
    (1, 10, 12, 14, 16, 3, 5, 7, 0, 23, 21, 19, 32, 30, 28, 26, 17)  # jaw
    + (43, 48, 49, 51, 50, 102, 103, 104, 105, 101)  # brows
    + (72, 73, 74, 86, 78, 79, 80, 85, 84)  # nose
    + (35, 41, 42, 39, 37, 36, 89, 95, 96, 93, 91, 90)  # eyes
    + LIPS_106_OUTER
    + LIPS_106_INNER
)

# PFLD's crop, measured against dlib's 68 points on the 10 faces of the test portraits
# (box side k x the points' RMS distance to their mean, centre moved dy sides down; the
# mean inter-ocular error is flat within 0.001 for k 3.0-3.8): k 3.1, dy 0.025 -> 0.042.
# The same box from YuNet's 5 keypoints: side 4.10x their RMS (sd 4 %), centre 0.065 side
# below their mean.
PFLD_BOX = (3.1, (0.0, 0.025))
PFLD_KPS_BOX = (4.10, (0.0, 0.065))
# slim_160_latest, measured the same way: k 3.7, dy 0.075 -> 0.051; from YuNet keypoints
# 4.90x, 0.109 below.
SLIM_BOX = (3.7, (0.0, 0.075))
SLIM_KPS_BOX = (4.90, (0.0, 0.109))
# A detector box (what 2d106det was trained on, insightface crops 1.5x its long side)
# from 5 keypoints: YuNet's boxes on the test portraits have a long side 4.64x the
# keypoints' RMS (sd 4 %), centred 0.05 side above their mean.
DETECTOR_KPS_BOX = (4.64, (0.0, -0.05))

BoxRule = tuple[float, tuple[float, float]]


def _square_affine(centre: npt.ArrayLike, side: float, size: int) -> Affine:
    """The affine mapping a ``side`` square around ``centre`` onto a ``size`` crop."""
    cx, cy = (float(v) for v in np.asarray(centre, np.float64).reshape(2))
    s = size / max(side, 1e-6)
    return np.array([[s, 0.0, size / 2 - cx * s], [0.0, s, size / 2 - cy * s]], np.float32)


def _box_square(bbox: Box, scale: float = 1.0) -> tuple[npt.NDArray[np.float32], float]:
    """Centre and side (``scale`` x the long side) of the square around a box."""
    b = np.asarray(bbox, np.float32)
    centre = ((b[:2] + b[2:]) / 2).astype(np.float32)
    return centre, scale * float(max(b[2] - b[0], b[3] - b[1]))


class _CropLandmarker:
    """Crops every face square, runs all crops as one batch and maps the points back.
    Subclasses say where the crop goes (``_affine``) and how to read the output
    (``_points``: (N, P, 2) in crop pixels)."""

    what = "landmark"

    def __init__(
        self,
        model: OnnxModel,
        input_size: int,
        mean: float | Sequence[float],
        std: float | Sequence[float],
        color: str,
    ) -> None:
        self.model = model
        self.input_size = int(input_size)
        self.mean = mean
        self.std = std
        self.color = check_color(color, self.what)
        self._input = image_input(model, self.input_size, self.what).name
        self.providers = model.providers

    def fit(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        if not faces:
            return []
        affines = [self._affine(work.face.bbox) for work in faces]
        crops = [
            warp_crop(frames[work.frame_index].image, affine, self.input_size)
            for work, affine in zip(faces, affines, strict=True)
        ]
        blob = to_blob(crops, self.mean, self.std, self.color)
        out = self.model.run_batch({self._input: blob}, [self._input])[0]
        points = self._points(np.asarray(out, np.float32).reshape(len(faces), -1))
        for work, affine, pts in zip(faces, affines, points, strict=True):
            landmarks = transform_points(pts, invert(affine))
            work.face = dataclasses.replace(
                work.face, landmarks=landmarks, kps=self._kps(landmarks)
            )
        return list(faces)

    def _affine(self, bbox: Box) -> Affine:
        raise NotImplementedError

    def _points(self, out: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        raise NotImplementedError

    def _kps(self, landmarks: Points) -> Points:
        raise NotImplementedError

    def _need_values(self, count: int) -> None:
        """A ModelError when the model's output holds fewer than ``count`` values a face."""
        shape = self.model.outputs[0].shape if self.model.outputs else ()
        size = int(np.prod([d for d in shape[1:] if isinstance(d, int)])) if shape else 0
        if len(shape) < 2 or size < count:
            raise ModelError(
                f"{self.what} model {self.model.path.name} gives {shape} per batch, "
                f"not the {count} values per face its contract needs",
                f"pass a {self.what} ONNX file",
            )

    def warmup(self) -> None:
        self.model.warmup()

    def close(self) -> None:
        self.model.close()


class Pfld68Landmarker(_CropLandmarker):
    """68 iBUG points from a crop-regression net: PFLD (``landmarks_68_pfld.onnx``,
    112 px) or Peppa's ``slim_160_latest.onnx`` (pass ``input_size=160`` and the
    ``SLIM_BOX``/``SLIM_KPS_BOX`` rules); the first 136 outputs are the 68 (x, y)
    normalised to the crop (slim's 7 extra values are ignored).

    The crop is the square of the face box's long side around its centre; the box should
    be ``box_for(landmarks)`` (the tracker's refit) or ``box_for_kps(kps)`` (a keypoint
    detector's face): a square ``box_rule[0]`` times the points' RMS distance to their
    mean, moved ``box_rule[1]`` sides. Input ``(x - mean) / std``, ``color`` order: on the
    test portraits PFLD's error is 0.042 inter-ocular with BGR and 0.043 with RGB (slim:
    0.051 BGR, 0.106 RGB), so BGR is the default.
    """

    what = "68-point landmark"

    def __init__(
        self,
        model: OnnxModel,
        *,
        input_size: int = 112,
        mean: float | Sequence[float] = 0.0,
        std: float | Sequence[float] = 255.0,
        color: str = "bgr",
        box_rule: BoxRule = PFLD_BOX,
        kps_box_rule: BoxRule = PFLD_KPS_BOX,
    ) -> None:
        super().__init__(model, input_size, mean, std, color)
        self._need_values(136)
        self.box_rule = box_rule
        self.kps_box_rule = kps_box_rule
        self.model_id = (
            f"landmarks68:{model.model_id}:{self.input_size}px:{self.color}:box{box_rule[0]:g}"
        )

    def box_for(self, landmarks: Points) -> Box:
        scale, shift = self.box_rule
        return square_around(landmarks, scale, np.array(shift, np.float32))

    def box_for_kps(self, kps: Points) -> Box:
        scale, shift = self.kps_box_rule
        return square_around(kps, scale, np.array(shift, np.float32))

    def _affine(self, bbox: Box) -> Affine:
        centre, side = _box_square(bbox)
        return _square_affine(centre, side, self.input_size)

    def _points(self, out: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        return out[:, :136].reshape(-1, 68, 2) * np.float32(self.input_size)

    def _kps(self, landmarks: Points) -> Points:
        return kps_from_68(landmarks)


class Landmarker106(_CropLandmarker):
    """insightface's 2d106det: 106 points from the crop insightface's ``Landmark.get``
    makes (centre of the face box, scale ``input_size / (1.5 x its long side)``, no
    rotation), input ``(x - mean) / std`` in RGB (insightface: mean 0, std 1 for this
    model, whose graph normalises itself), output's last 212 values in [-1, 1] ->
    ``(v + 1) * (input_size // 2)`` crop pixels, mapped back through the inverse crop.

    ``kps`` come from the 68 iBUG points the 106 contain (``LANDMARKS_106_TO_68``). The
    face box is a detector's (SCRFD, YuNet); ``box_for``/``box_for_kps`` give a YuNet-like
    box from the points' keypoints (measured on YuNet, not on 2d106det: no weights here).
    """

    what = "106-point landmark"

    def __init__(
        self,
        model: OnnxModel,
        *,
        input_size: int = 192,
        mean: float | Sequence[float] = 0.0,
        std: float | Sequence[float] = 1.0,
        color: str = "rgb",
    ) -> None:
        super().__init__(model, input_size, mean, std, color)
        self._need_values(212)
        self.model_id = f"landmarks106:{model.model_id}:{self.input_size}px:{self.color}"

    def box_for(self, landmarks: Points) -> Box:
        return self.box_for_kps(self._kps(landmarks))

    def box_for_kps(self, kps: Points) -> Box:
        scale, shift = DETECTOR_KPS_BOX
        return square_around(kps, scale, np.array(shift, np.float32))

    def _affine(self, bbox: Box) -> Affine:
        centre, side = _box_square(bbox, 1.5)
        return _square_affine(centre, side, self.input_size)

    def _points(self, out: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        pts = out[:, -212:].reshape(-1, 106, 2)
        return (pts + np.float32(1.0)) * np.float32(self.input_size // 2)

    def _kps(self, landmarks: Points) -> Points:
        return kps_from_68(np.asarray(landmarks, np.float32)[list(LANDMARKS_106_TO_68)])
