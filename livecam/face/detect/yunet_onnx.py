"""YuNet 2023mar on ONNX Runtime (so it can run on CUDA), decoded as OpenCV's
``cv2.FaceDetectorYN`` does (../shared/MODEL_CONTRACTS.md): raw BGR 0-255 padded
bottom/right to a multiple of 32 (a fixed-size export: letterboxed top-left into it, never
upscaled); per stride 8, 16, 32 one prior per cell with ``cls``, ``obj``, ``bbox`` and
``kps`` heads; score = sqrt(cls * obj); NMS 0.3.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from livecam.errors import ModelError
from livecam.face.detect.patches import (
    Floats,
    Found,
    PatchDetector,
    as_size,
    canvas_of,
    concat,
)
from livecam.face.parts import Box, Points
from livecam.runtime.onnx_model import OnnxModel

log = logging.getLogger(__name__)

STRIDES = (8, 16, 32)
HEADS = ("cls", "obj", "bbox", "kps")
_FIX = "use the 2023mar YuNet ONNX file; older YuNet versions are not supported"


class OnnxYuNetDetector(PatchDetector):
    """YuNet 2023mar on an ``OnnxModel``: boxes, scores and 5 keypoints (ArcFace order).

    ``input_size``: None, the model's own fixed size or, for a model with free spatial
    axes, each frame padded to a multiple of 32; a side or (width, height) otherwise.
    ``mean``, ``std``, ``color``: YuNet's contract (raw BGR). ``score_threshold`` and
    ``nms_iou`` as ``YuNetDetector`` (0.6, 0.3); ``max_sides``, ``start_score`` and
    ``box_for_kps`` too (passes larger than a fixed canvas are tiled, see
    ``detect_common``). Older YuNet files (loc/conf/iou outputs) are a ModelError.
    """

    def __init__(
        self,
        model: OnnxModel,
        *,
        input_size: int | tuple[int, int] | None = None,
        mean: float | Sequence[float] = 0.0,
        std: float | Sequence[float] = 1.0,
        color: str = "bgr",
        score_threshold: float = 0.6,
        nms_iou: float = 0.3,
        max_sides: Sequence[int] | None = None,
        start_score: float | None = None,
        box_for_kps: Callable[[Points], Box] | None = None,
    ) -> None:
        names = model.output_names
        wanted = [f"{head}_{s}" for head in HEADS for s in STRIDES]
        if sorted(names) != sorted(wanted):
            raise ModelError(
                f"{model.path.name} is not a YuNet 2023mar model (outputs {', '.join(names)})",
                _FIX,
            )
        canvas = canvas_of(model, None if input_size is None else as_size(input_size), "YuNet")
        super().__init__(
            model,
            canvas,
            upscale=False,
            mean=mean,
            std=std,
            color=color,
            score_threshold=score_threshold,
            nms_iou=nms_iou,
            max_sides=max_sides,
            start_score=start_score,
            box_for_kps=box_for_kps,
        )
        self._order = [names.index(name) for name in wanted]
        self.model_id = f"yunet-onnx:{model.model_id}:{self.settings_id()}"

    def _decode(self, outs: list[Floats], width: int, height: int) -> Found:
        heads = [outs[i].reshape(-1, outs[i].shape[-1]) for i in self._order]
        found = []
        for n, stride in enumerate(STRIDES):
            cls, obj, bbox, kps = (heads[h * len(STRIDES) + n] for h in range(len(HEADS)))
            cols = width // stride
            score = np.sqrt(np.clip(cls[:, 0], 0, 1) * np.clip(obj[:, 0], 0, 1))
            keep = np.flatnonzero(score >= self.score_threshold)
            cell = np.stack([keep % cols, keep // cols], axis=1).astype(np.float32)
            s = np.float32(stride)
            centre = (cell + bbox[keep, :2]) * s
            size = np.exp(bbox[keep, 2:]) * s
            box = np.concatenate([centre - size / 2, centre + size / 2], axis=1)
            points = (kps[keep].reshape(-1, 5, 2) + cell[:, None, :]) * s
            found.append(
                Found(
                    box.astype(np.float32),
                    score[keep].astype(np.float32),
                    points.astype(np.float32),
                )
            )
        return concat(found)
