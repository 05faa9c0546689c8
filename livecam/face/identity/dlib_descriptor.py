"""Recognizer parts. ``DlibDescriptor`` computes dlib's 128-d ResNet face descriptor.

Every recognizer returns L2-normalised float32 vectors so cosine similarity is a dot product.
dlib's own convention (raw descriptors, Euclidean distance < 0.6 = same person) is kept
available through ``DlibDescriptor.raw_descriptor``; raw dlib descriptors have a norm of
about 1.4, so dlib's 0.6 corresponds to about 0.43 between unit vectors
(``DlibDescriptor.same_person_distance``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import cv2
import dlib
import numpy as np
import numpy.typing as npt

from livecam.face.dlib_files import RESNET, Shared, dlib_model_path, load_dlib_model
from livecam.face.identity.metrics import Embedding, l2_normalize
from livecam.face.parts import CpuPart, FrameContext
from livecam.types import Face, FaceWork, Frame

DLIB_SAME_PERSON_RAW = 0.6
"""dlib's threshold on the Euclidean distance of raw descriptors."""


def cosine_similarity(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cosine similarity of two embeddings (normalised here, so any scale works)."""
    return float(np.dot(l2_normalize(a), l2_normalize(b)))


class DlibDescriptor(CpuPart):
    """dlib's ResNet face descriptor (``dlib_face_recognition_resnet_model_v1.dat``).

    Needs the face's 68 landmarks (from ``Dlib68Landmarker``); dlib aligns a 150x150 chip
    from them. About 75 ms per face on one CPU core, so compute it once per track, not per
    frame. ``num_jitters`` > 0 averages over jittered chips (slower, slightly more stable).
    """

    dim = 128
    same_person_distance = 0.43

    def __init__(
        self,
        model_path: Path | None = None,
        num_jitters: int = 0,
        *,
        model: Shared[dlib.face_recognition_model_v1] | None = None,
    ) -> None:
        if model is None:
            path = model_path if model_path is not None else dlib_model_path(RESNET)
            model = Shared(load_dlib_model(dlib.face_recognition_model_v1, path))
        self._net = model
        self.num_jitters = num_jitters
        self.model_id = f"dlib-resnet128:jitter{num_jitters}"

    def embed(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        for work in faces:
            raw = self.raw_descriptor(frames[work.frame_index].image, work.face)
            work.face = dataclasses.replace(work.face, embedding=l2_normalize(raw))
        return list(faces)

    def raw_descriptor(self, frame: Frame, face: Face) -> Embedding:
        """dlib's unnormalised descriptor (dlib convention: distance < 0.6 = same person)."""
        if face.landmarks is None or len(face.landmarks) != 68:
            raise ValueError("DlibDescriptor needs the face's 68 landmarks; run a landmarker first")
        lm = np.asarray(face.landmarks, dtype=np.float32)
        h, w = frame.shape[:2]
        # Work on a crop around the face: dlib's chip extraction only needs that region.
        lo = lm.min(axis=0)
        hi = lm.max(axis=0)
        pad = 0.6 * float(max(hi - lo))
        x1, y1 = max(0, int(lo[0] - pad)), max(0, int(lo[1] - pad))
        x2, y2 = min(w, int(hi[0] + pad) + 1), min(h, int(hi[1] + pad) + 1)
        crop = np.ascontiguousarray(cv2.cvtColor(frame[y1:y2, x1:x2], cv2.COLOR_BGR2RGB))
        pts = dlib.points([dlib.point(round(x) - x1, round(y) - y1) for x, y in lm])
        rect = dlib.rectangle(0, 0, crop.shape[1] - 1, crop.shape[0] - 1)
        shape = dlib.full_object_detection(rect, pts)
        with self._net.lock:
            desc = self._net.model.compute_face_descriptor(crop, shape, self.num_jitters)
        return np.asarray(desc, dtype=np.float32)
