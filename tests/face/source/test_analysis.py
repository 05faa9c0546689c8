"""Analysis parts on real photos: detection (YuNet, and the bundled YuNet of the lite
preset), landmarks (slim-160), identity embeddings (MobileFaceNet); each part batch-first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from face_helpers import lite_analyzer, lite_detector, lite_landmarker

from livecam.config.schema import SwapConfig
from livecam.errors import FrameFormatError, ModelError
from livecam.face.build import build_parts, photo_analyzer
from livecam.face.crops.align import kps_from_68
from livecam.face.detect import yunet as detect_module
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.face.identity.metrics import cosine, embedding_distance
from livecam.face.identity.onnx import OnnxRecognizer
from livecam.face.parts import Detector, Recognizer, RefitLandmarker
from livecam.face.source.analysis import FaceAnalyzer
from livecam.face.track.tracking import iou
from livecam.models.presets import PRESETS
from livecam.types import Face, FaceWork, FrameContext
from livecam.userfiles.images import load_image_bgr

YUNET = "face_detection_yunet_2023mar.onnx"
BATCH = ["obama_biden_two_people.jpg", "grace_hopper_navy_portrait.jpg", "obama_small_320x240.jpg"]


def _read(testdata: Path, name: str) -> np.ndarray:
    return load_image_bgr(testdata / "faces" / name)


@pytest.fixture(scope="module")
def analyzer() -> FaceAnalyzer:
    return lite_analyzer(800)


def detect(detector: Detector, image: np.ndarray) -> list[Face]:
    return detector.detect([FrameContext(image)])[0]


def test_adapters_implement_the_protocols(analyzer: FaceAnalyzer, testdata: Path) -> None:
    assert isinstance(analyzer.detector, Detector)
    assert isinstance(analyzer.landmarker, RefitLandmarker)
    assert isinstance(analyzer.recognizer, Recognizer)
    assert isinstance(YuNetDetector(testdata / "models" / YUNET), Detector)
    parts = [analyzer.detector, analyzer.landmarker, analyzer.recognizer]
    assert analyzer.model_id == "+".join(p.model_id for p in parts if p is not None)


def test_detector_model_id_names_its_settings() -> None:
    live = YuNetDetector(bundled_yunet(), max_sides=(400,))
    photo = YuNetDetector(bundled_yunet(), max_sides=(1024, 400))
    assert live.model_id != photo.model_id and "1024" in photo.model_id
    assert YuNetDetector(bundled_yunet(), max_sides=(400,)).model_id == live.model_id


def _works(frames: list[FrameContext], faces: list[list[Face]]) -> list[FaceWork]:
    return [FaceWork(i, frames[i].seq, f) for i, per in enumerate(faces) for f in per]


@pytest.mark.parametrize("which", ["lite", "yunet"])
def test_detectors_are_batch_first(testdata: Path, which: str) -> None:
    images = [_read(testdata, name) for name in BATCH]
    det: Detector = (
        lite_detector(800) if which == "lite" else YuNetDetector(testdata / "models" / YUNET)
    )
    batched = det.detect([FrameContext(img, i) for i, img in enumerate(images)])
    single = [detect(det, img) for img in images]
    assert [len(b) for b in batched] == [2, 1, 1]
    for b, s in zip(batched, single, strict=True):
        for fb, fs in zip(b, s, strict=True):
            np.testing.assert_array_equal(fb.bbox, fs.bbox)
            np.testing.assert_array_equal(fb.kps, fs.kps)


def test_landmarker_and_recognizer_are_batch_first(testdata: Path, analyzer: FaceAnalyzer) -> None:
    images = [_read(testdata, name) for name in BATCH]
    frames = [FrameContext(img, i) for i, img in enumerate(images)]
    works = _works(frames, analyzer.detector.detect(frames))
    assert [w.frame_index for w in works] == [0, 0, 1, 2]
    assert analyzer.recognizer is not None and analyzer.landmarker is not None
    batched = analyzer.recognizer.embed(frames, analyzer.landmarker.fit(frames, works))
    assert batched == works  # the same records, in order
    for work in batched:
        img = images[work.frame_index]
        alone = analyzer.recognizer.embed(
            [FrameContext(img)],
            analyzer.landmarker.fit(
                [FrameContext(img)], [FaceWork(0, 0, Face(work.face.bbox, 0, work.face.kps))]
            ),
        )[0]
        assert work.face.embedding is not None and alone.face.embedding is not None
        # one batched ONNX run vs one face alone: the same points, to float rounding
        assert work.face.landmarks is not None and alone.face.landmarks is not None
        np.testing.assert_allclose(work.face.landmarks, alone.face.landmarks, atol=1e-3)
        assert cosine(work.face.embedding, alone.face.embedding) > 0.9999
    # the photos are of three people: the embeddings keep them apart in batch order
    e = [w.face.embedding for w in batched if w.face.embedding is not None]
    assert len(e) == len(batched)
    assert embedding_distance(e[2], e[3]) > analyzer.recognizer.same_person_distance


def test_yunet_keypoints_come_in_arcface_order(testdata: Path) -> None:
    img = _read(testdata, "obama_official_portrait_2012.jpg")
    (face,) = detect(YuNetDetector(testdata / "models" / YUNET), img)
    (fitted,) = lite_analyzer(800, with_encoder=False).analyze(img)  # from its 68 points
    inter_ocular = float(np.linalg.norm(fitted.kps[1] - fitted.kps[0]))
    assert np.linalg.norm(face.kps - fitted.kps, axis=1).max() < 0.25 * inter_ocular
    x1, y1, x2, y2 = face.bbox  # the same face: its fitted keypoints inside YuNet's box
    assert face.score > 0.9 and (fitted.kps >= (x1, y1)).all() and (fitted.kps <= (x2, y2)).all()


def test_bad_yunet_files_are_model_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        YuNetDetector(tmp_path / "nope.onnx")
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="could not be loaded"):
        YuNetDetector(corrupt)


def test_the_bundled_yunet_is_the_2023mar_file_checked_by_its_sha256(
    testdata: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = bundled_yunet()
    assert model.name == YUNET and model.data == (testdata / "models" / YUNET).read_bytes()
    monkeypatch.setattr(detect_module, "YUNET_SHA256", "0" * 64)  # as if the copy were damaged
    with pytest.raises(ModelError, match="damaged") as info:
        bundled_yunet()
    assert "reinstall livecam" in (info.value.hint or "")


def test_yunet_passes_on_shrunk_frames_map_faces_to_frame_pixels(testdata: Path) -> None:
    """A 1080p frame shrunk 5x for one pass finds the face where the full frame has it;
    two passes (1024 and 400 px) find it once."""
    img = _read(testdata, "obama_official_portrait_2012.jpg")
    frame = np.full((1080, 1920, 3), 100, np.uint8)
    frame[:1080, 500:1410] = img[:1080]
    model = bundled_yunet()
    (full,) = detect(YuNetDetector(model), frame)
    (small,) = detect(YuNetDetector(model, max_sides=(400,)), frame)
    (merged,) = detect(YuNetDetector(model, max_sides=(1024, 400)), frame)
    inter_ocular = float(np.linalg.norm(full.kps[1] - full.kps[0]))
    for face in (small, merged):
        assert np.linalg.norm(face.kps - full.kps, axis=1).max() < 0.15 * inter_ocular
        assert iou(face.bbox, full.bbox) > 0.7


def test_yunet_boxes_from_keypoints_are_what_the_68_point_fit_needs(testdata: Path) -> None:
    """With ``box_for_kps`` YuNet's boxes are the landmarker's own (the box around the 68
    points it then fits), so the tracker refits in the box it matched."""
    lmk = lite_landmarker()
    assert isinstance(lmk, RefitLandmarker)
    det = YuNetDetector(bundled_yunet(), max_sides=(400,), box_for_kps=lmk.box_for_kps)
    for name in ("obama_official_portrait_2012.jpg", "grace_hopper_navy_portrait.jpg"):
        img = _read(testdata, name)
        (face,) = detect(det, img)
        (work,) = lmk.fit([FrameContext(img)], [FaceWork(0, 0, face)])
        assert work.face.landmarks is not None
        assert iou(face.bbox, lmk.box_for(work.face.landmarks)) > 0.8, name


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("obama_official_portrait_2012.jpg", 1),
        ("biden_official_portrait.jpg", 1),  # a painting behind him holds face-like trees
        ("obama_biden_two_people.jpg", 2),
        ("group_solvay_conference_1927.png", 29),
        ("codait_bryan.png", 1),  # a 37 px face
    ],
)
def test_lite_photo_analyzer_counts(testdata: Path, name: str, count: int) -> None:
    parts = build_parts(PRESETS["lite"], SwapConfig())
    faces = photo_analyzer(parts, identity=False).analyze(_read(testdata, name))
    assert len(faces) == count
    assert all(f.score >= parts.photo_detector.start_score for f in faces)


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("obama_official_portrait_2012.jpg", 1),
        ("obama_biden_two_people.jpg", 2),
        ("grace_hopper_navy_portrait.jpg", 1),
        ("astronaut_eileen_collins.png", 1),
    ],
)
def test_detection_counts(testdata: Path, name: str, count: int) -> None:
    faces = detect(lite_detector(800), _read(testdata, name))
    assert len(faces) == count
    for f in faces:
        assert f.bbox.dtype == np.float32 and f.kps.shape == (5, 2) and f.score > 0


def test_no_face_in_blank_or_noise() -> None:
    det = lite_detector(800)
    blank = np.full((480, 640, 3), 128, np.uint8)
    noise = np.random.default_rng(0).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    assert det.detect([FrameContext(blank), FrameContext(noise)]) == [[], []]


def test_downscaled_detection_maps_boxes_to_frame_pixels(testdata: Path) -> None:
    img = _read(testdata, "obama_official_portrait_2012.jpg")
    small = detect(lite_detector(400), img)
    full = detect(lite_detector(1200), img)
    assert len(small) == len(full) == 1
    a, b = small[0].bbox, full[0].bbox
    # same face, same place, within the coarser detection's box quantisation
    assert np.abs((a[:2] + a[2:]) / 2 - (b[:2] + b[2:]) / 2).max() < 0.1 * full[0].width
    assert 0.8 < small[0].width / full[0].width < 1.25


def test_landmarks_lie_in_the_box_in_the_right_order(
    testdata: Path, analyzer: FaceAnalyzer
) -> None:
    for name in ["obama_official_portrait_2012.jpg", "biden_official_portrait.jpg"]:
        (face,) = analyzer.analyze(_read(testdata, name))
        lm = face.landmarks
        assert lm is not None and lm.shape == (68, 2) and lm.dtype == np.float32
        x1, y1, x2, y2 = face.bbox
        w = x2 - x1
        # the chin points may hang below the detector's box; everything else is inside it
        assert (lm[:, 0] > x1 - 0.2 * w).all() and (lm[:, 0] < x2 + 0.2 * w).all()
        assert (lm[:, 1] > y1 - 0.2 * w).all() and (lm[:, 1] < y2 + 0.35 * w).all()
        inner = lm[17:]  # brows, eyes, nose, mouth
        assert (inner[:, 0] > x1).all() and (inner[:, 0] < x2).all()
        k = face.kps
        np.testing.assert_allclose(k, kps_from_68(lm))
        assert k[0, 0] < k[2, 0] < k[1, 0]  # eye on image left, nose, eye on image right
        assert k[3, 0] < k[4, 0]  # mouth corners left to right
        assert max(k[0, 1], k[1, 1]) < k[2, 1] < min(k[3, 1], k[4, 1])  # eyes, nose, mouth


def test_box_keypoint_estimate_is_near_the_fitted_keypoints(
    testdata: Path, analyzer: FaceAnalyzer
) -> None:
    img = _read(testdata, "obama_official_portrait_2012.jpg")
    (det,) = detect(analyzer.detector, img)
    assert analyzer.landmarker is not None
    (fitted,) = analyzer.landmarker.fit([FrameContext(img)], [FaceWork(0, 0, det)])
    assert fitted.face.bbox is det.bbox and fitted.face.landmarks is not None
    err = np.linalg.norm(det.kps - fitted.face.kps, axis=1).max()
    assert err < 0.12 * det.width


def test_analyze_sorts_by_area_and_validates_input(testdata: Path, analyzer: FaceAnalyzer) -> None:
    faces = analyzer.analyze(_read(testdata, "obama_biden_two_people.jpg"))
    assert len(faces) == 2 and faces[0].area > faces[1].area
    assert all(f.embedding is None for f in faces)
    with pytest.raises(FrameFormatError):
        analyzer.analyze(np.zeros((48, 64), np.uint8))
    no_encoder = FaceAnalyzer(analyzer.detector, analyzer.landmarker)
    with pytest.raises(ValueError, match="recognizer"):
        no_encoder.analyze(_read(testdata, "obama_small_320x240.jpg"), with_embedding=True)


def _embedded(testdata: Path, analyzer: FaceAnalyzer, name: str) -> Face:
    return analyzer.analyze(_read(testdata, name), with_embedding=True)[0]


def test_embeddings_of_same_and_different_people(testdata: Path, analyzer: FaceAnalyzer) -> None:
    enc = analyzer.recognizer
    assert isinstance(enc, OnnxRecognizer) and enc.dim == 128  # MobileFaceNet
    o1 = _embedded(testdata, analyzer, "obama_official_portrait_2012.jpg")
    o2 = _embedded(testdata, analyzer, "obama_speech_2009.jpg")
    b = _embedded(testdata, analyzer, "biden_official_portrait.jpg")
    a = _embedded(testdata, analyzer, "astronaut_eileen_collins.png")
    g = _embedded(testdata, analyzer, "grace_hopper_navy_portrait.jpg")
    assert a.embedding is not None and g.embedding is not None
    assert embedding_distance(a.embedding, g.embedding) > enc.same_person_distance
    # unit embeddings and their threshold
    for f in (o1, o2, b, a, g):
        assert f.embedding is not None and f.embedding.shape == (128,)
        assert f.embedding.dtype == np.float32
        assert abs(float(np.linalg.norm(f.embedding)) - 1.0) < 1e-5
    assert o1.embedding is not None and o2.embedding is not None and b.embedding is not None
    assert embedding_distance(o1.embedding, o2.embedding) < enc.same_person_distance
    assert embedding_distance(o1.embedding, b.embedding) > enc.same_person_distance
    assert cosine(o1.embedding, o2.embedding) > cosine(o1.embedding, b.embedding)
    d = embedding_distance(3 * o1.embedding, b.embedding)  # any scale: the unit vectors'
    assert cosine(3 * o1.embedding, b.embedding) == pytest.approx(1 - d * d / 2, abs=1e-5)
