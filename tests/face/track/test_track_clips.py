"""The tracker and the sticky ``select one`` on real clips with the lite preset's parts
(YuNet + slim-160 refit): detection every N processed frames when camera frames drop, a
repeated camera frame moves nothing, detection frames do not shift the landmarks, a fit
sliding off a fast head is never shown and a face leaving fast is bridged, and ``one``
keeps the person it follows (also when the tracker restarts them under a new id)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
from face_helpers import lite_detector, lite_landmarker

from livecam.face.parts import CPU_ONLY, Detector, RefitLandmarker
from livecam.face.track.selection import StickyMainFace, main_face
from livecam.face.track.tracking import FaceTracker, iou
from livecam.types import Face, Frame, FrameContext

HIKERS = "openmpf_video_02_hikers.mp4"


def clip_frames(testdata: Path, name: str, lo: int, hi: int) -> list[Frame]:
    """Frames ``lo`` to ``hi - 1`` of a testdata clip."""
    cap = cv2.VideoCapture(str(testdata / "video" / name))
    cap.set(cv2.CAP_PROP_POS_FRAMES, lo)
    frames: list[Frame] = []
    for _ in range(lo, hi):
        ok, frame = cap.read()
        assert ok
        frames.append(np.asarray(frame, np.uint8))
    cap.release()
    return frames


def refit() -> RefitLandmarker:
    """The lite preset's slim-160 landmarker (the tracker refits it)."""
    landmarker = lite_landmarker()
    assert isinstance(landmarker, RefitLandmarker)
    return landmarker


def eye_distance(landmarks: np.ndarray) -> float:
    """Distance between the eye centres of 68 iBUG points."""
    return float(np.linalg.norm(landmarks[36:42].mean(0) - landmarks[42:48].mean(0)))


class SeqDetector:
    """The real lite detector, noting the ``seq`` of every frame it is given."""

    providers = CPU_ONLY

    def __init__(self, inner: Detector) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.start_score = inner.start_score
        self.seqs: list[int] = []

    def warmup(self) -> None:
        self.inner.warmup()

    def close(self) -> None:
        self.inner.close()

    def detect(self, frames: Sequence[FrameContext]) -> list[list[Face]]:
        self.seqs.extend(f.seq for f in frames)
        return self.inner.detect(frames)


def test_detection_runs_every_n_processed_frames_with_dropped_camera_frames(
    testdata: Path,
) -> None:
    """Camera frames dropped (gaps of 1-4 seqs, as a loaded machine drops them): the
    detector still runs on every third frame the tracker processes, not on nearly every
    one (by ``seq``, 24 of these 30 frames were due)."""
    frames = clip_frames(testdata, "liveportrait_s18.mp4", 0, 90)
    rng = np.random.default_rng(3)
    seqs = np.cumsum(rng.integers(1, 5, 30))  # 30 processed frames of ~75 camera frames
    det = SeqDetector(lite_detector())
    tracker = FaceTracker(det, refit(), detect_every=3)
    for seq in seqs:
        faces = tracker.update([FrameContext(frames[seq], int(seq), seq / 30)])[0]
        assert len(faces) == 1, seq
    assert len(det.seqs) == 10  # frames 0, 3, 6, ... of the processed ones
    assert det.seqs == [int(seqs[i]) for i in range(0, 30, 3)]


def test_a_repeated_camera_frame_gives_the_same_faces_and_moves_nothing(testdata: Path) -> None:
    """A talking head; frame 9 comes twice (a webcam repeating a frame): the tracker gives
    the very same faces, runs nothing and moves no state."""
    frames = clip_frames(testdata, "liveportrait_d13.mp4", 0, 12)
    det = SeqDetector(lite_detector())
    tracker = FaceTracker(det, refit(), detect_every=3)
    out = [tracker.update([FrameContext(f, i, i / 30)])[0] for i, f in enumerate(frames[:10])]
    calls = len(det.seqs)
    again = tracker.update([FrameContext(frames[9].copy(), 10, 10 / 30)])[0]  # frame 9 repeats
    assert len(again) == 1 and again[0] is out[-1][0]
    assert len(det.seqs) == calls and tracker.repeats_held == 1
    # the next real frame continues from frame 9's state, as if the repeat never came
    follow = tracker.update([FrameContext(frames[10], 11, 11 / 30)])[0]
    assert follow[0].track_id == out[-1][0].track_id
    # liveportrait_d6 is 25 fps shown at 30: every sixth frame re-encodes the one before
    # (values within 4 grey levels bar stray pixels); those are held too
    d6 = clip_frames(testdata, "liveportrait_d6.mp4", 0, 14)
    tracker = FaceTracker(lite_detector(), refit(), detect_every=3)
    shown = [tracker.update([FrameContext(f, i, i / 30)])[0] for i, f in enumerate(d6)]
    assert tracker.repeats_held == 3
    assert all(shown[i][0] is shown[i - 1][0] for i in (1, 7, 13))
    assert all(shown[i][0] is not shown[i - 1][0] for i in (2, 3, 4, 5, 6, 8))


def test_a_detection_frame_does_not_shift_the_landmarks(testdata: Path) -> None:
    """On a real talking head, a frame with a detection moves the landmarks no more than
    the frames without one (the detection only nudges the refit's box)."""
    frames = clip_frames(testdata, "liveportrait_d13.mp4", 0, 90)
    det = SeqDetector(lite_detector())
    tracker = FaceTracker(det, refit(), detect_every=3)
    points, detected = [], []
    for i, frame in enumerate(frames):
        calls = len(det.seqs)
        (face,) = tracker.update([FrameContext(frame, i, i / 30)])[0]
        assert face.landmarks is not None
        points.append(face.landmarks)
        detected.append(len(det.seqs) > calls)
    # how far each frame's landmarks lie off the midpoint of its neighbours' (eye distances)
    off: dict[bool, list[float]] = {True: [], False: []}
    for t in range(1, len(points) - 1):
        mid = (points[t - 1] + points[t + 1]) / 2
        gap = float(np.linalg.norm((points[t] - mid).mean(axis=0)))
        off[detected[t]].append(gap / eye_distance(points[t]))
    assert sum(detected) >= 25
    assert np.mean(off[True]) < 1.5 * np.mean(off[False]) + 0.002
    assert max(off[True]) < 0.03


def test_a_fit_that_slides_off_a_fast_head_is_never_shown(testdata: Path) -> None:
    """Hikers clip, frames 495-513: a man's head turns and blurs past the camera. The
    refit alone shrinks by 25-35 % a frame and slides off the head onto the background
    (IoU with the face the detector finds in that frame: 0.18, 0.09, 0.22, 0.08 at frames
    509-513). The tracker rejects those fits and restarts from the detector: every face it
    shows lies on a face the detector finds in that frame, or, where there is none, is
    bridged: the face of the frame before carried on, never more than ``max_missed``
    frames in a row."""
    frames = clip_frames(testdata, HIKERS, 495, 514)
    detector = lite_detector()
    tracker = FaceTracker(detector, refit(), detect_every=3)
    shown, before, in_a_row = 0, 0, 0
    last: dict[int, np.ndarray] = {}
    for i, frame in enumerate(frames, start=495):
        ctx = FrameContext(frame, i, i / 30)
        found = detector.detect([FrameContext(frame, i, i / 30)])[0]
        faces = tracker.update([ctx])[0]
        bridged = tracker.fits_bridged > before
        in_a_row = in_a_row + 1 if bridged else 0
        assert in_a_row <= tracker.max_missed
        for face in faces:
            on = [d.bbox for d in found] if not bridged else [last[face.track_id]]
            overlap = max((iou(face.bbox, box) for box in on), default=1.0)
            assert overlap > 0.4, (i, face.track_id, overlap, bridged)
            shown += 1
        before, last = tracker.fits_bridged, {f.track_id: f.bbox for f in faces}
    assert tracker.fits_rejected > 0 and shown >= 15


def test_a_face_leaving_the_frame_fast_is_bridged_not_dropped(testdata: Path) -> None:
    """Hikers clip, frames 488-501: the man in the blue hat turns and blurs out of the
    frame at the right. At 499 and 500 his blurred face is still half in the picture, but
    the detector no longer finds it and the fit jumps off it: his face was dropped there
    (the camera face flashed through the swap for two frames). The tracker now bridges
    those frames from his last good fit, moved on the way his head went; then the track
    ends and the other hiker is a new one."""
    frames = clip_frames(testdata, HIKERS, 488, 502)
    tracker = FaceTracker(lite_detector(), refit(), detect_every=3)
    shown = []
    for i, frame in enumerate(frames, start=488):
        shown.append(tracker.update([FrameContext(frame, i, i / 30)])[0])
    *his, other = shown
    assert all([f.track_id for f in faces] == [1] for faces in his)
    assert tracker.fits_bridged == 2  # 499 and 500
    lm = []
    for faces in his[-4:]:  # 497-500
        points = faces[0].landmarks
        assert points is not None
        lm.append(points)
    x = [float(p[:, 0].mean()) for p in lm]  # the head moves right, so does the bridge
    assert x[0] < x[1] < x[2] < x[3]
    sizes = [eye_distance(p) for p in lm]
    assert max(sizes) < 1.25 * min(sizes)
    assert [f.track_id for f in other] == [2]


def test_select_one_keeps_the_tracked_person_when_another_face_grows(testdata: Path) -> None:
    """Hikers clip, frames 425-444: the man on the right is the main face first; from
    frame 437 the man on the left is larger. ``one`` stays on the man it follows."""
    frames = clip_frames(testdata, HIKERS, 425, 445)
    tracker = FaceTracker(lite_detector(), refit(), detect_every=3)
    selector = StickyMainFace()
    picked, overtaken = set(), 0
    for i, frame in enumerate(frames, start=425):
        ctx = FrameContext(frame, i, i / 30)
        faces = tracker.update([ctx])[0]
        (face,) = selector.select(ctx, faces)
        picked.add(face.track_id)
        largest = main_face(faces, frame.shape)
        assert largest is not None
        overtaken += largest.track_id != face.track_id
    assert len(picked) == 1
    assert overtaken >= 3  # another person's face was the larger one for a while


def test_select_one_follows_a_restarted_track_at_once(testdata: Path) -> None:
    """Talking head d6: 2 s pass between frames 169 and 230 unseen (a Blank or Freeze:
    the stages did not run), the head moved, the tracker restarts the face under a new
    id. ``one`` follows the new track from its first frame: a frame that shows the face
    always has it selected (an unselected face goes out as the camera showed it)."""
    frames = clip_frames(testdata, "liveportrait_d6.mp4", 160, 240)
    tracker = FaceTracker(lite_detector(), refit(), detect_every=3)
    selector = StickyMainFace()
    ids: set[int] = set()
    for i in [*range(160, 170), *range(230, 240)]:
        ctx = FrameContext(frames[i - 160], i, i / 30)
        faces = tracker.update([ctx])[0]
        picked = selector.select(ctx, faces)
        assert len(picked) == min(len(faces), 1), (i, [f.track_id for f in faces])
        ids.update(f.track_id for f in faces)
    assert len(ids) == 2  # the tracker did restart the face
