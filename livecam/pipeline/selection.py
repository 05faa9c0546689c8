"""Which target faces get swapped: the main face, all faces, or those matching a reference."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal, get_args

from livecam.errors import ConfigError
from livecam.pipeline.identity import Embedding, IdentityEncoder, embedding_distance, l2_normalize
from livecam.types import Face, Frame

SelectMode = Literal["one", "all", "reference"]
MODES: tuple[str, ...] = get_args(SelectMode)

TIE_AREA = 0.9
"""In ``one`` mode, faces with at least this share of the largest area count as tied."""


def main_face(faces: list[Face], frame_shape: tuple[int, ...]) -> Face | None:
    """The largest face; among faces about as large (``TIE_AREA``), the most central."""
    if not faces:
        return None
    largest = max(f.area for f in faces)
    tied = [f for f in faces if f.area >= TIE_AREA * largest]
    cx, cy = frame_shape[1] / 2, frame_shape[0] / 2
    return min(tied, key=lambda f: math.hypot(f.center[0] - cx, f.center[1] - cy))


def _embedding(face: Face, encoder: IdentityEncoder | None, frame: Frame | None) -> Embedding:
    if face.embedding is not None:
        return face.embedding
    if encoder is None or frame is None:
        raise ValueError("reference selection needs face embeddings, or an encoder and the frame")
    return encoder.embed(frame, face)


def _threshold(threshold: float | None, encoder: IdentityEncoder | None) -> float:
    if threshold is not None:
        return threshold
    if encoder is None:
        raise ValueError("pass threshold= or an encoder (its same_person_distance is used)")
    return float(encoder.same_person_distance)


def select_faces(
    faces: list[Face],
    mode: SelectMode,
    frame_shape: tuple[int, ...],
    reference_embedding: Embedding | None = None,
    threshold: float | None = None,
    encoder: IdentityEncoder | None = None,
    frame: Frame | None = None,
) -> list[Face]:
    """The faces to swap.

    ``one``: the main face (``main_face``). ``all``: every face. ``reference``: faces whose
    ``embedding_distance`` (unit vectors) to ``reference_embedding`` is below ``threshold``
    (default: ``encoder.same_person_distance``), closest first; embeddings are taken from
    ``face.embedding`` or computed with ``encoder`` on ``frame``.
    """
    if mode not in MODES:
        raise ConfigError(
            f"face selection mode {mode!r} is not supported", f"use one of {', '.join(MODES)}"
        )
    if mode == "all":
        return list(faces)
    if mode == "one":
        face = main_face(faces, frame_shape)
        return [] if face is None else [face]
    if reference_embedding is None:
        raise ConfigError(
            "face selection 'reference' needs a reference face", "pass a reference image"
        )
    limit = _threshold(threshold, encoder)
    ref = l2_normalize(reference_embedding)
    scored = []
    for face in faces:
        emb = _embedding(face, encoder, frame)
        dist = embedding_distance(ref, emb)
        if dist < limit:
            scored.append((dist, dataclasses.replace(face, embedding=emb)))
    scored.sort(key=lambda item: item[0])
    return [face for _, face in scored]


@dataclass
class _Decision:
    match: bool
    distance: float
    checked_at: int


class ReferenceMatcher:
    """Reference selection for a tracked stream, embedding each track only now and then.

    A track's match decision is cached by track id and recomputed every ``recheck_every``
    frames (faces without a track id are embedded every time). One instance per stream.
    """

    def __init__(
        self,
        encoder: IdentityEncoder,
        reference_embedding: Embedding,
        threshold: float | None = None,
        recheck_every: int = 30,
    ) -> None:
        if recheck_every < 1:
            raise ValueError(f"recheck_every must be >= 1, got {recheck_every}")
        self.encoder = encoder
        self.reference = l2_normalize(reference_embedding)
        self.threshold = _threshold(threshold, encoder)
        self.recheck_every = recheck_every
        self._cache: dict[int, _Decision] = {}
        self.embeddings_computed = 0

    def distance(self, frame: Frame, face: Face, frame_index: int) -> float:
        """Distance of ``face`` to the reference, from the cache when fresh enough."""
        tid = face.track_id
        cached = self._cache.get(tid) if tid >= 0 else None
        if cached is not None and frame_index - cached.checked_at < self.recheck_every:
            return cached.distance
        emb = face.embedding if face.embedding is not None else self.encoder.embed(frame, face)
        self.embeddings_computed += 1
        dist = embedding_distance(self.reference, emb)
        if tid >= 0:
            self._cache[tid] = _Decision(dist < self.threshold, dist, frame_index)
        return dist

    def select(self, frame: Frame, faces: list[Face], frame_index: int) -> list[Face]:
        """Faces of this frame that match the reference, closest first."""
        present = {f.track_id for f in faces}
        for tid in [t for t in self._cache if t not in present]:
            del self._cache[tid]  # ended tracks
        scored = [(self.distance(frame, f, frame_index), f) for f in faces]
        return [f for d, f in sorted(scored, key=lambda item: item[0]) if d < self.threshold]
