"""``OnnxRecognizer``: identity embeddings from an ONNX face-recognition net (ArcFace
w600k_r50, MobileFaceNet) on 5-point aligned crops, every face of every frame in one
batched call, L2-normalised float32."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import get_args

import numpy as np

from livecam.errors import ModelError
from livecam.face.crops.align import TemplateName, align_affine, warp_crop
from livecam.face.crops.onnx_input import check_color, image_input, to_blob
from livecam.runtime.onnx_model import OnnxModel
from livecam.types import FaceWork, Frame, FrameContext

ARCFACE_SAME_PERSON_DISTANCE = 1.1
"""ArcFace (insightface buffalo_l, w600k_r50): deepface's verification threshold for
``Buffalo_L`` (euclidean_l2 1.1, deepface/config/threshold.py), i.e. cosine similarity
0.395 = 1 - 1.1**2 / 2."""

MOBILEFACENET_SAME_PERSON_DISTANCE = 1.1
"""MobileFaceNet (``mobilefacenet.onnx``), measured on the test portraits with YuNet's
keypoints (RGB input; BGR spreads them worse): one person in two photos 0.64-0.91 apart
(0.25 for two crops of one photo), different people 1.31-1.57; 1.1 sits between them."""


class OnnxRecognizer:
    """A recognition net on ``input_size`` crops aligned to ``template`` from each face's
    5 keypoints (least-squares similarity, border 0), input ``(x - mean) / std`` in
    ``color`` order; embeddings of ``dim`` (the output's last axis) are L2-normalised.

    ``same_person_distance``: the Euclidean distance of unit vectors below which two faces
    are the same person (None: ``ARCFACE_SAME_PERSON_DISTANCE``; MobileFaceNet wants
    ``MOBILEFACENET_SAME_PERSON_DISTANCE``).
    """

    def __init__(
        self,
        model: OnnxModel,
        *,
        input_size: int = 112,
        template: str = "arcface_112",
        mean: float | Sequence[float] = 127.5,
        std: float | Sequence[float] = 127.5,
        color: str = "rgb",
        same_person_distance: float | None = None,
    ) -> None:
        if template not in get_args(TemplateName):
            raise ValueError(
                f"recognizer template must be one of {', '.join(get_args(TemplateName))}, "
                f"got {template!r}"
            )
        self.model = model
        self.input_size = int(input_size)
        self.template: TemplateName = template  # type: ignore[assignment]
        self.mean = mean
        self.std = std
        self.color = check_color(color, "recognizer")
        self._input = image_input(model, self.input_size, "recognizer").name
        shape = model.outputs[0].shape if model.outputs else ()
        dim = shape[-1] if len(shape) == 2 else None
        if not isinstance(dim, int) or dim <= 0:
            raise ModelError(
                f"recognizer model {model.path.name} gives {shape}, not an (N, dim) embedding",
                "pass a face-recognition ONNX file (ArcFace, MobileFaceNet)",
            )
        self.dim = dim
        self.same_person_distance = (
            ARCFACE_SAME_PERSON_DISTANCE if same_person_distance is None else same_person_distance
        )
        self.providers = model.providers
        self.model_id = (
            f"recognizer:{model.model_id}:{template}:{self.input_size}px:{self.color}:{dim}d"
        )

    def crops(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[Frame]:
        """The aligned BGR crop of each face (what the model sees, before normalisation)."""
        return [
            warp_crop(
                frames[work.frame_index].image,
                align_affine(work.face.kps, self.template, self.input_size),
                self.input_size,
            )
            for work in faces
        ]

    def embed(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        if not faces:
            return []
        blob = to_blob(self.crops(frames, faces), self.mean, self.std, self.color)
        out = self.model.run_batch({self._input: blob}, [self._input])[0]
        vectors = np.asarray(out, np.float32).reshape(len(faces), self.dim)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = np.where(norms > 0, vectors / np.maximum(norms, 1e-12), vectors).astype(np.float32)
        for work, vector in zip(faces, unit, strict=True):
            work.face = dataclasses.replace(work.face, embedding=vector)
        return list(faces)

    def warmup(self) -> None:
        self.model.warmup()

    def close(self) -> None:
        self.model.close()
