"""Face tracking on generated clips of a real portrait: stable ids, track ends, smoothing."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from livecam.pipeline.analysis import FaceAnalyzer, offline_analyzer
from livecam.pipeline.detect import DlibHogDetector
from livecam.pipeline.tracking import FaceTracker, OneEuroFilter, box_from_landmarks, iou
from livecam.sources.image import load_image_bgr
from livecam.types import Face, Frame

PORTRAIT = "obama_official_portrait_2012.jpg"
BG = (90, 110, 100)


class CountingDetector(DlibHogDetector):
    """The real HOG detector, counting its runs."""

    def __init__(self) -> None:
        super().__init__(max_side=400)
        self.runs = 0

    def detect_gray(self, gray: np.ndarray) -> list[Face]:
        self.runs += 1
        return super().detect_gray(gray)


@pytest.fixture(scope="module")
def analyzer() -> FaceAnalyzer:
    return offline_analyzer(with_encoder=False)


@pytest.fixture(scope="module")
def face_crop(testdata: Path) -> Frame:
    """A 300x300 head-and-shoulders crop with a face of about 150 px."""
    img = load_image_bgr(testdata / "faces" / PORTRAIT)
    (face,) = DlibHogDetector(max_side=800).detect(img)
    cx, cy = face.center
    s = face.width
    crop = img[int(cy - s) : int(cy + s), int(cx - s) : int(cx + s)]
    return np.ascontiguousarray(cv2.resize(crop, (300, 300), interpolation=cv2.INTER_AREA))


def place(crop: Frame, x: float, y: float, angle: float = 0.0) -> Frame:
    """A 640x480 frame with the crop's centre at (x, y), rotated by ``angle`` degrees."""
    m = cv2.getRotationMatrix2D((150.0, 150.0), angle, 1.0)
    m[0, 2] += x - 150
    m[1, 2] += y - 150
    out = cv2.warpAffine(crop, m, (640, 480), borderMode=cv2.BORDER_CONSTANT, borderValue=BG)
    return np.ascontiguousarray(out, dtype=np.uint8)


def test_ids_stay_stable_over_smooth_motion(face_crop: Frame, analyzer: FaceAnalyzer) -> None:
    tracker = FaceTracker.from_analyzer(analyzer, detect_every=3)
    ids = []
    for i in range(45):
        t = 2 * math.pi * i / 45
        x, y = 320 + 110 * math.sin(t), 240 + 30 * math.sin(2 * t)
        frame = place(face_crop, x, y, 6 * math.sin(t))
        faces = tracker.update(frame, i)
        assert len(faces) == 1, f"frame {i}"
        ids.append(faces[0].track_id)
        # the tracked box stays on the moving face
        assert abs(faces[0].center[0] - x) < 25, f"frame {i}"
    assert set(ids) == {1}


def test_ids_stable_on_the_synthetic_face_motion_source(
    testdata: Path, analyzer: FaceAnalyzer
) -> None:
    synthetic = pytest.importorskip("livecam.sources.synthetic")
    from livecam.config import SourceConfig

    src = synthetic.SyntheticSource(
        SourceConfig(
            spec="synthetic", size=(640, 480), face_motion=str(testdata / "faces" / PORTRAIT)
        )
    )
    src.open()
    tracker = FaceTracker.from_analyzer(analyzer)
    ids = set()
    for i in range(0, 120, 2):  # every other frame: twice the motion per step
        faces = tracker.update(src.render(i), i)
        assert len(faces) == 1, f"frame {i}"
        ids.add(faces[0].track_id)
    src.close()
    assert ids == {1}


def test_face_leaving_and_returning_gets_a_new_id(face_crop: Frame, analyzer: FaceAnalyzer) -> None:
    xs = [320 + 15 * i for i in range(30)]  # slides out to the right (centre ends at 755)
    xs += [900] * 6  # gone
    xs += [760 - 15 * i for i in range(1, 30)]  # comes back
    tracker = FaceTracker.from_analyzer(analyzer)
    seen: list[tuple[int, ...]] = []
    for i, x in enumerate(xs):
        seen.append(tuple(f.track_id for f in tracker.update(place(face_crop, x, 240), i)))
    assert seen[0] == (1,)
    gone = [i for i, s in enumerate(seen) if s == ()]
    assert gone and all(xs[i] > 560 for i in gone)  # ended only once the face was mostly out
    assert all(seen[i] == () for i in range(30, 36))
    assert seen[-1] == (2,)
    assert {s for s in seen if s} == {(1,), (2,)}


def test_detector_runs_every_third_frame_while_tracking(face_crop: Frame) -> None:
    from livecam.pipeline.landmarks import Dlib68Landmarker

    det = CountingDetector()
    tracker = FaceTracker(det, Dlib68Landmarker(), detect_every=3)
    for i in range(30):
        assert len(tracker.update(place(face_crop, 300 + 2 * i, 240), i)) == 1
    assert det.runs == 10
    blank = np.full((480, 640, 3), 100, np.uint8)
    runs = det.runs
    for i in range(30, 36):  # face gone: the track ends within 2 frames, then detect always
        assert tracker.update(blank, i) == [] or i < 32
    assert tracker.track_count == 0
    assert det.runs - runs == 6


def test_rewound_stream_starts_new_tracks(face_crop: Frame, analyzer: FaceAnalyzer) -> None:
    tracker = FaceTracker.from_analyzer(analyzer)
    frame = place(face_crop, 320, 240)
    assert tracker.update(frame, 10)[0].track_id == 1
    assert tracker.update(frame, 11)[0].track_id == 1
    assert tracker.update(frame, 0)[0].track_id == 2


def _landmark_jitter(tracker: FaceTracker, frames: list[Frame]) -> float:
    tracks = [tracker.update(f, i)[0].landmarks for i, f in enumerate(frames)]
    stack = np.stack([t for t in tracks[5:] if t is not None])
    return float(stack.std(axis=0).mean())


def test_smoothing_reduces_landmark_jitter(face_crop: Frame, analyzer: FaceAnalyzer) -> None:
    rng = np.random.default_rng(1)
    still = place(face_crop, 320, 240).astype(np.int16)
    frames = [
        np.clip(still + rng.normal(0, 10, still.shape), 0, 255).astype(np.uint8) for _ in range(40)
    ]
    raw = _landmark_jitter(FaceTracker.from_analyzer(analyzer, smoothing=0.0), frames)
    smooth = _landmark_jitter(FaceTracker.from_analyzer(analyzer, smoothing=1.0), frames)
    assert raw > 0.2  # the noise really moves the raw fit
    assert smooth < 0.6 * raw


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


def test_box_from_landmarks_matches_the_detector_box(
    testdata: Path, analyzer: FaceAnalyzer
) -> None:
    for name in [PORTRAIT, "biden_official_portrait.jpg", "grace_hopper_navy_portrait.jpg"]:
        img = load_image_bgr(testdata / "faces" / name)
        face = offline_analyzer(max_side=800, with_encoder=False).analyze(img)[0]
        assert face.landmarks is not None
        assert iou(box_from_landmarks(face.landmarks), face.bbox) > 0.6, name
