"""Which target faces get swapped: the main face, all faces, or those matching a reference."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, Self, get_args

import numpy as np
import numpy.typing as npt

from livecam.config.swap import SelectSettings
from livecam.errors import ConfigError
from livecam.face.identity.metrics import Embedding, embedding_distance, l2_normalize
from livecam.face.parts import Recognizer
from livecam.face.track.tracking import iou
from livecam.types import Face, FaceWork, FrameContext, within_reach

SelectMode = Literal["one", "all", "reference"]
MODES: tuple[str, ...] = get_args(SelectMode)

TIE_AREA = 0.9
"""In ``one`` mode, faces with at least this share of the largest area count as tied."""
PAUSE_FRAMES = 15
"""A gap of more camera frames than this since the last selection is a pause of the swap
(switched off, Blank, Freeze): ``one`` then does not wait for the face it followed before
it (a person picked with ``set_target`` is still waited for)."""
SAME_PLACE_IOU = 0.3
"""A new track whose box overlaps the followed face's last box by this much (intersection
over union) is the followed person, restarted by the tracker."""


def main_face(faces: list[Face], frame_shape: tuple[int, ...]) -> Face | None:
    """The largest face; among faces about as large (``TIE_AREA``), the most central."""
    if not faces:
        return None
    largest = max(f.area for f in faces)
    tied = [f for f in faces if f.area >= TIE_AREA * largest]
    cx, cy = frame_shape[1] / 2, frame_shape[0] / 2
    return min(tied, key=lambda f: math.hypot(f.center[0] - cx, f.center[1] - cy))


def with_embeddings(
    faces: Sequence[Face], recognizer: Recognizer | None, frame: FrameContext | None
) -> list[Face]:
    """``faces`` with embeddings; those without one are embedded in one recognizer call."""
    todo = [i for i, f in enumerate(faces) if f.embedding is None]
    if not todo:
        return list(faces)
    if recognizer is None or frame is None:
        raise ValueError("reference selection needs face embeddings, or a recognizer and the frame")
    works = recognizer.embed([frame], [FaceWork(0, frame.seq, faces[i]) for i in todo])
    out = list(faces)
    for i, work in zip(todo, works, strict=True):
        out[i] = work.face
    return out


def resolve_threshold(threshold: float | None, recognizer: Recognizer | None) -> float:
    """``threshold``, or by default the recognizer's ``same_person_distance``."""
    if threshold is not None:
        return threshold
    if recognizer is None:
        raise ValueError("pass threshold= or a recognizer (its same_person_distance is used)")
    return float(recognizer.same_person_distance)


def select_faces(
    faces: list[Face],
    mode: SelectMode,
    frame_shape: tuple[int, ...],
    reference_embedding: Embedding | None = None,
    threshold: float | None = None,
    recognizer: Recognizer | None = None,
    frame: FrameContext | None = None,
) -> list[Face]:
    """The faces to swap.

    ``one``: the main face (``main_face``). ``all``: every face. ``reference``: faces whose
    ``embedding_distance`` (unit vectors) to ``reference_embedding`` is below ``threshold``
    (default: ``recognizer.same_person_distance``), closest first; embeddings are taken
    from ``face.embedding`` or computed with ``recognizer`` on ``frame``.
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
    limit = resolve_threshold(threshold, recognizer)
    ref = l2_normalize(reference_embedding)
    scored = []
    for face in with_embeddings(faces, recognizer, frame):
        assert face.embedding is not None
        dist = embedding_distance(ref, face.embedding)
        if dist < limit:
            scored.append((dist, face))
    scored.sort(key=lambda item: item[0])
    return [face for _, face in scored]


def face_at(faces: list[Face], point: tuple[float, float], shape: tuple[int, ...]) -> Face | None:
    """The face whose box holds ``point`` (normalised x, y of a frame of ``shape``), the
    smallest when boxes overlap; with none holding it, the face with the nearest centre
    among those whose box, grown by ``PICK_REACH`` of its size on each side, holds it;
    None when the point is far from every face (a click on the background picks nobody)."""
    x, y = point[0] * shape[1], point[1] * shape[0]
    inside = [f for f in faces if f.bbox[0] <= x <= f.bbox[2] and f.bbox[1] <= y <= f.bbox[3]]
    if inside:
        return min(inside, key=lambda f: f.area)
    near = [f for f in faces if within_reach(_box(f), x, y)]
    if not near:
        return None
    return min(near, key=lambda f: math.hypot(f.center[0] - x, f.center[1] - y))


def _box(face: Face) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = (float(v) for v in face.bbox)
    return x1, y1, x2, y2


class FaceSelector(Protocol):
    """Picks the faces of one frame to swap (one instance per stream). ``can_target``: the
    user may pin the person to swap (``set_target``; ``target`` is the pinned track)."""

    @property
    def can_target(self) -> bool: ...

    @property
    def target(self) -> int | None:
        """The pinned track id (None: the selector picks by itself)."""

    def set_target(self, point: tuple[float, float] | None) -> None:
        """Pin the person at ``point`` (normalised frame x, y) from the next frame on, or go
        back to picking by itself (None); ConfigError when it cannot pin (``can_target``)."""

    def select(self, frame: FrameContext, faces: list[Face]) -> list[Face]:
        """The faces to swap."""
        ...

    def pick(self, frame: FrameContext, faces: list[Face]) -> list[tuple[Face, int]]:
        """The faces to swap, each with the index of the source face that goes onto it."""
        ...


class Untargeted:
    """A selector the user cannot pin to a person (``all``, ``reference``, ``--map``)."""

    can_target = False
    target: int | None = None

    def set_target(self, point: tuple[float, float] | None) -> None:
        raise ConfigError(
            "only 'select one' swaps a person picked in the frame",
            "switch to select one (the panel's Processing tab, or `select one`)",
        )


@dataclass(frozen=True)
class ModeSelector(Untargeted):
    """``one`` or ``all`` (``select_faces``), needing no embeddings; one source (index 0)."""

    mode: SelectMode

    def select(self, frame: FrameContext, faces: list[Face]) -> list[Face]:
        return select_faces(faces, self.mode, frame.shape)

    def pick(self, frame: FrameContext, faces: list[Face]) -> list[tuple[Face, int]]:
        return [(face, 0) for face in self.select(frame, faces)]


class StickyMainFace:
    """``one`` on a tracked stream: the main face, then that person until they leave.

    With nothing followed, the main face (``main_face``) is picked and its ``track_id``
    followed: the face with that id is picked in later frames even when another face
    becomes larger. While the followed track is missing (it left, or the tracker restarted
    it under a new id) a face where it was last seen (``SAME_PLACE_IOU``) is that person
    again and is followed at once (never a frame of their face unswapped); with none
    there, the person is waited for up to ``patience`` frames (none after a pause of the
    swap, ``PAUSE_FRAMES``, unless pinned), meanwhile the frame's main face is swapped
    without being followed (a tracked face never goes out unswapped while the swap is
    on), then the main face of the frame is picked and followed. A frame's faces without
    track ids get its main face. A rewound or restarted stream (a frame whose ``seq`` is not
    after the last one's; the tracker starts new tracks then) starts over. One source (index 0); one
    instance per stream.

    ``set_target`` pins a person: a point of the frame (normalised x, y in 0..1) picks, in
    the next frame, the tracked face whose box holds it (the nearest box centre when none
    does); that track is followed (``pinned``) until it leaves, then it is auto again.
    ``set_target(None)`` goes back to auto (the main face) at once. It may be called from
    another thread than ``select``.
    """

    can_target = True

    def __init__(self, patience: int = 3) -> None:
        self.patience = patience
        self.followed: int | None = None
        self.pinned = False  # ``followed`` was chosen with ``set_target``
        self._missing = 0
        self._last_box: npt.NDArray[np.float32] | None = None  # the followed face's, last seen
        self._last_seq: int | None = None
        self._lock = threading.Lock()
        self._point: tuple[float, float] | None = None
        self._unpin = False

    def set_target(self, point: tuple[float, float] | None) -> None:
        """Pin the person at ``point`` (normalised frame x, y) from the next frame on, or
        go back to auto (None)."""
        with self._lock:
            self._point, self._unpin = point, point is None

    @property
    def target(self) -> int | None:
        """The pinned track id (None: auto)."""
        followed = self.followed
        return followed if self.pinned else None

    def _take_target(self, frame: FrameContext, faces: list[Face]) -> None:
        with self._lock:
            point, unpin = self._point, self._unpin
            self._point, self._unpin = None, False
        if unpin:
            self.followed, self.pinned = None, False
        if point is None:
            return
        face = face_at(faces, point, frame.shape)
        if face is not None and face.track_id >= 0:
            self.followed, self.pinned, self._missing = face.track_id, True, 0
            self._last_box = face.bbox

    def select(self, frame: FrameContext, faces: list[Face]) -> list[Face]:
        last_seq = self._last_seq
        if last_seq is not None and frame.seq <= last_seq:
            self.followed, self.pinned = None, False
        elif last_seq is not None and frame.seq - last_seq > PAUSE_FRAMES and not self.pinned:
            self._missing = self.patience  # after a pause, no wait for the track followed
        self._last_seq = frame.seq
        self._take_target(frame, faces)
        if self.followed is not None:
            same = [f for f in faces if f.track_id == self.followed]
            if not same:
                same = self._in_place(faces)
            if same:
                self.followed, self._missing = same[0].track_id, 0
                self._last_box = same[0].bbox
                return same[:1]
            self._missing += 1
            if self._missing <= self.patience:  # the main face meanwhile, not followed
                face = main_face(faces, frame.shape)
                return [] if face is None else [face]
        face = main_face(faces, frame.shape)
        self.followed = face.track_id if face is not None and face.track_id >= 0 else None
        self.pinned = False
        self._missing = 0
        self._last_box = None if face is None else face.bbox
        return [] if face is None else [face]

    def _in_place(self, faces: list[Face]) -> list[Face]:
        """The tracked face that overlaps where the followed one was last seen (the most)."""
        last = self._last_box
        if last is None:
            return []
        overlaps = [(iou(f.bbox, last), f) for f in faces if f.track_id >= 0]
        best = max(overlaps, key=lambda o: o[0], default=None)
        return [best[1]] if best is not None and best[0] >= SAME_PLACE_IOU else []

    def pick(self, frame: FrameContext, faces: list[Face]) -> list[tuple[Face, int]]:
        return [(face, 0) for face in self.select(frame, faces)]


def mode_selector(mode: SelectMode) -> FaceSelector:
    """The selector of ``one`` (``StickyMainFace``) or ``all`` (``ModeSelector``)."""
    return StickyMainFace() if mode == "one" else ModeSelector(mode)


@dataclass(frozen=True)
class Measurement:
    """A face's embedding (unit vector) and its distances to each target, taken in frame
    ``seq``."""

    embedding: Embedding
    distances: npt.NDArray[np.float32]
    seq: int


class TrackMeasurements:
    """Embeddings of tracked faces and their distances to target embeddings, per track id.

    A track is measured when it first appears and again every ``recheck_every`` frames (by
    ``seq``; a frame before the measurement, a rewound stream, counts as stale); faces
    without a track id are measured every time. The faces of a frame that need a
    measurement go to the recognizer in one call (a face that already carries an embedding
    is not embedded again). One instance per stream.
    """

    def __init__(
        self, recognizer: Recognizer, targets: Sequence[Embedding], recheck_every: int = 30
    ) -> None:
        if recheck_every < 1:
            raise ValueError(f"recheck_every must be >= 1, got {recheck_every}")
        if not targets:
            raise ValueError("at least one target embedding is needed")
        rows = [l2_normalize(t) for t in targets]
        if len({len(r) for r in rows}) != 1:
            raise ValueError(f"target embeddings differ in size: {[len(r) for r in rows]}")
        self.recognizer = recognizer
        self.targets = np.stack(rows)
        self.recheck_every = recheck_every
        self.embeddings_computed = 0
        self._cache: dict[int, Measurement] = {}

    def distances(self, embedding: Embedding) -> npt.NDArray[np.float32]:
        """Distance of an embedding to each target (``embedding_distance``)."""
        gaps: npt.NDArray[np.float32] = np.linalg.norm(
            self.targets - l2_normalize(embedding), axis=1
        ).astype(np.float32)
        return gaps

    def end_tracks(self, faces: Sequence[Face]) -> dict[int, Measurement]:
        """Forget the tracks that are not among ``faces`` (ended); their last measurements."""
        present = {f.track_id for f in faces}
        return {t: self._cache.pop(t) for t in [t for t in self._cache if t not in present]}

    def _fresh(self, face: Face, seq: int) -> Measurement | None:
        cached = self._cache.get(face.track_id) if face.track_id >= 0 else None
        if cached is not None and 0 <= seq - cached.seq < self.recheck_every:
            return cached
        return None

    def measure(self, frame: FrameContext, faces: Sequence[Face]) -> list[Measurement]:
        """Each face's measurement: from the cache when fresh, else taken now."""
        seq = frame.seq
        cached = [self._fresh(f, seq) for f in faces]
        stale = [f for f, c in zip(faces, cached, strict=True) if c is None]
        self.embeddings_computed += sum(f.embedding is None for f in stale)
        embedded = iter(with_embeddings(stale, self.recognizer, frame))
        out = []
        for measured in cached:
            if measured is None:
                face = next(embedded)
                assert face.embedding is not None
                emb = l2_normalize(face.embedding)
                measured = Measurement(emb, self.distances(emb), seq)
                if face.track_id >= 0:
                    self._cache[face.track_id] = measured
            out.append(measured)
        return out


class ReferenceMatcher(Untargeted):
    """Reference selection for a tracked stream, embedding each track only now and then.

    Every face closer than ``threshold`` to the reference is picked (source 0), closest
    first; the distances come from ``TrackMeasurements`` (measured when a track appears,
    then every ``recheck_every`` frames, in one recognizer call per frame). One instance
    per stream.
    """

    @classmethod
    def from_section(
        cls, select: SelectSettings, recognizer: Recognizer, reference_embedding: Embedding
    ) -> Self:
        """The matcher as its config section (``[swap.select]``) sets it, for the person of
        ``reference_embedding``; a new option of the matcher is read here."""
        return cls(recognizer, reference_embedding, select.reference_threshold)

    def __init__(
        self,
        recognizer: Recognizer,
        reference_embedding: Embedding,
        threshold: float | None = None,
        recheck_every: int = 30,
    ) -> None:
        self.threshold = resolve_threshold(threshold, recognizer)
        self.measurements = TrackMeasurements(recognizer, [reference_embedding], recheck_every)

    @property
    def embeddings_computed(self) -> int:
        return self.measurements.embeddings_computed

    def distances(self, frame: FrameContext, faces: list[Face]) -> list[float]:
        """Distance of each face to the reference, from the cache when fresh enough."""
        self.measurements.end_tracks(faces)
        return [float(m.distances[0]) for m in self.measurements.measure(frame, faces)]

    def select(self, frame: FrameContext, faces: list[Face]) -> list[Face]:
        """Faces of this frame that match the reference, closest first."""
        scored = zip(self.distances(frame, faces), faces, strict=True)
        return [f for d, f in sorted(scored, key=lambda item: item[0]) if d < self.threshold]

    def pick(self, frame: FrameContext, faces: list[Face]) -> list[tuple[Face, int]]:
        return [(face, 0) for face in self.select(frame, faces)]
