"""The YuNet detector part: OpenCV's YuNet (``cv2.FaceDetectorYN``, the 2023mar ONNX
file, shipped in the package: ``bundled_yunet``).

Detectors return ``Face`` objects with a box, a score and 5 keypoints. YuNet works on a
frame shrunk to a maximum long side (``shrink``) and maps the faces back.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import cv2
import numpy as np
import numpy.typing as npt

from livecam.config.swap import DetectSettings
from livecam.errors import ModelError
from livecam.face.parts import Box, CpuPart, Points
from livecam.face.track.tracking import iou
from livecam.types import Face, Frame, FrameContext

log = logging.getLogger(__name__)


def shrink(
    image: npt.NDArray[np.uint8], max_side: int, whole: bool = False
) -> tuple[npt.NDArray[np.uint8], float]:
    """``image`` shrunk (area filter) so its long side is at most ``max_side``, and the
    scale applied (1.0: the image itself, not copied).

    ``whole``: by a whole factor k (the smallest that fits), on the image cut to multiples
    of k (the last k-1 rows and columns may go): OpenCV's fast path for area averaging,
    ~2.6 ms for 1920x1080 to 384x216 where an arbitrary factor takes ~9 ms.
    """
    h, w = image.shape[:2]
    if max(h, w) <= max_side:
        return image, 1.0
    k = math.ceil(max(h, w) / max_side)
    if whole and min(h, w) >= k:  # a sliver thinner than k (10000x10) would cut to nothing
        image, h, w = image[: h - h % k, : w - w % k], h // k * k, w // k * k
        scale = 1.0 / k
    else:
        scale = max_side / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(small, dtype=np.uint8), scale


YUNET_FILE = "face_detection_yunet_2023mar.onnx"
YUNET_SHA256 = "8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4"
YUNET_PACKAGE = "livecam.assets"  # where the bundled copy lives (the repository's assets/)
YUNET_FIX = "download face_detection_yunet_2023mar.onnx from the OpenCV model zoo and pass its path"


@dataclass(frozen=True)
class YuNetModel:
    """The bytes of a YuNet ONNX file and where they came from (for messages and ids)."""

    name: str
    data: bytes

    @staticmethod
    def read(path: str | Path) -> YuNetModel:
        """A YuNet file given by the user; ModelError when it is missing or unreadable."""
        p = Path(path)
        if not p.is_file():
            raise ModelError(f"YuNet model {p} does not exist", YUNET_FIX)
        try:
            return YuNetModel(str(p), p.read_bytes())
        except OSError as e:
            raise ModelError(f"cannot read the YuNet model {p}: {e.strerror}", YUNET_FIX) from None


def bundled_yunet() -> YuNetModel:
    """The YuNet 2023mar file shipped inside the package (``livecam.assets``), checked
    against its sha256; a missing or damaged copy is a ModelError with the fix."""
    fix = "reinstall livecam (pip install --force-reinstall livecam)"
    where = f"{YUNET_PACKAGE.replace('.', '/')}/{YUNET_FILE}"
    try:
        data = importlib.resources.files(YUNET_PACKAGE).joinpath(YUNET_FILE).read_bytes()
    except (OSError, ModuleNotFoundError) as e:
        raise ModelError(f"the bundled face detector {where} is missing ({e})", fix) from None
    if hashlib.sha256(data).hexdigest() != YUNET_SHA256:
        raise ModelError(f"the bundled face detector {where} is damaged (sha256 mismatch)", fix)
    return YuNetModel(YUNET_FILE, data)


class YuNetDetector(CpuPart):
    """OpenCV's YuNet detector (``cv2.FaceDetectorYN``) on the 2023mar ONNX file: boxes,
    scores and 5 keypoints, which already come in ArcFace order.

    ``model``: a path, or a ``YuNetModel`` (``bundled_yunet()``). ``score_threshold`` drops
    weaker faces, ``nms`` is the overlap above which the weaker of two boxes goes.
    ``max_sides``: one pass per entry on the frame shrunk by a whole factor so its long
    side is at most that (YuNet finds faces from ~16 px to ~0.7 of its input's side: at
    400, faces from about 6 % of the frame width at any resolution); faces of several
    passes are merged (the higher score wins where two overlap). None: one pass on the
    frame as it is.
    ``start_score``: detections from this score on may start a track; weaker ones only
    confirm a tracked face (None: ``score_threshold``). ``box_for_kps``: recompute each box
    from the 5 keypoints in the convention a landmarker wants (None: YuNet's own box).
    Older YuNet files (a different output layout) fail to load and are a ModelError.
    """

    @classmethod
    def from_section(
        cls, model: str | Path | YuNetModel, detect: DetectSettings, **keywords: Any
    ) -> Self:
        """The live detector as its config section (``[swap.detect]``) sets it (the frame
        shrunk to ``detect_size``), with the other ``keywords``; a new detector option is
        read here. The source photos' detector takes no section (its sides are fixed)."""
        return cls(model, max_sides=(detect.detect_size,), **keywords)

    def __init__(
        self,
        model: str | Path | YuNetModel,
        score_threshold: float = 0.6,
        nms: float = 0.3,
        *,
        max_sides: Sequence[int] | None = None,
        start_score: float | None = None,
        box_for_kps: Callable[[Points], Box] | None = None,
    ) -> None:
        yunet = model if isinstance(model, YuNetModel) else YuNetModel.read(model)
        if max_sides is not None and (not max_sides or min(max_sides) < 32):
            raise ValueError(f"max_sides must be None or sizes >= 32, got {max_sides}")
        self._size = (320, 320)
        self._detector = _create_yunet(yunet, self._size, score_threshold, nms)
        self.score_threshold = score_threshold
        self.nms = nms
        self.max_sides = tuple(max_sides) if max_sides is not None else None
        self.start_score = score_threshold if start_score is None else start_score
        self._box_for_kps = box_for_kps
        sides = "x".join(str(s) for s in self.max_sides) if self.max_sides else "full"
        box = f":box={box_for_kps.__qualname__}" if box_for_kps is not None else ""
        self.model_id = (
            f"yunet:{Path(yunet.name).name}:{score_threshold:g}:start{self.start_score:g}"
            f":{sides}px{box}"
        )

    def warmup(self) -> None:
        self.detect([FrameContext(np.zeros((320, 320, 3), np.uint8))])

    def detect(self, frames: Sequence[FrameContext]) -> list[list[Face]]:
        return [self._detect_one(frame.image) for frame in frames]

    def _detect_one(self, image: Frame) -> list[Face]:
        if self.max_sides is None:
            return [self._face(row, 1.0) for row in self._run(image)]
        rows: list[tuple[npt.NDArray[np.float32], float]] = []
        done: set[float] = set()
        for side in self.max_sides:
            small, scale = shrink(image, side, whole=True)
            if scale not in done:  # two sides above the frame's size: one pass
                done.add(scale)
                rows += [(row, scale) for row in self._run(small)]
        faces = [self._face(row, scale) for row, scale in rows]
        return _merge(faces, self.nms) if len(done) > 1 else faces

    def _run(self, image: Frame) -> npt.NDArray[np.float32]:
        h, w = image.shape[:2]
        if (w, h) != self._size:
            self._detector.setInputSize((w, h))
            self._size = (w, h)
        _, found = self._detector.detect(image)
        return np.zeros((0, 15), np.float32) if found is None else np.asarray(found, np.float32)

    def _face(self, row: npt.NDArray[np.float32], scale: float) -> Face:
        x, y, bw, bh = (float(v) / scale for v in row[:4])
        kps = (row[4:14].reshape(5, 2) / np.float32(scale)).astype(np.float32)
        if self._box_for_kps is not None:
            box = np.asarray(self._box_for_kps(kps), np.float32)
        else:
            box = np.array([x, y, x + bw, y + bh], np.float32)
        return Face(bbox=box, score=float(row[14]), kps=kps)


def _create_yunet(
    model: YuNetModel, size: tuple[int, int], score_threshold: float, nms: float
) -> cv2.FaceDetectorYN:
    """A ``cv2.FaceDetectorYN`` from the model's bytes; OpenCV's warning that its new
    graph engine ignores the compute target (printed on every load) is kept quiet."""
    level = cv2.utils.logging.getLogLevel()
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)
    try:
        buffer = np.frombuffer(model.data, np.uint8)
        return cv2.FaceDetectorYN.create(
            "onnx", buffer, np.zeros(0, np.uint8), size, score_threshold, nms, 5000
        )
    except cv2.error as e:
        raise ModelError(
            f"YuNet model {model.name} could not be loaded: {e}",
            "use the 2023mar YuNet ONNX file; older YuNet versions are not supported",
        ) from None
    finally:
        cv2.utils.logging.setLogLevel(level)


def _merge(faces: list[Face], overlap: float) -> list[Face]:
    """Faces of several passes, best score first, without those overlapping a better one
    by more than ``overlap`` (IoU)."""
    kept: list[Face] = []
    for face in sorted(faces, key=lambda f: f.score, reverse=True):
        if all(iou(face.bbox, k.bbox) <= overlap for k in kept):
            kept.append(face)
    return kept
