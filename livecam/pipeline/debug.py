"""Stages that need no download: pass-through, and a face-box overlay for debugging."""

from __future__ import annotations

import logging
from pathlib import Path

import cv2
import numpy as np

from livecam.errors import ModelError
from livecam.types import FramePacket

log = logging.getLogger(__name__)


class PassThroughStage:
    """Hands every frame on untouched (pipeline overhead baseline)."""

    name = "passthrough"
    required = False

    def warmup(self, width: int, height: int) -> None:
        pass

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        return batch

    def close(self) -> None:
        pass


class FaceBoxStage:
    """Draws face boxes and 5 keypoints found by OpenCV's YuNet (cv2.FaceDetectorYN).

    Without a configured YuNet file it is a no-op that warns once (no download needed).
    """

    name = "facebox"
    required = False

    def __init__(self, model_path: str | None, score_threshold: float = 0.6) -> None:
        self.model_path = model_path
        self.score_threshold = score_threshold
        self._detector: cv2.FaceDetectorYN | None = None
        if model_path is None:
            log.warning(
                "facebox stage: no YuNet model configured, frames pass through unchanged "
                "(set pipeline.yunet_model to face_detection_yunet_2023mar.onnx)"
            )
        elif not Path(model_path).is_file():
            raise ModelError(
                f"YuNet model {model_path} does not exist",
                "download face_detection_yunet_2023mar.onnx from the OpenCV model zoo and "
                "set pipeline.yunet_model to its path",
            )

    def warmup(self, width: int, height: int) -> None:
        if self.model_path is None:
            return
        try:
            self._detector = cv2.FaceDetectorYN.create(
                self.model_path, "", (width, height), self.score_threshold, 0.3, 5000
            )
        except cv2.error as e:
            raise ModelError(
                f"YuNet model {self.model_path} could not be loaded: {e}",
                "use the 2023mar YuNet ONNX file; older YuNet versions are not supported",
            ) from None
        self._detector.detect(np.zeros((height, width, 3), np.uint8))

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        if self._detector is None:
            return batch
        for packet in batch:
            h, w = packet.frame.shape[:2]
            self._detector.setInputSize((w, h))
            _, found = self._detector.detect(packet.frame)
            if found is None:
                continue
            canvas = packet.frame.copy()
            for row in found:
                x, y, bw, bh = (int(v) for v in row[:4])
                cv2.rectangle(canvas, (x, y), (x + bw, y + bh), (0, 255, 0), 2)
                for i in range(5):
                    px, py = int(row[4 + 2 * i]), int(row[5 + 2 * i])
                    cv2.circle(canvas, (px, py), 2, (0, 0, 255), -1)
                cv2.putText(
                    canvas,
                    f"{row[14]:.2f}",
                    (x, max(y - 4, 10)),
                    cv2.FONT_HERSHEY_SIMPLEX,
                    0.5,
                    (0, 255, 0),
                    1,
                )
            packet.frame = canvas
        return batch

    def close(self) -> None:
        self._detector = None
