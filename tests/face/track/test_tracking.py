"""Face tracking on generated clips of a real portrait: stable ids, track ends, smoothing by
capture time, any detector (the lite preset's YuNet + slim-160 68-point refit, or YuNet
alone), batches."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import pytest
from face_helpers import lite_analyzer, lite_detector, lite_landmarker

from livecam.config.schema import SourceConfig
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.face.parts import CPU_ONLY, Detector, RefitLandmarker
from livecam.face.track.tracking import FaceTracker, OneEuroFilter, iou
from livecam.sources.synthetic.pattern import SyntheticSource
from livecam.types import Face, Frame, FrameContext
from livecam.userfiles.images import load_image_bgr

PORTRAIT = "obama_official_portrait_2012.jpg"
BG = (90, 110, 100)


class CountingDetector:
    """A real detector part, counting its calls and the frames it was given."""

    providers = CPU_ONLY

    def __init__(self, inner: Detector) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.start_score = inner.start_score
        self.calls: list[list[int]] = []  # seq of the frames of each call

    def warmup(self) -> None:
        self.inner.warmup()

    def close(self) -> None:
        self.inner.close()

    def detect(self, frames: Sequence[FrameContext]) -> list[list[Face]]:
        self.calls.append([f.seq for f in frames])
        return self.inner.detect(frames)

    @property
    def runs(self) -> int:
        return sum(len(c) for c in self.calls)


@pytest.fixture(scope="module")
def detector() -> Detector:
    return lite_detector(400)


@pytest.fixture(scope="module")
def landmarker() -> RefitLandmarker:
    return lite_landmarker()


@pytest.fixture(scope="module")
def face_crop(testdata: Path) -> Frame:
    """A 300x300 head-and-shoulders crop with a face box of about 150 px."""
    img = load_image_bgr(testdata / "faces" / PORTRAIT)
    ((face,),) = lite_detector(800).detect([FrameContext(img)])
    s = int(face.width)
    cx, cy = (int(v) + s for v in face.center)  # on the image padded by s on every side
    padded = cv2.copyMakeBorder(img, s, s, s, s, cv2.BORDER_REPLICATE)
    crop = padded[cy - s : cy + s, cx - s : cx + s]
    return np.ascontiguousarray(cv2.resize(crop, (300, 300), interpolation=cv2.INTER_AREA))


def place(crop: Frame, x: float, y: float, angle: float = 0.0) -> Frame:
    """A 640x480 frame with the crop's centre at (x, y), rotated by ``angle`` degrees."""
    m = cv2.getRotationMatrix2D((150.0, 150.0), angle, 1.0)
    m[0, 2] += x - 150
    m[1, 2] += y - 150
    out = cv2.warpAffine(crop, m, (640, 480), borderMode=cv2.BORDER_CONSTANT, borderValue=BG)
    return np.ascontiguousarray(out, dtype=np.uint8)


def at(frame: Frame, seq: int, fps: float = 30.0) -> list[FrameContext]:
    """A one-frame batch captured at ``seq / fps`` seconds."""
    return [FrameContext(frame, seq, seq / fps)]


def step(tracker: FaceTracker, frame: Frame, seq: int, fps: float = 30.0) -> list[Face]:
    return tracker.update(at(frame, seq, fps))[0]


def circle(i: int) -> tuple[float, float, float]:
    """Position and tilt of a face moving along a figure eight over 45 frames."""
    t = 2 * math.pi * i / 45
    return 320 + 110 * math.sin(t), 240 + 30 * math.sin(2 * t), 6 * math.sin(t)


def test_ids_stay_stable_over_smooth_motion(face_crop, detector, landmarker) -> None:
    tracker = FaceTracker(detector, landmarker, detect_every=3)
    ids = []
    for i in range(45):
        x, y, angle = circle(i)
        faces = step(tracker, place(face_crop, x, y, angle), i)
        assert len(faces) == 1, f"frame {i}"
        ids.append(faces[0].track_id)
        assert faces[0].landmarks is not None and faces[0].landmarks.shape == (68, 2)
        # the tracked box stays on the moving face
        assert abs(faces[0].center[0] - x) < 25, f"frame {i}"
    assert set(ids) == {1}


def test_yunet_alone_keeps_ids_and_follows_a_moving_face(testdata: Path, face_crop) -> None:
    yunet = CountingDetector(
        YuNetDetector(testdata / "models" / "face_detection_yunet_2023mar.onnx")
    )
    tracker = FaceTracker(yunet, None, detect_every=3)
    ids = []
    for i in range(45):
        x, y, angle = circle(i)
        faces = step(tracker, place(face_crop, x, y, angle), i)
        assert len(faces) == 1, f"frame {i}"
        face = faces[0]
        ids.append(face.track_id)
        assert face.landmarks is None  # YuNet's 5 keypoints only
        assert abs(face.center[0] - x) < 25 and abs(face.center[1] - y) < 40, f"frame {i}"
        eye_l, eye_r, nose = face.kps[0], face.kps[1], face.kps[2]
        assert eye_l[0] < nose[0] < eye_r[0] and nose[1] > max(eye_l[1], eye_r[1]), f"frame {i}"
    assert set(ids) == {1}
    # frames 0 and 1 (a new track needs a velocity), then 4, 7, ..., 43: moved by velocity
    assert [c for call in yunet.calls for c in call] == [0, 1, *range(4, 45, 3)]


def test_ids_stable_on_the_synthetic_face_motion_source(
    testdata: Path, detector, landmarker
) -> None:
    src = SyntheticSource(
        SourceConfig(
            spec="synthetic", size=(640, 480), face_motion=str(testdata / "faces" / PORTRAIT)
        )
    )
    src.open()
    tracker = FaceTracker(detector, landmarker)
    ids = set()
    for i in range(0, 120, 2):  # every other frame: twice the motion per step
        faces = step(tracker, src.render(i), i)
        assert len(faces) == 1, f"frame {i}"
        ids.add(faces[0].track_id)
    src.close()
    assert ids == {1}


def test_face_leaving_and_returning_gets_a_new_id(face_crop, detector, landmarker) -> None:
    xs = [320 + 15 * i for i in range(30)]  # slides out to the right (centre ends at 755)
    xs += [900] * 6  # gone
    xs += [760 - 15 * i for i in range(1, 30)]  # comes back
    tracker = FaceTracker(detector, landmarker)
    seen: list[tuple[int, ...]] = []
    for i, x in enumerate(xs):
        seen.append(tuple(f.track_id for f in step(tracker, place(face_crop, x, 240), i)))
    assert seen[0] == (1,)
    gone = [i for i, s in enumerate(seen) if s == ()]
    assert gone and all(xs[i] > 560 for i in gone)  # ended only once the face was mostly out
    assert all(seen[i] == () for i in range(30, 36))
    assert seen[-1] == (2,)
    assert {s for s in seen if s} == {(1,), (2,)}


def test_detector_runs_every_third_frame_while_tracking(face_crop, detector, landmarker) -> None:
    det = CountingDetector(detector)
    tracker = FaceTracker(det, landmarker, detect_every=3)
    for i in range(30):
        assert len(step(tracker, place(face_crop, 300 + 2 * i, 240), i)) == 1
    assert det.runs == 10
    blank = np.full((480, 640, 3), 100, np.uint8)
    # frame 30: the detector misses the face once; slim-160's refit on the blank frame jumps
    # off the face, so the track is bridged from its last fit (no drop for a frame); frame
    # 31: the second miss ends it; the detector then runs on every frame
    assert len(step(tracker, blank, 30)) == 1
    assert tracker.track_count == 1 and tracker.fits_rejected == 1 == tracker.fits_bridged
    counts = [len(step(tracker, blank, i)) for i in range(31, 36)]
    assert counts == [0, 0, 0, 0, 0]
    assert tracker.track_count == 0
    assert [c for call in det.calls[10:] for c in call] == list(range(30, 36))


def test_a_batch_of_frames_tracks_like_one_frame_at_a_time(face_crop, detector, landmarker) -> None:
    frames = [place(face_crop, 280 + 6 * i, 240 + 2 * i) for i in range(12)]
    single_det, batch_det = CountingDetector(detector), CountingDetector(detector)
    single = FaceTracker(single_det, landmarker, detect_every=2)
    one_by_one = [step(single, f, i) for i, f in enumerate(frames)]
    batched = FaceTracker(batch_det, landmarker, detect_every=2)
    in_batches = []
    for lo in (0, 6):
        in_batches += batched.update(
            [FrameContext(frames[i], i, i / 30) for i in range(lo, lo + 6)]
        )
    assert len(in_batches) == 12
    for i, (a, b) in enumerate(zip(one_by_one, in_batches, strict=True)):
        assert [f.track_id for f in a] == [f.track_id for f in b] == [1], f"frame {i}"
        np.testing.assert_array_equal(a[0].landmarks, b[0].landmarks)
    assert single_det.calls == [[0], [2], [4], [6], [8], [10]]
    # frame 0 alone (nothing tracked yet: what follows depends on what it finds); then the
    # frames the schedule makes due go to the detector together, in order
    assert batch_det.calls == [[0], [2, 4], [6, 8, 10]]


def test_rewound_stream_starts_new_tracks(face_crop, detector, landmarker) -> None:
    tracker = FaceTracker(detector, landmarker)
    frame = place(face_crop, 320, 240)
    assert step(tracker, frame, 10)[0].track_id == 1
    assert step(tracker, frame, 11)[0].track_id == 1
    assert step(tracker, frame, 0)[0].track_id == 2


def _noisy_still(face_crop: Frame, n: int = 40) -> list[Frame]:
    rng = np.random.default_rng(1)
    still = place(face_crop, 320, 240).astype(np.int16)
    return [
        np.clip(still + rng.normal(0, 10, still.shape), 0, 255).astype(np.uint8) for _ in range(n)
    ]


def _landmarks(tracker: FaceTracker, frames: list[Frame], fps: float) -> list[np.ndarray]:
    out = []
    for i, frame in enumerate(frames):
        (face,) = step(tracker, frame, i, fps)
        assert face.landmarks is not None
        out.append(face.landmarks)
    return out


def _jitter(tracks: list[np.ndarray]) -> float:
    return float(np.stack(tracks[5:]).std(axis=0).mean())


def test_smoothing_reduces_landmark_jitter(face_crop, detector, landmarker) -> None:
    frames = _noisy_still(face_crop)
    raw = _jitter(_landmarks(FaceTracker(detector, landmarker, smoothing=0.0), frames, 30))
    smooth = _jitter(_landmarks(FaceTracker(detector, landmarker, smoothing=1.0), frames, 30))
    assert raw > 0.2  # the noise really moves the raw fit
    assert smooth < 0.6 * raw


def test_smoothing_is_clocked_by_capture_time(face_crop, detector, landmarker) -> None:
    frames = _noisy_still(face_crop)
    raw = _landmarks(FaceTracker(detector, landmarker, smoothing=0.0), frames, 30)
    results = {}
    for fps in (30.0, 15.0):  # 15 fps: the same frames with doubled timestamps
        tracked = _landmarks(FaceTracker(detector, landmarker, smoothing=1.0), frames, fps)
        # exactly the One-Euro filter of the raw fits, on the frames' capture times
        filt = OneEuroFilter(min_cutoff=1.0, beta=5.0)
        expected = [
            filt(lm, i / fps, scale=float(np.ptp(landmarker.box_for(lm)[[0, 2]])))
            for i, lm in enumerate(raw)
        ]
        for i, (got, want) in enumerate(zip(tracked, expected, strict=True)):
            np.testing.assert_allclose(got, want, atol=1e-3, err_msg=f"fps {fps} frame {i}")
        results[fps] = _jitter(tracked)
    # twice the time between frames: each step moves the filter further, so more jitter
    # passes (still less than the raw fit's)
    assert results[30.0] < 0.8 * results[15.0] < 0.8 * _jitter(raw)


def test_one_euro_filter_calms_noise_and_follows_motion() -> None:
    rng = np.random.default_rng(2)
    filt = OneEuroFilter(min_cutoff=1.0, beta=5.0)
    noisy = [
        filt((100.0 + rng.normal(0, 1, (1, 2))).astype(np.float32), i / 30, scale=100.0)
        for i in range(60)
    ]
    assert np.std(np.concatenate(noisy[10:])) < 0.5
    filt.reset()
    out = [filt(np.array([[10.0 * i, 0.0]], np.float32), i / 30, scale=100.0) for i in range(30)]
    assert abs(float(out[-1][0, 0]) - 290.0) < 15  # fast move: small lag


def test_the_landmarker_box_matches_the_detector_box(testdata: Path, landmarker) -> None:
    # the box a track's landmarks are refitted in is the box the detector gives the face
    analyzer = lite_analyzer(800, with_encoder=False)
    for name in [PORTRAIT, "biden_official_portrait.jpg", "grace_hopper_navy_portrait.jpg"]:
        img = load_image_bgr(testdata / "faces" / name)
        face = analyzer.analyze(img)[0]
        assert face.landmarks is not None
        assert iou(landmarker.box_for(face.landmarks), face.bbox) > 0.6, name


def test_a_weak_detection_keeps_a_track_but_never_starts_one(face_crop, landmarker) -> None:
    """The real face scores ~0.93: with ``start_score`` above that it starts no track; once
    tracked, the same detections keep it (hysteresis against passing false faces)."""
    det = YuNetDetector(
        bundled_yunet(), max_sides=(400,), start_score=0.99, box_for_kps=landmarker.box_for_kps
    )
    tracker = FaceTracker(det, landmarker, detect_every=1)
    frame = place(face_crop, 320, 240)
    assert [step(tracker, frame, i) for i in range(3)] == [[], [], []]
    det.start_score = 0.85
    assert [f.track_id for f in step(tracker, frame, 3)] == [1]
    det.start_score = 0.99
    for i in range(4, 20):
        x, y, angle = circle(i)
        assert [f.track_id for f in step(tracker, place(face_crop, x, y, angle), i)] == [1]
