"""Stages that need no download: pass-through, and a face-box overlay for debugging."""

from __future__ import annotations

import logging

import cv2
import numpy as np

from livecam.errors import ModelError
from livecam.face.detect.yunet import YUNET_FIX, YuNetDetector, bundled_yunet
from livecam.face.parts import CPU_ONLY
from livecam.types import FrameContext, FramePacket, PlainStage

log = logging.getLogger(__name__)


class PassThroughStage(PlainStage):
    """Hands every frame on untouched (pipeline overhead baseline)."""

    name = "passthrough"
    required = False
    providers = None

    def warmup(self, width: int, height: int) -> None:
        pass

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        return batch

    def close(self) -> None:
        pass


class FaceBoxStage(PlainStage):
    """Draws face boxes and 5 keypoints found by OpenCV's YuNet (``YuNetDetector``): the
    YuNet file given (``--yunet``), else the one that ships with LiveCam."""

    name = "facebox"
    required = False

    def __init__(self, model_path: str | None, score_threshold: float = 0.6) -> None:
        self.model_path = model_path
        self.providers = CPU_ONLY  # OpenCV's own DNN runs YuNet
        self._detector: YuNetDetector | None = YuNetDetector(
            model_path if model_path is not None else bundled_yunet(), score_threshold
        )
        if model_path is not None:
            try:  # another ONNX model loads, then fails on its first frame
                self._detector.warmup()
            except cv2.error as e:
                log.debug("YuNet warm-up failed: %s", e)
                raise ModelError(
                    f"{model_path} is not a YuNet 2023mar face detector (OpenCV cannot run "
                    "it as one)",
                    YUNET_FIX,
                ) from None

    def warmup(self, width: int, height: int) -> None:
        if self._detector is not None:  # None once closed
            self._detector.detect([FrameContext(np.zeros((height, width, 3), np.uint8))])

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        if self._detector is None:
            return batch
        found = self._detector.detect([FrameContext(p.frame) for p in batch])
        for packet, faces in zip(batch, found, strict=True):
            if not faces:
                continue
            canvas = packet.frame.copy()
            for face in faces:
                x1, y1, x2, y2 = (int(v) for v in face.bbox)
                cv2.rectangle(canvas, (x1, y1), (x2, y2), (0, 255, 0), 2)
                for px, py in face.kps.astype(int):
                    cv2.circle(canvas, (int(px), int(py)), 2, (0, 0, 255), -1)
                cv2.putText(
                    canvas,
                    f"{face.score:.2f}",
                    (x1, max(y1 - 4, 10)),
                    cv2.FONT_HERSHEY_SIMPLEX,
                    0.5,
                    (0, 255, 0),
                    1,
                )
            packet.frame = canvas
        return batch

    def close(self) -> None:
        self._detector = None
