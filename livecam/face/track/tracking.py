"""Face tracking: detect every N frames, follow faces in between, stable ids, smoothing.

Works from the boxes and 5 keypoints of any ``Detector``. With a ``RefitLandmarker`` (the
lite preset's slim-160) each track's
landmarks are refitted in every frame inside the box the landmarker wants around its
previous landmarks; without one, a track moves by its measured velocity between
detections. Either way the costly detector runs only every ``detect_every`` processed
frames (and on every frame while nothing is tracked), however many camera frames were
dropped in between. The output points go through a One-Euro filter clocked by the frames'
capture times (fast motion passes, still-face jitter is removed).

What a viewer would see as the face sliding or jumping is kept out: a camera frame that
repeats the last one (exactly, or within ``repeat_tolerance`` grey levels nearly
everywhere) gives the last faces again and moves no state; a detection matched to a
refitted track confirms it and moves the refit's box toward it by ``correction`` (a
nudge: the refit does not jump on detection frames); a refit whose size, shape or
position jumps against the track's last landmarks (a fit sliding off a fast or blurred
head) is rejected: the detector runs on that frame and the track restarts from its
detection. While no trustworthy fit is found (and while a fit lands mostly outside the
frame, a face leaving it) the track is bridged: its last good fit, moved by its velocity,
is its face for up to ``max_missed`` frames, then it ends. The swap never drops for a frame
or two on a fast head: the camera face would flash through.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import numpy.typing as npt

from livecam.config.swap import DetectSettings
from livecam.face.parts import Detector, RefitLandmarker
from livecam.face.track.repeat import HeldRepeats
from livecam.types import Face, FaceWork, FrameContext, validate_frame

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]


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


def fit_change(prev: FloatArray, new: FloatArray, expected_shift: FloatArray) -> FitChange:
    """How far landmarks ``new`` moved from ``prev`` beyond what a head does in a frame:
    the size ratio (RMS distance to the mean), the shape change left after the best
    similarity transform (RMS, in ``new``'s size) and the shift of the mean against
    ``expected_shift`` (in ``prev``'s size)."""
    p = np.asarray(prev, np.float64)
    q = np.asarray(new, np.float64)
    pc, qc = p - p.mean(axis=0), q - q.mean(axis=0)
    size_p = float(np.sqrt((pc**2).sum(axis=1).mean()))
    size_q = float(np.sqrt((qc**2).sum(axis=1).mean()))
    if size_p <= 1e-6 or size_q <= 1e-6:
        return FitChange(0.0, math.inf, math.inf)
    u, _, vt = np.linalg.svd(pc.T @ qc)
    aligned = (pc @ (u @ vt)) * (size_q / size_p)
    shape = float(np.sqrt(((qc - aligned) ** 2).sum(axis=1).mean())) / size_q
    shift = float(np.linalg.norm(q.mean(axis=0) - p.mean(axis=0) - expected_shift)) / size_p
    return FitChange(size_q / size_p, shape, shift)


@dataclass(frozen=True)
class FitChange:
    """A refit against the track's last landmarks (``fit_change``)."""

    scale: float
    shape: float
    shift: float


@dataclass(frozen=True)
class JumpLimits:
    """The most a track's landmarks may change in one frame before the refit counts as
    sliding off the face. Measured with the lite preset's slim-160 refit on the testdata
    clips: over the five talking heads (1,569 refits) the largest per-frame size change is
    14 % (|log| 0.14), shape change 0.14, shift 0.15 sizes; the hikers clip's fits that
    slide off a blurred, turning head (frames 493-496, 508-513) shrink 18-53 % a frame.
    A gap of several camera frames allows ``sqrt(gap)`` times as much (at most 2x)."""

    log_scale: float = 0.18
    shape: float = 0.3
    shift: float = 0.7

    def exceeded(self, change: FitChange, gap: int) -> bool:
        k = min(math.sqrt(max(gap, 1)), 2.0)
        return (
            abs(math.log(max(change.scale, 1e-6))) > k * self.log_scale
            or change.shape > k * self.shape
            or change.shift > k * self.shift
        )


MIN_BRIDGED_INSIDE = 0.2
"""A bridged face (``_Track.bridged``) with less of its box than this inside the frame has
left it: its track ends."""

MAX_GAP = 15
"""Camera frames between two tracked frames beyond which tracking starts over (a pause)."""


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
    face: Face  # raw (unsmoothed) estimate in the last frame
    measured: Face  # the last measurement: a landmarker fit or a detection
    measured_seq: int  # the frame it was made in
    measurements: int = 0
    new: bool = True  # not yet moved by a frame after its first detection
    missed: int = 0
    velocity: FloatArray = field(default_factory=lambda: np.zeros(2, np.float32))  # px/frame
    start: Face | None = None  # a detection to continue from in this frame
    filter: OneEuroFilter = field(default_factory=OneEuroFilter)
    detection: Face | None = None  # the detection it matched in this frame
    correction: FloatArray | None = None  # box shift toward that detection, this frame
    hidden: int = 0  # frames in a row without a trustworthy fit (bridged from the last one)

    def shift(self, seq: int) -> FloatArray:
        """How far the track moved since its last measurement, by its velocity."""
        return self.velocity * np.float32(max(seq - self.measured_seq, 0))

    def box(self, seq: int, landmarker: RefitLandmarker | None) -> FloatArray:
        """The box of the track's last measurement moved to frame ``seq``."""
        return face_box(self.measured, landmarker) + np.tile(self.shift(seq), 2)

    def fitted(self, face: Face, seq: int, landmarker: RefitLandmarker | None) -> None:
        """This frame's good fit becomes the track's face; a refit (or, without a
        landmarker, a detection) is a measurement that updates the velocity."""
        if landmarker is not None or self.start is not None:  # a measurement
            if not self.new and (self.start is None or landmarker is None):
                gap = max(seq - self.measured_seq, 1)
                step = (_anchor(face) - _anchor(self.measured)) / np.float32(gap)
                self.velocity = (0.7 * step + 0.3 * self.velocity).astype(np.float32)
            self.measured, self.measured_seq = face, seq
            self.measurements += 1
        self.face, self.start, self.new = face, None, False

    def bridged(self, seq: int, max_missed: int, landmarker: RefitLandmarker | None) -> bool:
        """Bridge this frame from the track's last good fit (its refit jumped or left the
        frame): the fit moved by the track's velocity becomes its face. False when it has
        been bridged more than ``max_missed`` frames in a row: it ends."""
        self.hidden += 1
        self.start = None
        if self.hidden > max_missed:
            log.debug("track %d ended: no trustworthy fit", self.track_id)
            return False
        self.face = moved(self.measured, self.shift(seq), landmarker)
        return True

    def predicted(self, seq: int) -> Face:
        """The track's face in frame ``seq``: its new detection, else its last measurement
        moved by its velocity."""
        if self.start is not None:
            return self.start
        return moved(self.measured, self.shift(seq), None)


def moved(face: Face, shift: FloatArray, landmarker: RefitLandmarker | None) -> Face:
    """``face`` shifted by ``shift`` (its keypoints, landmarks and box; with a landmarker
    the box is the landmarker's box around the moved landmarks)."""
    lm = None if face.landmarks is None else face.landmarks + shift
    box = face.bbox + np.tile(shift, 2)
    if lm is not None and landmarker is not None:
        box = landmarker.box_for(lm)
    return dataclasses.replace(face, bbox=box, kps=face.kps + shift, landmarks=lm)


def _anchor(face: Face) -> FloatArray:
    """The point whose motion is the track's velocity: the mean of its landmarks, or of
    its keypoints when it has none."""
    points = face.landmarks if face.landmarks is not None else face.kps
    centre: npt.NDArray[np.float32] = np.asarray(points, np.float32).mean(axis=0)
    return centre


def face_box(face: Face, landmarker: RefitLandmarker | None) -> FloatArray:
    """The landmarker's box around the face's landmarks when it has them, else its box."""
    if landmarker is not None and face.landmarks is not None:
        return landmarker.box_for(face.landmarks)
    return face.bbox


def scheduled(frames: Sequence[FrameContext], i: int, every: int) -> list[int]:
    """Frame ``i`` and the later frames of the batch that a detection schedule of one in
    ``every`` frames makes due while tracking steadily (assuming the detector keeps finding
    every track); a rewound frame ends the plan."""
    planned = [i]
    prev, since = frames[i].seq, 0
    for j in range(i + 1, len(frames)):
        seq = frames[j].seq
        if seq <= prev:  # rewound: the schedule starts over
            break
        since += 1
        if since >= every:
            planned.append(j)
            since = 0
        prev = seq
    return planned


def jumped_fits(
    tracks: Sequence[_Track], moved: Sequence[Face], seq: int, limits: JumpLimits | None
) -> list[bool]:
    """Per track, whether its refit in frame ``seq`` jumped: a restart that lands away from
    its detection, or a refit whose landmarks changed more than ``limits`` allows (None:
    no check)."""
    if limits is None:
        return [False] * len(moved)
    out = []
    for track, face in zip(tracks, moved, strict=True):
        assert face.landmarks is not None
        if track.start is not None:
            out.append(iou(face.bbox, track.start.bbox) < 0.35)
            continue
        prev = track.measured.landmarks
        if prev is None or prev.shape != face.landmarks.shape:
            out.append(False)
            continue
        gap = max(seq - track.measured_seq, 1)
        change = fit_change(prev, face.landmarks, track.shift(seq))
        out.append(limits.exceeded(change, gap))
    return out


def dedupe(tracks: list[_Track], landmarker: RefitLandmarker | None) -> list[_Track]:
    """Two tracks that converged on one face: keep the older id."""
    out: list[_Track] = []
    for track in sorted(tracks, key=lambda t: t.track_id):
        box = face_box(track.face, landmarker)
        if all(iou(box, face_box(o.face, landmarker)) < 0.6 for o in out):
            out.append(track)
    return out


def smoothed(
    track: _Track, t_s: float, smoothing: float, landmarker: RefitLandmarker | None
) -> Face:
    """The track's face for output, smoothed: its landmarks and keypoints (the box is the
    landmarker's box around the smoothed landmarks), or its keypoints and box."""
    face = dataclasses.replace(track.face, track_id=track.track_id)
    if smoothing <= 0:
        return face
    box = face_box(track.face, landmarker)
    scale = float(box[2] - box[0])
    lm = face.landmarks
    if lm is not None and landmarker is not None:
        s = track.filter(np.concatenate([lm, face.kps]), t_s, scale=scale)
        n = len(lm)
        return dataclasses.replace(face, bbox=landmarker.box_for(s[:n]), kps=s[n:], landmarks=s[:n])
    s = track.filter(np.concatenate([face.kps, face.bbox.reshape(2, 2)]), t_s, scale=scale)
    return dataclasses.replace(face, kps=s[:5], bbox=s[5:].reshape(4))


def refitted(frame: FrameContext, landmarker: RefitLandmarker, seeds: list[Face]) -> list[Face]:
    """The landmarks of the faces ``seeds`` fitted in ``frame`` (one landmarker call); each
    face's box is then the landmarker's box around its new points."""
    works = landmarker.fit([frame], [FaceWork(0, frame.seq, face) for face in seeds])
    faces = []
    for work in works:
        if work.face.landmarks is None:
            raise ValueError("the tracker's landmarker returned no landmarks")
        faces.append(dataclasses.replace(work.face, bbox=landmarker.box_for(work.face.landmarks)))
    return faces


def detected_at(
    detector: Detector, frames: Sequence[FrameContext], i: int, ready: dict[int, list[Face]]
) -> list[Face]:
    """Frame ``i``'s detections: the batch's (``ready``, taken) or the detector's now."""
    return ready.pop(i) if i in ready else detector.detect([frames[i]])[0]


class FaceTracker:
    """Tracks faces across frames of one stream; one instance per stream and thread.

    ``detector``: any detector part. ``landmarker``: refits landmarks in every frame
    (None: the detector's keypoints are the track's points and a track moves by its
    velocity between detections). ``detect_every``: run the detector on every N-th frame
    the tracker processes (dropped camera frames do not count, held repeats neither), and
    on every frame while nothing is tracked or a track is unconfirmed (just missed by the
    detector or bridged, or without a landmarker, seen only once).
    ``smoothing``: One-Euro strength, 0 = off, 1 = default, higher = calmer but laggier;
    the filter's clock is each frame's capture time ``t_s``. ``max_missed``: a track ends
    after this many detection runs in a row that did not find it (after a miss the
    detector runs on every frame until the track is found again or ends, so a vanished
    face lingers at most ``max_missed`` frames). A frame whose fit jumped (``jumps``) and
    whose detection gave no better one, or whose fit has less than ``min_inside`` of its
    box inside the frame, is bridged from the track's last good fit moved by its velocity,
    for at most ``max_missed`` frames in a row and while ``MIN_BRIDGED_INSIDE`` of the
    bridged box is in the frame; then the track ends. A detection scoring below the
    detector's ``start_score`` keeps a track alive but never starts one. Track ids count up
    from 1 per tracker, never reused.

    ``repeat_tolerance``: a frame that repeats the last tracked frame within this many grey
    levels gives its faces again, moving nothing, while the tracker is steady (see
    ``repeat.HeldRepeats``). ``correction``: the share of a matched detection's box offset
    that moves the refit's box on a detection frame (0: detections only confirm tracks; on
    the talking-head clips 0 and 0.3 give the same swim, 0 a flicker p95 ~0.05 lower,
    bench/bench_live_face.py). ``jumps``: the refit changes that count as a fit sliding
    off the face (None: no check). ``max_gap``: a frame more than this many camera frames
    after the last one tracked (the stage was paused: swap off, Blank, Freeze) starts over
    from the detector, which shows the face in that very frame; a track refitted where the
    face was before the pause would jump and be bridged for a frame or two.
    """

    def __init__(
        self,
        detector: Detector,
        landmarker: RefitLandmarker | None = None,
        detect_every: int = 3,
        smoothing: float = 1.0,
        max_missed: int = 2,
        min_iou: float = 0.3,
        min_inside: float = 0.6,
        min_face: float = 24.0,
        min_cutoff: float = 1.0,
        beta: float = 5.0,
        repeat_tolerance: float = 4.0,
        correction: float = 0.3,
        jumps: JumpLimits | None = JumpLimits(),  # noqa: B008 (frozen)
        max_gap: int = MAX_GAP,
    ) -> None:
        if detect_every < 1:
            raise ValueError(f"detect_every must be >= 1, got {detect_every}")
        if smoothing < 0:
            raise ValueError(f"smoothing must be >= 0, got {smoothing}")
        self.detector = detector
        self.landmarker = landmarker
        self.detect_every = detect_every
        self.smoothing = smoothing
        self.max_missed = max_missed
        self.min_iou = min_iou
        self.min_inside = min_inside
        self.min_face = min_face
        self.min_cutoff = min_cutoff
        self.beta = beta
        self.correction = correction
        self.jumps = jumps
        self.max_gap = max_gap
        self.fits_rejected = 0  # refits that jumped (the track then restarts from a detection)
        self.fits_bridged = 0  # faces given from their track's last good fit, moved on
        self._tracks: list[_Track] = []
        self._next_id = 1
        self._since_detect: int | None = None  # frames processed since the last detection
        self._last_seq: int | None = None
        self._held = HeldRepeats(repeat_tolerance)  # repeats of the last tracked frame

    @property
    def track_count(self) -> int:
        return len(self._tracks)

    @property
    def repeats_held(self) -> int:
        """Frames answered with the last tracked frame's faces (``HeldRepeats``)."""
        return self._held.held

    def reset(self) -> None:
        """Forget every track (ids keep counting up)."""
        self._tracks = []
        self._since_detect = None
        self._last_seq = None
        self._held.reset()

    def update(self, frames: Sequence[FrameContext]) -> list[list[Face]]:
        """Track faces through the next frames (in order); per frame, its faces with
        ``track_id``, largest first. The result equals tracking frame by frame.

        When a frame needs the detector, the later frames of the batch that the schedule
        will need too (while tracking steadily) go with it in one call; no frame is
        detected that frame-by-frame tracking would not detect (bar a miss and re-find
        within one batch).
        """
        ready: dict[int, list[Face]] = {}
        out = []
        for i, frame in enumerate(frames):
            validate_frame(frame.image, "FaceTracker.update")
            last = self._last_seq
            if last is not None and (frame.seq <= last or frame.seq - last > self.max_gap):
                self.reset()  # a restarted or rewound stream, or a pause: start over
            held, detections = None, None
            if not self._unsure():  # a repeat of the last frame gets its faces again
                detect = partial(detected_at, self.detector, frames, i, ready)
                held, detections = self._held.answer(frame.image, detect, iou)
            if held is not None:
                self._last_seq = frame.seq
                out.append(held)
                continue
            if detections is None and self._needs_detection():
                if i not in ready:
                    planned = [i] if self._unsure() else scheduled(frames, i, self.detect_every)
                    found = self.detector.detect([frames[j] for j in planned])
                    ready.update(zip(planned, found, strict=True))
                detections = ready.pop(i)
            faces = self._step(frame, detections)
            self._held.remember(frame.image, faces, checked=detections is not None)
            out.append(faces)
        return out

    def _needs_detection(self) -> bool:
        since = self._since_detect
        return since is None or since + 1 >= self.detect_every or self._unsure()

    def _unsure(self) -> bool:
        """Whether the next frame needs the detector whatever the schedule: nothing is
        tracked, the detector just missed a track or a track is bridged (no trustworthy fit),
        or (without a landmarker) a track has no velocity yet (one measurement only)."""
        tracks = self._tracks
        if not tracks or any(t.missed or t.hidden for t in tracks):
            return True
        return self.landmarker is None and any(t.measurements < 2 for t in tracks)

    def _step(self, frame: FrameContext, detections: list[Face] | None) -> list[Face]:
        """Move every track to this frame (after matching ``detections`` when given)."""
        seq = frame.seq
        self._last_seq = seq
        if detections is not None:
            self._associate(detections, seq)
        detected = detections is not None
        fits = self._move(frame)
        rejected = jumped_fits(self._tracks, fits, seq, self._limits())
        if any(rejected):
            self.fits_rejected += sum(rejected)
            fits, rejected = self._retry(frame, detected, rejected)
            detected = True
        since = self._since_detect
        self._since_detect = 0 if detected or since is None else since + 1
        h, w = frame.image.shape[:2]
        kept: list[_Track] = []
        for track, face, bad in zip(self._tracks, fits, rejected, strict=True):
            track.detection = track.correction = None
            if not bad and face.width < self.min_face:
                log.debug("track %d ended: face too small", track.track_id)
                continue
            if bad or inside_fraction(face.bbox, w, h) < self.min_inside:
                # no trustworthy fit, or one mostly outside (a face leaving the frame):
                # the last good fit, moved on, until a fit is found again or it ends
                if track.bridged(seq, self.max_missed, self.landmarker) and (
                    inside_fraction(track.face.bbox, w, h) >= MIN_BRIDGED_INSIDE
                ):
                    self.fits_bridged += 1
                    kept.append(track)
                else:
                    log.debug("track %d ended: face left the frame", track.track_id)
                continue
            if track.hidden:  # found again after a bridge: no slide from the bridged place
                track.filter.reset()
                track.hidden = 0
            track.fitted(face, seq, self.landmarker)
            kept.append(track)
        self._tracks = dedupe(kept, self.landmarker)
        faces = [
            smoothed(track, frame.t_s, self.smoothing, self.landmarker) for track in self._tracks
        ]
        faces.sort(key=lambda f: f.area, reverse=True)
        return faces

    def _move(self, frame: FrameContext) -> list[Face]:
        """Every track's face in this frame: refitted in the box of its new detection or
        the box its last landmarks predict, or (no landmarker) moved by its velocity."""
        if self.landmarker is None:
            return [track.predicted(frame.seq) for track in self._tracks]
        seeds = [
            replace(t.measured, bbox=self._seed(t, frame.seq)) if t.start is None else t.start
            for t in self._tracks
        ]
        return refitted(frame, self.landmarker, seeds)

    def _retry(
        self, frame: FrameContext, detected: bool, rejected: list[bool]
    ) -> tuple[list[Face], list[bool]]:
        """Refit the tracks whose fit jumped from their detections in this frame (the
        detector runs now when this frame had none); the new fits and rejections."""
        if not detected:
            (detections,) = self.detector.detect([frame])
            self._associate(detections, frame.seq)
        for track, bad in zip(self._tracks, rejected, strict=False):
            if bad and track.start is None and track.detection is not None:
                track.start = track.detection
        moved = self._move(frame)
        return moved, jumped_fits(self._tracks, moved, frame.seq, self._limits())

    def _seed(self, track: _Track, seq: int) -> FloatArray:
        """Where the landmarker refits a track: its moved box, shifted toward its
        detection in this frame by ``correction`` of the offset."""
        box = track.box(seq, self.landmarker)
        return box if track.correction is None else box + track.correction

    def _associate(self, detections: list[Face], seq: int) -> None:
        boxes = [t.box(seq, self.landmarker) for t in self._tracks]
        matches = greedy_match(boxes, [d.bbox for d in detections], self.min_iou)
        matched_t = {ti for ti, _, _ in matches}
        matched_d = {di for _, di, _ in matches}
        for ti, di, overlap in matches:
            track = self._tracks[ti]
            track.missed = 0
            det = detections[di]
            track.detection = det
            # without a landmarker the detection is the new measurement; with one, restart
            # from it only when the landmarks drifted off the face (or were bridged), else
            # move the refit's box part of the way toward it
            if self.landmarker is None or overlap < 0.5 or track.hidden:
                track.start = det
            else:
                track.measured = dataclasses.replace(track.measured, score=det.score)
                if self.correction > 0:
                    offset = det.bbox - boxes[ti]
                    track.correction = (self.correction * offset).astype(np.float32)
        survivors = []
        for ti, track in enumerate(self._tracks):
            if ti not in matched_t:
                track.missed += 1
                if track.missed >= self.max_missed:
                    log.debug("track %d ended: not detected", track.track_id)
                    continue
            survivors.append(track)
        for di, det in enumerate(detections):
            if di in matched_d or det.score < self.detector.start_score:
                continue  # matched, or too weak to be a face on its own
            filt = self._new_filter()
            survivors.append(_Track(self._next_id, det, det, seq, start=det, filter=filt))
            self._next_id += 1
        self._tracks = survivors

    def _limits(self) -> JumpLimits | None:
        """The refit checks (none without a landmarker: a detection is then no refit)."""
        return self.jumps if self.landmarker is not None else None

    def _new_filter(self) -> OneEuroFilter:
        if self.smoothing <= 0:
            return OneEuroFilter(1e6, 0.0)
        return OneEuroFilter(self.min_cutoff / self.smoothing, self.beta / self.smoothing)


def tracker_for(
    detect: DetectSettings, detector: Detector, landmarker: RefitLandmarker | None
) -> FaceTracker:
    """The tracker as its config section (``[swap.detect]``) sets it; a new tracking option
    is read here."""
    return FaceTracker(
        detector,
        landmarker,
        detect_every=detect.detect_every,
        smoothing=detect.smoothing,
        repeat_tolerance=detect.repeat_tolerance,
    )
