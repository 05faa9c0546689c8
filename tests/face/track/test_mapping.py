"""Several sources mapped to target people (FaceMapper) on real photos with the lite
preset's real recognizer (MobileFaceNet): each face gets its person's source, steadily
through a tracked clip and an occlusion; strangers are not swapped; one face per target;
hysteresis."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import pytest
from face_helpers import lite_analyzer, lite_detector, lite_landmarker

from livecam.face.identity.metrics import Embedding, embedding_distance, l2_normalize
from livecam.face.parts import Recognizer
from livecam.face.source.analysis import FaceAnalyzer
from livecam.face.track.mapping import FaceMapper, assign_sources
from livecam.face.track.tracking import FaceTracker
from livecam.types import Face, FaceWork, Frame, FrameContext
from livecam.userfiles.images import load_image_bgr

TWO = "obama_biden_two_people.jpg"
BIDEN, OBAMA = 0, 1  # source indices: targets are [biden, obama]


class CountingRecognizer:
    """The real recognizer, counting its calls and the faces of each."""

    def __init__(self, inner: Recognizer) -> None:
        self.inner = inner
        self.dim = inner.dim
        self.same_person_distance = inner.same_person_distance
        self.model_id = inner.model_id
        self.providers = inner.providers
        self.calls: list[int] = []

    def warmup(self) -> None:
        self.inner.warmup()

    def close(self) -> None:
        self.inner.close()

    def embed(self, frames: Sequence[FrameContext], faces: Sequence[FaceWork]) -> list[FaceWork]:
        self.calls.append(len(faces))
        return self.inner.embed(frames, faces)


@pytest.fixture(scope="module")
def analyzer() -> FaceAnalyzer:
    return lite_analyzer(800)


@pytest.fixture
def recognizer(analyzer: FaceAnalyzer) -> CountingRecognizer:
    assert analyzer.recognizer is not None
    return CountingRecognizer(analyzer.recognizer)


def _embedding(testdata: Path, analyzer: FaceAnalyzer, name: str) -> Embedding:
    face = analyzer.analyze(load_image_bgr(testdata / "faces" / name), with_embedding=True)[0]
    assert face.embedding is not None
    return face.embedding


@pytest.fixture(scope="module")
def targets(testdata: Path, analyzer: FaceAnalyzer) -> list[Embedding]:
    """[biden, obama] from their official portraits (not the frames' photo)."""
    names = ["biden_official_portrait.jpg", "obama_official_portrait_2012.jpg"]
    return [_embedding(testdata, analyzer, n) for n in names]


@pytest.fixture(scope="module")
def two(testdata: Path) -> Frame:
    return load_image_bgr(testdata / "faces" / TWO)


def _head(testdata: Path, name: str, size: int = 400) -> Frame:
    """A size x size head-and-shoulders crop around the photo's main face."""
    img = load_image_bgr(testdata / "faces" / name)
    ((face,),) = lite_detector(800).detect([FrameContext(img)])
    (cx, cy), s = face.center, face.width
    x0, y0 = max(int(cx - s), 0), max(int(cy - s), 0)
    crop = img[y0 : int(cy + s), x0 : int(cx + s)]
    return np.ascontiguousarray(cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA))


def test_each_person_gets_their_source_in_one_recognizer_call(
    analyzer: FaceAnalyzer, recognizer: CountingRecognizer, targets: list[Embedding], two: Frame
) -> None:
    faces = analyzer.analyze(two)
    assert len(faces) == 2 and all(f.embedding is None for f in faces)
    obama_face, biden_face = faces  # largest first: Obama's face box is the larger here
    mapper = FaceMapper(recognizer, targets)
    picked = mapper.pick(FrameContext(two), faces)
    assert [(f.track_id, s) for f, s in picked] == [(-1, OBAMA), (-1, BIDEN)]
    assert picked[0][0] is obama_face and picked[1][0] is biden_face
    assert recognizer.calls == [2]  # both faces embedded in one call
    assert mapper.select(FrameContext(two, 1), faces) == faces
    # the mapping follows the targets' order, not the faces'
    swapped = FaceMapper(recognizer, targets[::-1]).pick(FrameContext(two), faces)
    assert [(f is biden_face, s) for f, s in swapped] == [(False, 0), (True, 1)]


def test_a_stranger_is_not_swapped(
    testdata: Path, analyzer: FaceAnalyzer, recognizer: CountingRecognizer, targets: list[Embedding]
) -> None:
    frame = np.hstack(
        [
            _head(testdata, "grace_hopper_navy_portrait.jpg"),
            _head(testdata, "biden_standing_2010.jpg"),
        ]
    )
    faces = analyzer.analyze(frame)
    assert len(faces) == 2
    (face, source), *rest = FaceMapper(recognizer, targets).pick(FrameContext(frame), faces)
    assert rest == [] and source == BIDEN and face.center[0] > 400  # Biden, right half
    alone = _head(testdata, "astronaut_eileen_collins.png")
    assert FaceMapper(recognizer, targets).pick(FrameContext(alone), analyzer.analyze(alone)) == []


def test_one_face_per_target_person(
    testdata: Path, analyzer: FaceAnalyzer, recognizer: CountingRecognizer, targets: list[Embedding]
) -> None:
    head = _head(testdata, "obama_official_portrait_2012.jpg")
    frame = np.hstack([head, head])  # the same person twice: a person is one person
    faces = analyzer.analyze(frame)
    assert len(faces) == 2
    picked = FaceMapper(recognizer, targets).pick(FrameContext(frame), faces)
    assert [s for _, s in picked] == [OBAMA]
    # with two Obama targets (two sources), each copy takes one
    speech = _embedding(testdata, analyzer, "obama_speech_2009.jpg")
    both = FaceMapper(recognizer, [targets[OBAMA], speech]).pick(FrameContext(frame), faces)
    assert sorted(s for _, s in both) == [0, 1]


def test_mapping_is_stable_in_a_tracked_clip_and_survives_an_occlusion(
    analyzer: FaceAnalyzer, recognizer: CountingRecognizer, targets: list[Embedding], two: Frame
) -> None:
    obama_box = min(analyzer.analyze(two), key=lambda f: f.center[0]).bbox  # the left face
    tracker = FaceTracker(lite_detector(800), lite_landmarker(), detect_every=3)
    mapper = FaceMapper(recognizer, targets)
    h, w = two.shape[:2]
    occluded = range(8, 14)
    ids: dict[int, set[int]] = {OBAMA: set(), BIDEN: set()}
    for seq in range(24):
        shift = np.array([3 * seq, seq], np.float32)  # the camera pans 3 px right, 1 down
        m = np.array([[1, 0, shift[0]], [0, 1, shift[1]]], np.float32)
        img = np.asarray(cv2.warpAffine(two, m, (w, h), borderMode=cv2.BORDER_REPLICATE), np.uint8)
        if seq in occluded:  # a hand over Obama's face
            x1, y1, x2, y2 = (obama_box + np.tile(shift, 2)).astype(int)
            img[y1 - 40 : y2 + 40, x1 - 40 : x2 + 40] = 0
        frame = FrameContext(img, seq, seq / 30)
        calls = len(recognizer.calls)
        faces = tracker.update([frame])[0]
        picked = mapper.pick(frame, faces)
        assert len(recognizer.calls) - calls <= 1  # at most one recognizer call per frame
        # every face is swapped, with its own person's source (Obama is the left one)
        assert len(picked) == len(faces)
        for face, source in picked:
            assert source == (OBAMA if face.center[0] < w / 2 else BIDEN)
            ids[source].add(face.track_id)
        if seq == 0 or seq == 23:
            assert sorted(s for _, s in picked) == [BIDEN, OBAMA]
    # Biden kept one track throughout; Obama's track ended under the hand and the new track
    # got Obama's source back in the frame it appeared
    assert len(ids[BIDEN]) == 1 and len(ids[OBAMA]) == 2
    assert mapper.embeddings_computed == 3  # one per track: no recheck within 30 frames


def _face(embedding: Embedding, track_id: int, x: float = 100.0) -> Face:
    """A tracked face record carrying an embedding (the recognizer is then not called)."""
    box = np.array([x, 100, x + 100, 200], np.float32)
    return Face(box, 1.0, np.zeros((5, 2), np.float32), embedding=embedding, track_id=track_id)


def _between(a: Embedding, b: Embedding, t: float) -> Embedding:
    """An embedding ``t`` of the way from person ``a`` to person ``b``."""
    return l2_normalize((1 - t) * l2_normalize(a) + t * l2_normalize(b))


def test_a_borderline_face_does_not_flicker_between_sources(
    analyzer: FaceAnalyzer, targets: list[Embedding]
) -> None:
    assert analyzer.recognizer is not None
    recognizer = analyzer.recognizer
    biden, obama = targets
    blank = np.zeros((8, 8, 3), np.uint8)

    def flip(hysteresis: float, ts: np.ndarray) -> float:
        """Morph one tracked face through ``ts`` (0: Obama, 1: Biden), measured every frame:
        where its source changed (it changes exactly once)."""
        mapper = FaceMapper(recognizer, targets, 2.0, recheck_every=1, hysteresis=hysteresis)
        got = []
        for seq, t in enumerate(ts):
            face = _face(_between(obama, biden, float(t)), 1)
            ((_, source),) = mapper.pick(FrameContext(blank, seq), [face])
            got.append(source)
        changes = [i for i in range(1, len(got)) if got[i] != got[i - 1]]
        assert len(changes) == 1 and got[0] != got[-1]
        return float(ts[changes[0]])

    steps = np.linspace(0.0, 1.0, 40)  # 0.5, where both are equally far, is not a step
    # without hysteresis the source changes at the midpoint either way; with it, only once
    # the face is clearly the other person: later going forward, earlier coming back
    assert flip(0.0, steps) == min(steps[steps > 0.5])
    assert flip(0.0, steps[::-1]) == max(steps[steps < 0.5])
    step = float(steps[1])  # MobileFaceNet's two targets are 1.4 apart: 0.036 a step
    assert flip(0.1, steps) > flip(0.0, steps) + step
    assert flip(0.1, steps[::-1]) < flip(0.0, steps[::-1]) - step
    # a held source is kept a little past the threshold, but never taken there
    d = embedding_distance(_between(obama, biden, 0.3), obama)
    assert assign_sources([np.array([9, d], np.float32)], [OBAMA], d - 0.01, 0.02) == [OBAMA]
    assert assign_sources([np.array([9, d], np.float32)], [None], d - 0.01, 0.02) == [None]


def test_a_returning_face_takes_over_the_source_its_track_held(
    testdata: Path, analyzer: FaceAnalyzer, targets: list[Embedding]
) -> None:
    assert analyzer.recognizer is not None
    biden, obama = targets
    limit = analyzer.recognizer.same_person_distance
    # partly turned on its return: just past the threshold from Obama's reference, toward
    # a stranger's face
    hopper = _embedding(testdata, analyzer, "grace_hopper_navy_portrait.jpg")
    ts = [float(t) for t in np.linspace(0, 1, 201)]
    t = next(t for t in ts if embedding_distance(_between(obama, hopper, t), obama) > limit)
    back = _between(obama, hopper, t)
    blank = np.zeros((8, 8, 3), np.uint8)

    def after_gap(gap: int, x: float) -> list[tuple[Face, int]]:
        assert analyzer.recognizer is not None
        mapper = FaceMapper(analyzer.recognizer, [biden, obama], hold_frames=15)
        assert [s for _, s in mapper.pick(FrameContext(blank, 0), [_face(obama, 1)])] == [OBAMA]
        mapper.pick(FrameContext(blank, 1), [])  # the track ended
        return mapper.pick(FrameContext(blank, 1 + gap), [_face(back, 2, x)])

    assert [s for _, s in after_gap(10, x=110)] == [OBAMA]  # near where it was, in time
    assert after_gap(20, x=110) == []  # too late: a new face, measured on its own
    assert after_gap(10, x=400) == []  # elsewhere, and not like the lost face


def test_bad_targets_are_rejected(analyzer: FaceAnalyzer, targets: list[Embedding]) -> None:
    assert analyzer.recognizer is not None
    with pytest.raises(ValueError, match="at least one target"):
        FaceMapper(analyzer.recognizer, [])
    with pytest.raises(ValueError, match="differ in size"):
        FaceMapper(analyzer.recognizer, [targets[0], targets[1][:64]])
