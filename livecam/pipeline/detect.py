"""Detector parts. ``DlibHogDetector``: dlib's HOG frontal-face detector (weights in dlib).
``YuNetDetector``: OpenCV's YuNet (``cv2.FaceDetectorYN``, the 2023mar ONNX file).

Detectors return ``Face`` objects with a box, a score and 5 keypoints. HOG finds no
keypoints, so ``DlibHogDetector`` places them at their average position inside a HOG box
(measured on the test portraits); a landmarker replaces them with fitted ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import cv2
import dlib
import numpy as np
import numpy.typing as npt

from livecam.errors import ModelError
from livecam.pipeline.dlib_files import Shared
from livecam.pipeline.parts import Box, CpuPart, FrameContext
from livecam.types import Face

log = logging.getLogger(__name__)

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
    ``min_score``: dlib's ``adjust_threshold``; detections scoring below it are dropped.
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
        scale = min(1.0, self.max_side / max(h, w))
        small = gray
        if scale < 1.0:
            size = (max(1, round(w * scale)), max(1, round(h * scale)))
            small = np.asarray(cv2.resize(gray, size, interpolation=cv2.INTER_AREA), np.uint8)
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


YUNET_FIX = "download face_detection_yunet_2023mar.onnx from the OpenCV model zoo and pass its path"


class YuNetDetector(CpuPart):
    """OpenCV's YuNet detector (``cv2.FaceDetectorYN``) on the 2023mar ONNX file: boxes,
    scores and 5 keypoints, which already come in ArcFace order.

    ``score_threshold`` drops weaker faces, ``nms`` is the overlap above which the weaker
    of two boxes goes. The input size follows each frame's size. Older YuNet files (a
    different output layout) fail to load and are a ModelError.
    """

    def __init__(self, model_path: str | Path, score_threshold: float = 0.6, nms: float = 0.3):
        path = Path(model_path)
        if not path.is_file():
            raise ModelError(f"YuNet model {path} does not exist", YUNET_FIX)
        try:
            self._detector = cv2.FaceDetectorYN.create(
                str(path), "", (320, 320), score_threshold, nms, 5000
            )
        except cv2.error as e:
            raise ModelError(
                f"YuNet model {path} could not be loaded: {e}",
                "use the 2023mar YuNet ONNX file; older YuNet versions are not supported",
            ) from None
        self.model_id = f"yunet:{path.name}:{score_threshold:g}"
        self._size = (320, 320)

    def warmup(self) -> None:
        self.detect([FrameContext(np.zeros((320, 320, 3), np.uint8))])

    def detect(self, frames: Sequence[FrameContext]) -> list[list[Face]]:
        return [self._detect_one(frame) for frame in frames]

    def _detect_one(self, frame: FrameContext) -> list[Face]:
        h, w = frame.image.shape[:2]
        if (w, h) != self._size:
            self._detector.setInputSize((w, h))
            self._size = (w, h)
        _, found = self._detector.detect(frame.image)
        if found is None:
            return []
        faces = []
        for row in np.asarray(found, np.float32):
            x, y, bw, bh = (float(v) for v in row[:4])
            box = np.array([x, y, x + bw, y + bh], np.float32)
            kps = row[4:14].reshape(5, 2).astype(np.float32)
            faces.append(Face(bbox=box, score=float(row[14]), kps=kps))
        return faces
