"""Face selection modes and the source-face lookup (errors), on real photos."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import pytest
from face_helpers import lite_analyzer

from livecam.errors import ConfigError, FaceSourceError
from livecam.face.identity.metrics import embedding_distance
from livecam.face.source.analysis import FaceAnalyzer
from livecam.face.source.photo import SourceFace, SourceFaceCache
from livecam.face.track.selection import (
    PAUSE_FRAMES,
    ModeSelector,
    ReferenceMatcher,
    StickyMainFace,
    main_face,
    select_faces,
)
from livecam.types import Face, Frame, FrameContext
from livecam.userfiles.images import load_image_bgr

TWO = "obama_biden_two_people.jpg"


@pytest.fixture(scope="module")
def analyzer() -> FaceAnalyzer:
    return lite_analyzer(800)


@pytest.fixture(scope="module")
def photo() -> FaceAnalyzer:
    return lite_analyzer()


@pytest.fixture(scope="module")
def cache() -> SourceFaceCache:
    return SourceFaceCache(None)


@pytest.fixture
def source(cache: SourceFaceCache, photo: FaceAnalyzer):
    """``source(path, face_index=None)``: the cache's lookup with the photo analyzer."""

    def get(path: Path, face_index: int | None = None) -> SourceFace:
        return cache.get(path, face_index, photo)

    return get


@pytest.fixture(scope="module")
def two(testdata: Path, analyzer: FaceAnalyzer) -> tuple[Frame, list[Face]]:
    img = load_image_bgr(testdata / "faces" / TWO)
    return img, analyzer.analyze(img)


def _ref(testdata: Path, analyzer: FaceAnalyzer, name: str) -> np.ndarray:
    face = analyzer.analyze(load_image_bgr(testdata / "faces" / name), with_embedding=True)[0]
    assert face.embedding is not None
    return face.embedding


def test_one_picks_the_largest_and_all_returns_both(two: tuple[Frame, list[Face]]) -> None:
    img, faces = two
    assert len(faces) == 2
    (one,) = select_faces(faces, "one", img.shape)
    assert one.area == max(f.area for f in faces)
    assert len(select_faces(faces, "all", img.shape)) == 2
    assert select_faces([], "one", img.shape) == []
    frame = FrameContext(img)
    assert ModeSelector("one").select(frame, faces) == [one]
    assert ModeSelector("all").select(frame, faces) == faces
    # one source: every picked face gets source 0
    assert ModeSelector("one").pick(frame, faces) == [(one, 0)]
    assert ModeSelector("all").pick(frame, faces) == [(f, 0) for f in faces]


def test_one_breaks_size_ties_by_centrality() -> None:
    kps = np.zeros((5, 2), np.float32)
    edge = Face(np.array([0, 0, 100, 100], np.float32), 1.0, kps)
    centre = Face(np.array([270, 190, 368, 288], np.float32), 1.0, kps)  # 2 % smaller
    assert main_face([edge, centre], (480, 640, 3)) is centre
    big_edge = Face(np.array([0, 0, 150, 150], np.float32), 1.0, kps)
    assert main_face([big_edge, centre], (480, 640, 3)) is big_edge


def test_one_waits_for_its_person_only_between_frames_of_a_continuous_stream() -> None:
    """The person followed (track 1) is gone; another face (track 2) is elsewhere. On
    the next frames ``one`` waits ``patience`` frames for the person (the tracker may
    restart them elsewhere), swapping the other face meanwhile without following it (a
    tracked face never goes out unswapped), then follows it; the person back within the
    wait is followed again. After a pause of the swap (Blank, Freeze, swap off: a gap of
    camera frames) it follows the other face at once. A new track where the person was is
    them, restarted: followed at once."""
    kps = np.zeros((5, 2), np.float32)
    image = np.zeros((480, 640, 3), np.uint8)
    first = Face(np.array([50, 50, 200, 200], np.float32), 1.0, kps, track_id=1)
    other = Face(np.array([400, 200, 520, 320], np.float32), 1.0, kps, track_id=2)
    for gap, waited in ((1, StickyMainFace().patience), (PAUSE_FRAMES + 1, 0)):
        selector = StickyMainFace()
        assert selector.select(FrameContext(image, 10), [first]) == [first]
        seq = 10 + gap
        for _ in range(waited):
            assert selector.select(FrameContext(image, seq), [other]) == [other]
            assert selector.followed == 1
            seq += 1
        assert selector.select(FrameContext(image, seq), [other]) == [other]
        assert selector.followed == 2
    # back within the wait (smaller than the other face, elsewhere): followed again
    selector = StickyMainFace()
    assert selector.select(FrameContext(image, 10), [first]) == [first]
    assert selector.select(FrameContext(image, 11), [other]) == [other]
    back = Face(np.array([560, 380, 620, 440], np.float32), 1.0, kps, track_id=1)
    for seq in range(12, 14 + StickyMainFace().patience):
        assert selector.select(FrameContext(image, seq), [other, back]) == [back]
    # the tracker restarted the person under a new id where they were: followed at once
    selector = StickyMainFace()
    assert selector.select(FrameContext(image, 10), [first, other]) == [first]
    again = Face(first.bbox + 8, 1.0, kps, track_id=3)
    assert selector.select(FrameContext(image, 11), [other, again]) == [again]
    assert selector.followed == 3


def test_reference_picks_the_matching_person(
    testdata: Path, analyzer: FaceAnalyzer, two: tuple[Frame, list[Face]]
) -> None:
    img, faces = two
    enc = analyzer.recognizer
    assert enc is not None
    frame = FrameContext(img)
    biden = _ref(testdata, analyzer, "biden_official_portrait.jpg")
    obama = _ref(testdata, analyzer, "obama_official_portrait_2012.jpg")
    (b,) = select_faces(faces, "reference", img.shape, biden, recognizer=enc, frame=frame)
    (o,) = select_faces(faces, "reference", img.shape, obama, recognizer=enc, frame=frame)
    assert b.track_id == o.track_id == -1 and b.embedding is not None and o.embedding is not None
    assert not np.array_equal(b.bbox, o.bbox)
    assert embedding_distance(b.embedding, biden) < embedding_distance(b.embedding, obama)
    # the photo's larger face (the lite preset's boxes) is Obama; the Biden reference picks
    # the smaller one
    assert o.area > b.area
    stranger = _ref(testdata, analyzer, "grace_hopper_navy_portrait.jpg")
    assert select_faces(faces, "reference", img.shape, stranger, recognizer=enc, frame=frame) == []


def test_bad_mode_and_missing_reference_are_clear_errors(two: tuple[Frame, list[Face]]) -> None:
    img, faces = two
    with pytest.raises(ConfigError, match="largest"):
        select_faces(faces, "largest", img.shape)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="reference"):
        select_faces(faces, "reference", img.shape)


def test_reference_matcher_embeds_each_track_only_every_m_frames(
    testdata: Path, analyzer: FaceAnalyzer, two: tuple[Frame, list[Face]]
) -> None:
    img, faces = two
    assert analyzer.recognizer is not None
    tracked = [dataclasses.replace(f, track_id=i + 1) for i, f in enumerate(faces)]
    obama = _ref(testdata, analyzer, "obama_official_portrait_2012.jpg")
    matcher = ReferenceMatcher(analyzer.recognizer, obama, recheck_every=5)
    picked = [matcher.select(FrameContext(img, i), tracked) for i in range(10)]
    assert all(len(p) == 1 and p[0].track_id == 1 for p in picked)  # Obama is the larger
    assert matcher.embeddings_computed == 4  # 2 tracks x (frame 0, frame 5)
    assert [(f.track_id, s) for f, s in matcher.pick(FrameContext(img, 9), tracked)] == [(1, 0)]
    matcher.select(FrameContext(img, 10), tracked[1:])  # track 1 ended: its cache entry goes
    matcher.select(FrameContext(img, 11), tracked)  # back under the same id: embedded again
    assert matcher.embeddings_computed == 6


def test_source_face_single_face_and_rgba(testdata: Path, source) -> None:
    src = source(testdata / "faces" / "obama_speech_rgba.png")
    assert src.faces_found == 1 and src.face_index == 0
    assert src.face.landmarks is not None and src.face.embedding is not None
    assert src.image.dtype == np.uint8 and src.image.shape == (1200, 626, 3)
    assert len(src.sha256) == 64
    again = source(testdata / "faces" / "obama_speech_rgba.png")
    assert again.face is src.face  # cached by content, not analysed twice


def test_source_face_with_no_face(tmp_path: Path, source) -> None:
    blank = tmp_path / "blank_wall.png"
    cv2.imwrite(str(blank), np.full((400, 400, 3), 200, np.uint8))
    with pytest.raises(FaceSourceError) as err:
        source(blank)
    text = str(err.value)
    assert "blank_wall.png" in text and "0 faces" in text
    assert "80 px" in err.value.hint


def test_source_face_with_several_faces(testdata: Path, source) -> None:
    path = testdata / "faces" / TWO
    with pytest.raises(FaceSourceError) as err:
        source(path)
    text = str(err.value)
    assert TWO in text and "2 faces" in text and "--face-index" in text
    assert "  0: box" in text and "  1: box" in text and "  2: box" not in text
    first, second = source(path, face_index=0), source(path, face_index=1)
    assert first.faces_found == second.faces_found == 2
    assert first.face.area > second.face.area
    with pytest.raises(FaceSourceError, match="out of range"):
        source(path, face_index=2)


def test_source_face_missing_or_unreadable(tmp_path: Path, source) -> None:
    with pytest.raises(FaceSourceError, match="nobody.jpg"):
        source(tmp_path / "nobody.jpg")
    bad = tmp_path / "not_an_image.jpg"
    bad.write_text("hello")
    with pytest.raises(FaceSourceError, match="not_an_image.jpg"):
        source(bad)
