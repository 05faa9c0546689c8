"""Several source faces mapped to target people: each tracked face gets the source of the
target person it is, by embedding distance, steadily across frames and brief occlusions."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

import numpy as np
import numpy.typing as npt

from livecam.config.swap import SelectSettings
from livecam.face.identity.metrics import Embedding, embedding_distance
from livecam.face.parts import Recognizer
from livecam.face.track.selection import (
    Measurement,
    TrackMeasurements,
    Untargeted,
    resolve_threshold,
)
from livecam.face.track.tracking import iou
from livecam.types import Face, FrameContext

log = logging.getLogger(__name__)

NEAR_IOU = 0.2
"""A new track whose box overlaps a lost track's last box at least this much is near it."""


def assign_sources(
    distances: Sequence[npt.NDArray[np.float32]],
    current: Sequence[int | None],
    threshold: float,
    margin: float,
) -> list[int | None]:
    """One target (source index) per face, or None: at most one face per target.

    ``distances[f][t]``: face ``f`` to target ``t``; ``current[f]``: the target face ``f``
    holds now. A face may take target ``t`` when closer than ``threshold``, or keep the
    target it holds while closer than ``threshold + margin``. Greedy on cost, lowest first
    (the closest face-target pair anywhere wins, then the next among the rest), where a
    held target costs its distance minus ``margin``: another face or target displaces it
    only by being closer by more than ``margin`` (hysteresis). Ties go to the earlier face
    and the lower target.
    """
    pairs = []
    for f, (row, held) in enumerate(zip(distances, current, strict=True)):
        for t, dist in enumerate(row.tolist()):
            keep = t == held
            if dist < threshold + (margin if keep else 0.0):
                pairs.append((dist - margin if keep else dist, f, t))
    pairs.sort()
    out: list[int | None] = [None] * len(distances)
    taken: set[int] = set()
    for _, f, t in pairs:
        if out[f] is None and t not in taken:
            out[f] = t
            taken.add(t)
    return out


@dataclass(frozen=True)
class _Lost:
    """A track that ended holding a source, kept ``hold_frames`` for a returning face."""

    source: int
    bbox: npt.NDArray[np.float32]
    embedding: Embedding
    seq: int  # last frame it was seen in


class FaceMapper(Untargeted):
    """Maps source faces to target people in a tracked stream (one instance per stream).

    ``targets[i]``: a reference embedding of the person who gets source ``i``. Each face is
    measured (``TrackMeasurements``: when its track appears, then every ``recheck_every``
    frames, all faces needing it in one recognizer call) and the sources are assigned by
    ``assign_sources``: a person is one person, so one face per target per frame at most
    (the closest); a face matching no target (distance >= ``threshold``, by default the
    recognizer's ``same_person_distance``) is not swapped. A face keeps the source it holds
    (by track id) while its distance stays under ``threshold * (1 + hysteresis)`` and no
    face is closer by more than ``threshold * hysteresis``, so a borderline face doesn't
    flicker between sources or on and off.

    A track that ends holding a source (the face was occluded, or the tracker lost it) is
    remembered for ``hold_frames``: a new track that appears near its last box (IoU >=
    ``NEAR_IOU``) or with an embedding within ``threshold`` of its last one takes over the
    source it held (with the hysteresis), in the frame it appears; the new track is
    measured in that frame, so a clearly different person appearing there is not swapped.
    """

    @classmethod
    def from_section(
        cls, select: SelectSettings, recognizer: Recognizer, targets: Sequence[Embedding]
    ) -> Self:
        """The mapper as its config section (``[swap.select]``) sets it, for the persons of
        ``targets``; a new option of the mapper is read here."""
        return cls(recognizer, targets, select.reference_threshold)

    def __init__(
        self,
        recognizer: Recognizer,
        targets: Sequence[Embedding],
        threshold: float | None = None,
        recheck_every: int = 30,
        hold_frames: int = 30,
        hysteresis: float = 0.1,
    ) -> None:
        if hold_frames < 0 or hysteresis < 0:
            raise ValueError(f"hold_frames, hysteresis must be >= 0: {hold_frames}, {hysteresis}")
        self.threshold = resolve_threshold(threshold, recognizer)
        self.margin = self.threshold * hysteresis
        self.hold_frames = hold_frames
        self.measurements = TrackMeasurements(recognizer, targets, recheck_every)
        # track id -> the source it holds (or None), its last box and the frame of that box
        self._tracks: dict[int, tuple[int | None, npt.NDArray[np.float32], int]] = {}
        self._lost: list[_Lost] = []
        self._last_seq: int | None = None

    @property
    def embeddings_computed(self) -> int:
        return self.measurements.embeddings_computed

    def select(self, frame: FrameContext, faces: list[Face]) -> list[Face]:
        return [face for face, _ in self.pick(frame, faces)]

    def pick(self, frame: FrameContext, faces: list[Face]) -> list[tuple[Face, int]]:
        """The faces that are one of the target people, each with that person's source."""
        seq = frame.seq
        if self._last_seq is not None and seq < self._last_seq:
            self._lost = []  # a rewound stream: nothing to return to
        self._last_seq = seq
        self._end_tracks(faces, seq)
        measured = self.measurements.measure(frame, faces)
        current = [self._held(face, m) for face, m in zip(faces, measured, strict=True)]
        distances = [m.distances for m in measured]
        chosen = assign_sources(distances, current, self.threshold, self.margin)
        for face, source in zip(faces, chosen, strict=True):
            if face.track_id >= 0:
                self._tracks[face.track_id] = (source, face.bbox, seq)
        return [(face, s) for face, s in zip(faces, chosen, strict=True) if s is not None]

    def _end_tracks(self, faces: list[Face], seq: int) -> None:
        """Move the ended tracks that held a source to the lost list; drop expired ones."""
        ended = self.measurements.end_tracks(faces)
        present = {f.track_id for f in faces}
        for tid in [t for t in self._tracks if t not in present]:
            source, box, seen = self._tracks.pop(tid)
            last = ended.get(tid)
            if source is not None and last is not None:
                self._lost.append(_Lost(source, box, last.embedding, seen))
                log.debug("track %d ended holding source %d", tid, source)
        self._lost = [x for x in self._lost if seq - x.seq <= self.hold_frames]

    def _held(self, face: Face, measured: Measurement) -> int | None:
        """The source ``face`` holds: its track's, or for a new track the one it takes over."""
        if face.track_id < 0:
            return None
        track = self._tracks.get(face.track_id)
        return self._take_over(face, measured) if track is None else track[0]

    def _take_over(self, face: Face, measured: Measurement) -> int | None:
        """The source of the lost track this new face continues, if any (it is removed
        from the lost list): near its last box or like its last embedding, the most alike
        first."""
        candidates = [
            (embedding_distance(x.embedding, measured.embedding), i)
            for i, x in enumerate(self._lost)
        ]
        fits = [
            (d, i)
            for d, i in candidates
            if d < self.threshold or iou(self._lost[i].bbox, face.bbox) >= NEAR_IOU
        ]
        if not fits:
            return None
        lost = self._lost.pop(min(fits)[1])
        log.debug("track %d takes over source %d", face.track_id, lost.source)
        return lost.source
