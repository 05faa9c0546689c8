"""dlib-only face parts for tests and bench scripts (no preset uses them): the HOG
detector ``DlibHogDetector`` and ``offline_analyzer``, a ``FaceAnalyzer`` of dlib parts
whose weights all come from PyPI wheels, independent of the preset table and the models
folder (the presets' own photo analyzer is ``build.photo_analyzer``).

HOG finds no keypoints, so ``DlibHogDetector`` places them at their average position
inside a HOG box (measured on the test portraits); a landmarker replaces them with fitted
ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import dlib
import numpy as np
import numpy.typing as npt

from livecam.face.detect.yunet import shrink
from livecam.face.dlib_files import Shared
from livecam.face.identity.dlib_descriptor import DlibDescriptor
from livecam.face.landmarks.dlib_shape import Dlib68Landmarker
from livecam.face.parts import Box, CpuPart, FrameContext
from livecam.face.source.analysis import FaceAnalyzer
from livecam.types import Face

# Mean position of the 5 ArcFace-order keypoints inside a dlib HOG box, as fractions of its
# width/height: eye (image left), eye (image right), nose tip, mouth corner left, right.
HOG_BOX_KPS = np.array(
    [[0.30, 0.29], [0.71, 0.31], [0.50, 0.52], [0.26, 0.73], [0.70, 0.75]], dtype=np.float32
)


def kps_from_box(bbox: Box) -> npt.NDArray[np.float32]:
    """Estimated 5 keypoints for a HOG box (see ``HOG_BOX_KPS``)."""
    x1, y1, x2, y2 = (float(v) for v in bbox)
    origin = np.array([x1, y1], dtype=np.float32)
    size = np.array([x2 - x1, y2 - y1], dtype=np.float32)
    return (origin + HOG_BOX_KPS * size).astype(np.float32)


class DlibHogDetector(CpuPart):
    """dlib HOG + linear SVM frontal-face detector on a downscaled grayscale frame.

    ``max_side``: the frame is shrunk so its long side is at most this many pixels before
    detection (speed); HOG finds faces of about 80 px and up in that image, so at
    ``max_side=400`` a 640x480 frame finds faces of about 130 px and up. ``upsample``: dlib's
    pyramid upsampling count (each step halves the smallest face found and costs ~4x).
    ``min_score``: dlib's ``adjust_threshold``; detections scoring below it are dropped
    (every detection it returns may start a track: ``start_score`` is the same).
    Frames of a batch are detected one after the other (dlib has no batched HOG).
    """

    def __init__(
        self,
        max_side: int = 400,
        upsample: int = 0,
        min_score: float = 0.0,
        *,
        model: Shared[dlib.fhog_object_detector] | None = None,
    ) -> None:
        if max_side < 64:
            raise ValueError(f"max_side must be >= 64, got {max_side}")
        if upsample < 0:
            raise ValueError(f"upsample must be >= 0, got {upsample}")
        self.max_side = max_side
        self.upsample = upsample
        self.min_score = min_score
        self.start_score = min_score
        self.model_id = f"dlib-hog:{max_side}px:up{upsample}:min{min_score:g}"
        self._detector = model if model is not None else Shared(dlib.get_frontal_face_detector())

    def with_settings(self, max_side: int, upsample: int = 0) -> DlibHogDetector:
        """Another detector with other settings sharing this one's model (loading dlib's
        HOG model takes about 0.3 s)."""
        return DlibHogDetector(max_side, upsample, self.min_score, model=self._detector)

    def warmup(self) -> None:
        self.detect([FrameContext(np.zeros((64, 64, 3), np.uint8))])

    def detect(self, frames: Sequence[FrameContext]) -> list[list[Face]]:
        return [self._detect_gray(frame.gray) for frame in frames]

    def _detect_gray(self, gray: npt.NDArray[np.uint8]) -> list[Face]:
        h, w = gray.shape[:2]
        small, scale = shrink(gray, self.max_side)
        with self._detector.lock:
            rects, scores, _ = self._detector.model.run(small, self.upsample, self.min_score)
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


def offline_analyzer(
    max_side: int = 400,
    upsample: int = 0,
    min_score: float = 0.0,
    with_encoder: bool = True,
) -> FaceAnalyzer:
    """An analyzer of dlib parts only: dlib HOG + 68-point predictor (+ 128-d
    descriptor). Raises ModelError when the weights package is missing.

    HOG finds faces of about 80 px and up in the image shrunk to ``max_side``;
    ``upsample=1`` halves that (source photos: e.g. ``max_side=1024, upsample=1``).
    """
    return FaceAnalyzer(
        detector=DlibHogDetector(max_side=max_side, upsample=upsample, min_score=min_score),
        landmarker=Dlib68Landmarker(),
        recognizer=DlibDescriptor() if with_encoder else None,
    )
