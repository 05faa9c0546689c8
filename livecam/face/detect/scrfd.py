"""SCRFD face detector (insightface's det_10g, scrfd_2.5g_kps, scrfd_500m_kps) on ONNX
Runtime, decoded as ../shared/MODEL_CONTRACTS.md says: RGB (x - 127.5) / 128, letterboxed
top-left into the model's canvas; scores, box distances and keypoint offsets for strides
8, 16 and 32, two anchors per cell; threshold 0.5, NMS 0.4 (OpenCV's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Self

import numpy as np

from livecam.config.swap import DetectSettings
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
# A start_score for SCRFD (2.5G and 500M alike): real faces at 8-40 % of the frame width
# at 480p and 1080p score 0.68-0.90 (1st percentile 0.70), face-free frames at most 0.47
# (bench/bench_detector_scores.py).
START_SCORE = 0.6
_FIX = "use an SCRFD export with keypoints (det_10g, scrfd_*_kps): 9 outputs"


def split_outputs(outs: Sequence[Floats], name: str) -> tuple[list[Floats], ...]:
    """Scores, boxes and keypoints, each stride 8, 16, 32: grouped by their last axis
    (1, 4, 10) and ordered by anchor count, largest first (exports name them differently;
    the declared order breaks ties)."""
    groups: dict[int, list[Floats]] = {1: [], 4: [], 10: []}
    for out in outs:
        arr = out.reshape(-1, out.shape[-1]) if out.ndim else out
        if arr.ndim != 2 or arr.shape[-1] not in groups:
            raise ModelError(f"{name} has an output of shape {out.shape}, not SCRFD's", _FIX)
        groups[arr.shape[-1]].append(arr)
    if any(len(g) != len(STRIDES) for g in groups.values()):
        counts = {k: len(v) for k, v in groups.items()}
        raise ModelError(f"{name} is not a 9-output SCRFD model ({counts} by width)", _FIX)
    return tuple(sorted(g, key=len, reverse=True) for g in groups.values())


def anchor_centres(width: int, height: int, stride: int, anchors: int) -> Floats:
    """(cells * anchors, 2) x, y of each anchor: cells row by row, each repeated."""
    rows, cols = height // stride, width // stride
    ys, xs = np.mgrid[:rows, :cols]
    grid = np.stack([xs, ys], axis=-1).reshape(-1, 2).astype(np.float32)
    return np.repeat(grid * np.float32(stride), anchors, axis=0)


class ScrfdDetector(PatchDetector):
    """SCRFD with 5 keypoints (ArcFace order) on an ``OnnxModel``.

    ``input_size``: the canvas (a side or (width, height), multiples of 32); a model with
    a fixed input must be given its own size. ``mean``, ``std``, ``color``: the
    normalisation (contract defaults). ``score_threshold`` and ``nms_iou`` as insightface.
    ``max_sides``: None, one pass with the frame letterboxed into the canvas (upscaling
    allowed, as insightface); else one pass per side (frame shrunk so its long side is at
    most that; larger than the canvas: tiles, see ``detect_common``), merged by NMS.
    ``start_score`` (None: ``score_threshold``) and ``box_for_kps`` as ``YuNetDetector``.
    All patches of a batch that share a size run in one session call.
    """

    @classmethod
    def from_section(cls, model: OnnxModel, detect: DetectSettings, **keywords: Any) -> Self:
        """The live detector as its config section (``[swap.detect]``) sets it (the frame
        shrunk to ``detect_size``), with the other ``keywords``; a new detector option is
        read here. The source photos' detector takes no section (its sides are fixed)."""
        return cls(model, max_sides=(detect.detect_size,), **keywords)

    def __init__(
        self,
        model: OnnxModel,
        *,
        input_size: int | tuple[int, int] = (640, 640),
        mean: float | Sequence[float] = 127.5,
        std: float | Sequence[float] = 128.0,
        color: str = "rgb",
        score_threshold: float = 0.5,
        nms_iou: float = 0.4,
        max_sides: Sequence[int] | None = None,
        start_score: float | None = None,
        box_for_kps: Callable[[Points], Box] | None = None,
    ) -> None:
        canvas = canvas_of(model, as_size(input_size), "SCRFD")
        if len(model.outputs) != 9:
            raise ModelError(
                f"SCRFD model {model.path.name} has {len(model.outputs)} outputs, not 9", _FIX
            )
        super().__init__(
            model,
            canvas,
            upscale=True,
            mean=mean,
            std=std,
            color=color,
            score_threshold=score_threshold,
            nms_iou=nms_iou,
            max_sides=max_sides,
            start_score=start_score,
            box_for_kps=box_for_kps,
        )
        self.model_id = f"scrfd:{model.model_id}:{self.settings_id()}"

    def _decode(self, outs: list[Floats], width: int, height: int) -> Found:
        scores, boxes, kpss = split_outputs(outs, self.model.path.name)
        found = []
        for stride, score, dist, kp in zip(STRIDES, scores, boxes, kpss, strict=True):
            cells = (height // stride) * (width // stride)
            if cells == 0 or len(score) % cells:
                raise ModelError(
                    f"{self.model.path.name}: {len(score)} anchors do not fit a "
                    f"{width}x{height} input at stride {stride}",
                    _FIX,
                )
            centres = anchor_centres(width, height, stride, len(score) // cells)
            keep = np.flatnonzero(score[:, 0] >= self.score_threshold)
            c = centres[keep]
            d = dist[keep] * np.float32(stride)
            box = np.concatenate([c - d[:, :2], c + d[:, 2:]], axis=1)
            points = kp[keep].reshape(-1, 5, 2) * np.float32(stride) + c[:, None, :]
            found.append(Found(box.astype(np.float32), score[keep, 0], points))
        return concat(found)
