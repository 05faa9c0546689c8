"""Face tracking: detect every N frames, refit landmarks every frame, stable ids, smoothing.

Between detections each track's 68 landmarks are refitted inside a box derived from its
previous landmarks, so the costly detector runs only every ``detect_every`` frames (and
on every frame while nothing is tracked). Output landmarks go through a One-Euro filter
(fast motion passes, still-face jitter is removed).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from livecam.pipeline.analysis import FaceAnalyzer
from livecam.pipeline.detect import DlibHogDetector, FaceDetector, kps_from_box, to_gray
from livecam.pipeline.landmarks import Dlib68Landmarker, Landmarker, kps_from_68
from livecam.types import Face, Frame, validate_frame

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]

# A dlib-HOG-like box from 68 landmarks (measured on the test portraits): the square's side
# is 2.69x the RMS distance of the points to their mean (rotation invariant), its centre
# sits 0.02 side right and 0.07 side above that mean.
_SIDE_PER_RMS = 2.69
_CENTRE_SHIFT = np.array([0.02, -0.07], dtype=np.float32)


def box_from_landmarks(landmarks: FloatArray) -> FloatArray:
    """The detector-style (x1, y1, x2, y2) box the shape predictor expects for these points."""
    lm = np.asarray(landmarks, dtype=np.float32)
    mean = lm.mean(axis=0)
    rms = float(np.sqrt(((lm - mean) ** 2).sum(axis=1).mean()))
    side = _SIDE_PER_RMS * rms
    centre = mean + _CENTRE_SHIFT * side
    half = side / 2
    return np.array(
        [centre[0] - half, centre[1] - half, centre[0] + half, centre[1] + half], dtype=np.float32
    )


def iou(a: FloatArray, b: FloatArray) -> float:
    """Intersection over union of two (x1, y1, x2, y2) boxes."""
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = float(iw * ih)
    union = float((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1])) - inter
    return inter / union if union > 0 else 0.0


def inside_fraction(box: FloatArray, width: int, height: int) -> float:
    """Share of the box's area that lies inside a width x height frame."""
    area = float((box[2] - box[0]) * (box[3] - box[1]))
    if area <= 0:
        return 0.0
    clipped = np.array(
        [max(box[0], 0), max(box[1], 0), min(box[2], width), min(box[3], height)], np.float32
    )
    iw, ih = clipped[2] - clipped[0], clipped[3] - clipped[1]
    return float(max(iw, 0) * max(ih, 0)) / area


def _centre_closeness(a: FloatArray, b: FloatArray) -> float:
    """1 when the boxes share a centre, falling to 0 at half the larger box's width apart."""
    size = float(max(a[2] - a[0], b[2] - b[0], 1.0))
    dist = float(np.hypot((a[0] + a[2] - b[0] - b[2]) / 2, (a[1] + a[3] - b[1] - b[3]) / 2))
    return max(0.0, 1.0 - dist / (0.5 * size))


def greedy_match(
    track_boxes: list[FloatArray], det_boxes: list[FloatArray], min_iou: float
) -> list[tuple[int, int, float]]:
    """Pairs (track index, detection index, IoU), best first, each index used once.

    A pair qualifies when its IoU is at least ``min_iou`` or its centres are closer than
    half a box width (a face that moved far between two detections); pairs are taken
    greedily by IoU + centre closeness.
    """
    pairs = []
    for ti, t in enumerate(track_boxes):
        for di, d in enumerate(det_boxes):
            overlap, near = iou(t, d), _centre_closeness(t, d)
            if overlap >= min_iou or near > 0:
                pairs.append((overlap + near, overlap, ti, di))
    pairs.sort(reverse=True)
    used_t: set[int] = set()
    used_d: set[int] = set()
    out = []
    for _, overlap, ti, di in pairs:
        if ti in used_t or di in used_d:
            continue
        used_t.add(ti)
        used_d.add(di)
        out.append((ti, di, overlap))
    return out


class OneEuroFilter:
    """One-Euro filter (Casiez et al. 2012) over an array of 2-D points.

    The cutoff adapts per point: ``min_cutoff + beta * speed``, where speed is the point's
    filtered velocity in units of ``scale`` per second (pass the face size as ``scale`` so
    the parameters do not depend on how big the face is).
    """

    def __init__(self, min_cutoff: float = 1.0, beta: float = 5.0, d_cutoff: float = 1.0) -> None:
        self.min_cutoff = min_cutoff
        self.beta = beta
        self.d_cutoff = d_cutoff
        self._x: FloatArray | None = None
        self._dx: FloatArray | None = None
        self._t = 0.0

    @staticmethod
    def _alpha(cutoff: float | FloatArray, dt: float) -> FloatArray:
        tau = 1.0 / (2.0 * math.pi * np.asarray(cutoff, dtype=np.float32))
        return np.asarray(1.0 / (1.0 + tau / dt), dtype=np.float32)

    def reset(self) -> None:
        self._x = None
        self._dx = None

    def __call__(self, points: FloatArray, t: float, scale: float = 1.0) -> FloatArray:
        x = np.asarray(points, dtype=np.float32)
        if self._x is None or self._dx is None or t <= self._t or self._x.shape != x.shape:
            self._x, self._dx, self._t = x.copy(), np.zeros_like(x), t
            return x.copy()
        dt = t - self._t
        dx = (x - self._x) / dt
        self._dx = self._dx + self._alpha(self.d_cutoff, dt) * (dx - self._dx)
        speed = np.linalg.norm(self._dx, axis=-1, keepdims=True) / max(scale, 1e-6)
        alpha = self._alpha(self.min_cutoff + self.beta * speed, dt)
        self._x = self._x + alpha * (x - self._x)
        self._t = t
        return self._x.copy()


@dataclass
class _Track:
    track_id: int
    landmarks: FloatArray  # raw (unsmoothed) last fit
    score: float
    missed: int = 0
    velocity: FloatArray = field(default_factory=lambda: np.zeros(2, np.float32))  # px/frame
    last_index: int = 0
    start_box: FloatArray | None = None  # box to fit in on the next frame, when not from landmarks
    filter: OneEuroFilter = field(default_factory=OneEuroFilter)


class FaceTracker:
    """Tracks faces across frames of one stream; one instance per stream and thread.

    ``detect_every``: run the detector on every N-th frame (and on every frame while
    nothing is tracked or a track is unconfirmed). ``smoothing``: One-Euro strength,
    0 = off, 1 = default, higher = calmer but laggier. ``max_missed``: a track ends after
    this many detection runs in a row that did not find it (after a miss the detector runs
    on every frame until the track is found again or ends, so a vanished face lingers at
    most ``max_missed`` frames). A track also ends when less than ``min_inside`` of its
    face box is inside the frame. Track ids count up from 1 per tracker, never reused.
    """

    def __init__(
        self,
        detector: FaceDetector,
        landmarker: Landmarker,
        detect_every: int = 3,
        smoothing: float = 1.0,
        fps: float = 30.0,
        max_missed: int = 2,
        min_iou: float = 0.3,
        min_inside: float = 0.6,
        min_face: float = 24.0,
        min_cutoff: float = 1.0,
        beta: float = 5.0,
    ) -> None:
        if detect_every < 1:
            raise ValueError(f"detect_every must be >= 1, got {detect_every}")
        if smoothing < 0:
            raise ValueError(f"smoothing must be >= 0, got {smoothing}")
        if fps <= 0:
            raise ValueError(f"fps must be > 0, got {fps}")
        self.detector = detector
        self.landmarker = landmarker
        self.detect_every = detect_every
        self.smoothing = smoothing
        self.fps = fps
        self.max_missed = max_missed
        self.min_iou = min_iou
        self.min_inside = min_inside
        self.min_face = min_face
        self.min_cutoff = min_cutoff
        self.beta = beta
        self._tracks: list[_Track] = []
        self._next_id = 1
        self._last_detect: int | None = None
        self._last_index: int | None = None
        self._fast = isinstance(detector, DlibHogDetector) and isinstance(
            landmarker, Dlib68Landmarker
        )

    @classmethod
    def from_analyzer(cls, analyzer: FaceAnalyzer, **kwargs: Any) -> FaceTracker:
        """A tracker sharing ``analyzer``'s detector and landmarker (same thread only)."""
        return cls(analyzer.detector, analyzer.landmarker, **kwargs)

    @property
    def track_count(self) -> int:
        return len(self._tracks)

    def reset(self) -> None:
        """Forget every track (ids keep counting up)."""
        self._tracks = []
        self._last_detect = None
        self._last_index = None

    def update(self, frame: Frame, frame_index: int) -> list[Face]:
        """Track faces in the next frame; returns them with ``track_id``, largest first."""
        validate_frame(frame, "FaceTracker.update")
        if self._last_index is not None and frame_index <= self._last_index:
            self.reset()  # a restarted or rewound stream
        self._last_index = frame_index
        h, w = frame.shape[:2]
        gray = to_gray(frame) if self._fast else None

        due = self._last_detect is None or frame_index - self._last_detect >= self.detect_every
        # nothing tracked, or a track the detector just missed: detect again right away
        if due or not self._tracks or any(t.missed for t in self._tracks):
            self._last_detect = frame_index
            self._associate(self._detect(frame, gray), frame_index)

        kept: list[_Track] = []
        for track in self._tracks:
            fresh = track.start_box is not None
            box = track.start_box if track.start_box is not None else self._box(track, frame_index)
            track.start_box = None
            lm = self._fit(frame, gray, box, track.score)
            new_box = box_from_landmarks(lm)
            size = float(new_box[2] - new_box[0])
            if size < self.min_face or inside_fraction(new_box, w, h) < self.min_inside:
                log.debug("track %d ended: face left the frame", track.track_id)
                continue
            if not fresh:
                gap = max(frame_index - track.last_index, 1)
                step = (lm.mean(axis=0) - track.landmarks.mean(axis=0)) / np.float32(gap)
                track.velocity = (0.7 * step + 0.3 * track.velocity).astype(np.float32)
            track.landmarks = lm
            track.last_index = frame_index
            kept.append(track)
        self._tracks = self._dedupe(kept)

        t = frame_index / self.fps
        faces = [self._output(track, t) for track in self._tracks]
        faces.sort(key=lambda f: f.area, reverse=True)
        return faces

    def _box(self, track: _Track, frame_index: int | None = None) -> FloatArray:
        """The track's box from its last landmarks, moved by its velocity to ``frame_index``."""
        box = box_from_landmarks(track.landmarks)
        if frame_index is not None:
            shift = track.velocity * np.float32(max(frame_index - track.last_index, 0))
            box = box + np.tile(shift, 2)
        return box

    def _detect(self, frame: Frame, gray: npt.NDArray[np.uint8] | None) -> list[Face]:
        if gray is not None and isinstance(self.detector, DlibHogDetector):
            return self.detector.detect_gray(gray)
        return self.detector.detect(frame)

    def _fit(
        self, frame: Frame, gray: npt.NDArray[np.uint8] | None, box: FloatArray, score: float
    ) -> FloatArray:
        if gray is not None and isinstance(self.landmarker, Dlib68Landmarker):
            return self.landmarker.points_gray(gray, box)
        face = Face(bbox=box, score=score, kps=kps_from_box(box))
        fitted = self.landmarker.fit(frame, face)
        if fitted.landmarks is None:
            raise ValueError("the tracker's landmarker returned no landmarks")
        return np.asarray(fitted.landmarks, dtype=np.float32)

    def _associate(self, detections: list[Face], frame_index: int) -> None:
        boxes = [self._box(t, frame_index) for t in self._tracks]
        matches = greedy_match(boxes, [d.bbox for d in detections], self.min_iou)
        matched_t = {ti for ti, _, _ in matches}
        matched_d = {di for _, di, _ in matches}
        for ti, di, overlap in matches:
            track = self._tracks[ti]
            track.missed = 0
            track.score = detections[di].score
            if overlap < 0.5:  # landmarks drifted off the face: restart from the detection
                track.start_box = detections[di].bbox
        survivors = []
        for ti, track in enumerate(self._tracks):
            if ti not in matched_t:
                track.missed += 1
                if track.missed >= self.max_missed:
                    log.debug("track %d ended: not detected", track.track_id)
                    continue
            survivors.append(track)
        for di, det in enumerate(detections):
            if di in matched_d:
                continue
            survivors.append(
                _Track(
                    track_id=self._next_id,
                    landmarks=np.zeros((68, 2), np.float32),
                    score=det.score,
                    start_box=det.bbox,
                    last_index=frame_index,
                    filter=OneEuroFilter(self._min_cutoff(), self._beta()),
                )
            )
            self._next_id += 1
        self._tracks = survivors

    def _dedupe(self, tracks: list[_Track]) -> list[_Track]:
        """Two tracks that converged on one face: keep the older id."""
        out: list[_Track] = []
        for track in sorted(tracks, key=lambda t: t.track_id):
            box = self._box(track)
            if all(iou(box, self._box(o)) < 0.6 for o in out):
                out.append(track)
        return out

    def _min_cutoff(self) -> float:
        return self.min_cutoff / self.smoothing if self.smoothing > 0 else 1e6

    def _beta(self) -> float:
        return self.beta / self.smoothing if self.smoothing > 0 else 0.0

    def _output(self, track: _Track, t: float) -> Face:
        lm = track.landmarks
        if self.smoothing > 0:
            box = box_from_landmarks(lm)
            lm = track.filter(lm, t, scale=float(box[2] - box[0]))
        return Face(
            bbox=box_from_landmarks(lm),
            score=track.score,
            kps=kps_from_68(lm),
            landmarks=lm.astype(np.float32),
            track_id=track.track_id,
        )
