"""The source-face cache: one analysis per (photo, analyzer model) across builds, cache
instances and threads; persisted on disk; a damaged cache file is rewritten, never fatal.
Source photo feedback: a numbered sheet for a group photo, warnings for a small or blurry
source face."""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from livecam.config.schema import SwapConfig
from livecam.errors import FaceSourceError
from livecam.face.build import build_parts, photo_analyzer
from livecam.face.source.analysis import FaceAnalyzer
from livecam.face.source.photo import (
    BLURRY_SHARPNESS,
    SMALL_FACE_PX,
    SourceFaceCache,
    face_width,
    sharpness,
)
from livecam.face.swap_stage import build_swap_stage
from livecam.models.download import sha256_of
from livecam.models.presets import PRESETS
from livecam.types import Face, Frame
from livecam.userfiles.images import load_image_bgr

PORTRAIT = "obama_official_portrait_2012.jpg"


class CountingAnalyzer:
    """The real analyzer, counting the images it analyses."""

    def __init__(self, inner: FaceAnalyzer) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.embeds = inner.embeds
        self.calls = 0

    def analyze(self, frame: Frame, with_embedding: bool = False) -> list[Face]:
        self.calls += 1
        return self.inner.analyze(frame, with_embedding)


@pytest.fixture(scope="module")
def lite() -> FaceAnalyzer:
    """The lite preset's photo analyzer (what the builder uses)."""
    return photo_analyzer(build_parts(PRESETS["lite"], SwapConfig()))


def _same(a: Face, b: Face) -> None:
    np.testing.assert_array_equal(a.bbox, b.bbox)
    np.testing.assert_array_equal(a.kps, b.kps)
    np.testing.assert_array_equal(a.landmarks, b.landmarks)
    np.testing.assert_array_equal(a.embedding, b.embedding)
    assert a.score == pytest.approx(b.score)


def test_two_builds_share_one_analysis(testdata: Path, tmp_path: Path) -> None:
    faces = SourceFaceCache(tmp_path)
    cfg = SwapConfig(face=str(testdata / "faces" / PORTRAIT))
    first, second = build_swap_stage(cfg, faces), build_swap_stage(cfg, faces)
    assert faces.analyses == 1
    assert second.source.face is first.source.face
    other = build_swap_stage(SwapConfig.of(face=cfg.face, detect_size=800, blend="seamless"), faces)
    assert faces.analyses == 1, "live settings do not change the photo analysis"
    assert other.source.face is first.source.face


def test_two_cache_instances_on_one_folder_analyse_once(
    testdata: Path, tmp_path: Path, lite: FaceAnalyzer
) -> None:
    counting = CountingAnalyzer(lite)
    path = testdata / "faces" / PORTRAIT
    first = SourceFaceCache(tmp_path).get(path, None, counting)
    (stored,) = tmp_path.iterdir()
    assert stored.name.startswith(first.sha256) and stored.suffix == ".npz"
    second = SourceFaceCache(tmp_path).get(path, None, counting)
    assert counting.calls == 1
    _same(first.face, second.face)
    assert second.face.landmarks is not None and second.face.landmarks.shape == (68, 2)
    assert second.face.embedding is not None and second.face.embedding.shape == (128,)
    assert np.array_equal(second.image, first.image)  # read again from the photo itself


def test_photos_with_several_or_no_faces_are_cached_too(
    testdata: Path, tmp_path: Path, lite: FaceAnalyzer
) -> None:
    counting = CountingAnalyzer(lite)
    two = testdata / "faces" / "obama_biden_two_people.jpg"
    for _ in range(2):
        cache = SourceFaceCache(tmp_path)
        assert cache.get(two, 1, counting).faces_found == 2
        with pytest.raises(FaceSourceError, match="2 faces found"):
            cache.get(two, None, counting)
    assert counting.calls == 1


def test_another_analyzer_model_analyses_again(
    testdata: Path, tmp_path: Path, lite: FaceAnalyzer
) -> None:
    path = testdata / "faces" / PORTRAIT
    a = CountingAnalyzer(lite)
    live = build_parts(PRESETS["lite"], SwapConfig()).detector
    coarse = CountingAnalyzer(FaceAnalyzer(live, lite.landmarker, lite.recognizer))
    assert coarse.model_id != a.model_id
    cache = SourceFaceCache(tmp_path)
    cache.get(path, None, a)
    cache.get(path, None, coarse)
    cache.get(path, None, a)
    assert (a.calls, coarse.calls) == (1, 1)
    assert len(list(tmp_path.iterdir())) == 2


def test_a_corrupt_cache_file_is_ignored_and_rewritten(
    testdata: Path, tmp_path: Path, lite: FaceAnalyzer, caplog: pytest.LogCaptureFixture
) -> None:
    counting = CountingAnalyzer(lite)
    path = testdata / "faces" / PORTRAIT
    good = SourceFaceCache(tmp_path).get(path, None, counting)
    (stored,) = tmp_path.iterdir()
    for damage in (b"", b"PK\x03\x04 not really a zip", stored.read_bytes()[:200]):
        stored.write_bytes(damage)
        with caplog.at_level(logging.WARNING):
            again = SourceFaceCache(tmp_path).get(path, None, counting)
        assert "ignoring the unreadable face cache file" in caplog.text
        caplog.clear()
        _same(good.face, again.face)
    assert counting.calls == 4  # the first analysis, then once per damaged file
    SourceFaceCache(tmp_path).get(path, None, counting)
    assert counting.calls == 4, "the rewritten file is read back"


def test_an_unwritable_cache_folder_keeps_working_in_memory(
    testdata: Path, tmp_path: Path, lite: FaceAnalyzer, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    counting = CountingAnalyzer(lite)
    cache = SourceFaceCache(blocker / "faces")
    with caplog.at_level(logging.WARNING):
        cache.get(testdata / "faces" / PORTRAIT, None, counting)
        cache.get(testdata / "faces" / PORTRAIT, None, counting)
    assert counting.calls == 1 and "keeping it in memory" in caplog.text


def test_threads_asking_at_once_get_one_analysis(
    testdata: Path, tmp_path: Path, lite: FaceAnalyzer
) -> None:
    counting = CountingAnalyzer(lite)
    cache = SourceFaceCache(tmp_path)
    path = testdata / "faces" / PORTRAIT
    got: list[Face] = []
    threads = [
        threading.Thread(target=lambda: got.append(cache.get(path, None, counting).face))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert counting.calls == 1 and len(got) == 3 and got[0] is got[1] is got[2]


def test_a_group_photo_error_lists_the_faces_and_writes_a_numbered_sheet_into_the_cache(
    testdata: Path, tmp_path: Path, lite: FaceAnalyzer
) -> None:
    photos = tmp_path / "photos"
    photos.mkdir()
    photo = photos / "party.jpg"
    shutil.copy(testdata / "faces" / "obama_biden_two_people.jpg", photo)
    cache = SourceFaceCache(tmp_path / "cache", face_sheets=True)
    with pytest.raises(FaceSourceError) as info:
        cache.get(photo, None, lite)
    sheet = tmp_path / "cache" / "sheets" / f"party-{sha256_of(photo)[:8]}.faces.jpg"
    text = str(info.value)
    assert f"they are numbered in {sheet}" in text and "  0: box" in text and "  1: box" in text
    # the sheet shows the photo with both faces, then both faces again as thumbnails
    image = load_image_bgr(sheet)
    assert image.shape[1] == 1200
    assert len(lite.analyze(image)) == 4
    with pytest.raises(FaceSourceError, match=f"out of range.*{sheet.name}"):
        cache.get(photo, 5, lite)
    assert list(photos.iterdir()) == [photo]  # nothing written beside the user's photo
    assert list(sheet.parent.iterdir()) == [sheet]  # the same sheet again, not a copy

    # no cache folder: the temporary folder's, still not the photo's
    with pytest.raises(FaceSourceError) as info:
        SourceFaceCache(None, face_sheets=True).get(photo, None, lite)
    (elsewhere,) = re.findall(r"numbered in (\S+\.faces\.jpg)", str(info.value))
    assert (
        Path(elsewhere).parent.name == f"livecam-face-sheets-{os.getuid()}"
        and Path(elsewhere).is_file()
    )
    assert list(photos.iterdir()) == [photo]


@pytest.mark.parametrize("planted", ["link", "open to others", "another user's"])
def test_a_face_sheet_never_goes_into_a_temporary_folder_someone_else_planted(
    testdata: Path,
    tmp_path: Path,
    lite: FaceAnalyzer,
    monkeypatch: pytest.MonkeyPatch,
    planted: str,
) -> None:
    """The temporary folder is everyone's: a name planted there first (a link to a folder
    of the planter's, a folder anyone may read and write, another user's folder) is not
    used for the thumbnails of the user's photo; the error still lists the faces."""
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared_tmp))
    name = shared_tmp / f"livecam-face-sheets-{os.getuid()}"
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    if planted == "link":
        name.symlink_to(theirs)
    else:
        name.mkdir(mode=0o700)
    if planted == "open to others":
        name.chmod(0o777)
    if planted == "another user's":
        if os.getuid() != 0:
            pytest.skip("giving a folder to another user needs root (CI runs as root)")
        os.chown(name, os.getuid() + 4242, -1)
    photo = tmp_path / "party.jpg"
    shutil.copy(testdata / "faces" / "obama_biden_two_people.jpg", photo)
    with pytest.raises(FaceSourceError, match="2 faces found") as info:
        SourceFaceCache(None, face_sheets=True).get(photo, None, lite)
    assert "no numbered sheet of them could be written" in str(info.value)
    assert "  1: box" in str(info.value)
    assert list(theirs.iterdir()) == [] and list(name.iterdir()) == []


def test_without_face_sheets_nothing_is_written(
    testdata: Path, tmp_path: Path, lite: FaceAnalyzer
) -> None:
    photo = tmp_path / "party.jpg"
    shutil.copy(testdata / "faces" / "obama_biden_two_people.jpg", photo)
    with pytest.raises(FaceSourceError, match="2 faces found") as info:
        SourceFaceCache(None).get(photo, None, lite)
    assert "numbered" not in str(info.value) and list(tmp_path.iterdir()) == [photo]


def test_sharpness_tells_sharp_source_photos_from_blurred_ones(
    testdata: Path, lite: FaceAnalyzer
) -> None:
    """Calibration: every test portrait with a face of 120 px or more is sharp enough; the
    same photo blurred by 1 px at the 128 px scale it is measured at is not."""
    checked = 0
    for path in sorted((testdata / "faces").iterdir()):
        image = load_image_bgr(path)
        faces = lite.analyze(image)
        if len(faces) != 1 or face_width(faces[0]) < SMALL_FACE_PX:
            continue
        face = faces[0]
        assert sharpness(image, face) >= BLURRY_SHARPNESS, path.name
        blurred = np.asarray(cv2.GaussianBlur(image, (0, 0), face.width / 128), np.uint8)
        assert sharpness(blurred, face) < BLURRY_SHARPNESS, path.name
        checked += 1
    assert checked >= 7


def test_small_or_blurry_source_faces_are_warned_about(testdata: Path, tmp_path: Path) -> None:
    faces = SourceFaceCache(None)
    sharp = testdata / "faces" / PORTRAIT
    blurry = tmp_path / "blurry.png"
    image = load_image_bgr(sharp)
    cv2.imwrite(str(blurry), cv2.GaussianBlur(image, (0, 0), 2.5))
    warnings = {}
    for name, path in [
        ("sharp", sharp),
        ("small", testdata / "faces" / "astronaut_eileen_collins.png"),
        ("blurry", blurry),
    ]:
        stage = build_swap_stage(SwapConfig(face=str(path)), faces)
        warnings[name] = stage.warnings
    assert warnings["sharp"] == ()
    (small,) = warnings["small"]
    # ear to ear (her box is 120 px; dlib's 68 points, before dlib left, said 88 px)
    assert "astronaut_eileen_collins.png is only 93 px wide" in small and "smear" in small
    assert "at least 120 px" in small
    (soft,) = warnings["blurry"]
    assert "blurry.png looks blurry (sharpness" in soft and "smear" in soft
