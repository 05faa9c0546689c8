"""The classic swapper part (with the ROI blender) on real faces, dlib analysis from the
offline preset."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from face_helpers import offline_analyzer
from face_parts_data import load_face_image

from livecam.config.schema import SwapConfig
from livecam.errors import LivecamError
from livecam.face.parts import Blender, FrameContext, Swapper
from livecam.face.paste import colour as blend
from livecam.face.paste.blenders import RoiBlender
from livecam.face.source.analysis import FaceAnalyzer
from livecam.face.swap import mesh
from livecam.face.swap.classic import ClassicOptions, ClassicSwapper, SourceModel
from livecam.sources.image import load_image_bgr
from livecam.types import Face, FaceWork, Frame


@pytest.fixture(scope="module")
def analyzer() -> FaceAnalyzer:
    return offline_analyzer(max_side=1024, upsample=1)


@pytest.fixture(scope="module")
def obama(testdata: Path, analyzer: FaceAnalyzer) -> tuple[np.ndarray, Face]:
    img = load_face_image(testdata, "obama_official_portrait_2012.jpg")
    return img, analyzer.analyze(img, with_embedding=True)[0]


@pytest.fixture(scope="module")
def biden(testdata: Path, analyzer: FaceAnalyzer) -> tuple[np.ndarray, Face]:
    img = load_face_image(testdata, "biden_official_portrait.jpg")
    return img, analyzer.analyze(img, with_embedding=True)[0]


def swap(
    swapper: ClassicSwapper, frame: Frame, targets: list[np.ndarray], model: SourceModel
) -> Frame:
    """Swap ``model`` onto the faces with these 68 landmarks: the swapper part, then the ROI
    blender in the swapper's blend mode."""
    frames = [FrameContext(frame)]
    kps = np.zeros((5, 2), np.float32)
    works = [FaceWork(0, 0, Face(np.zeros(4, np.float32), 1.0, kps, lm)) for lm in targets]
    return RoiBlender(swapper.config.blend).blend(frames, swapper.swap(frames, works, [model]))[0]


def test_parts_follow_their_protocols() -> None:
    assert isinstance(ClassicSwapper(), Swapper) and isinstance(RoiBlender(), Blender)


def _dist(a: np.ndarray | None, b: np.ndarray | None) -> float:
    assert a is not None and b is not None
    return float(np.linalg.norm(a - b))


def _face_at(analyzer: FaceAnalyzer, img: np.ndarray, ref: Face) -> Face:
    faces = analyzer.analyze(img, with_embedding=True)
    assert faces, "no face found in the output"
    return min(faces, key=lambda f: np.hypot(*(np.subtract(f.center, ref.center))))


def test_swap_moves_identity_toward_source(analyzer, obama, biden) -> None:
    (src, sf), (tgt, tf) = obama, biden
    swapper = ClassicSwapper()
    model = swapper.prepare_landmarks(src, sf.landmarks)
    out = swap(swapper, tgt, [tf.landmarks], model)
    of = _face_at(analyzer, out, tf)
    before = _dist(tf.embedding, sf.embedding)
    after = _dist(of.embedding, sf.embedding)
    assert after < before - 0.05, (before, after)
    assert _dist(of.embedding, sf.embedding) < _dist(of.embedding, tf.embedding)


@pytest.mark.parametrize("mode", ["feather", "seamless"])
def test_pixels_outside_face_roi_unchanged(obama, biden, mode) -> None:
    (src, sf), (tgt, tf) = obama, biden
    swapper = ClassicSwapper(SwapConfig(blend=mode))
    original = tgt.copy()
    model = swapper.prepare_landmarks(src, sf.landmarks)
    out = swap(swapper, tgt, [tf.landmarks], model)
    assert np.array_equal(tgt, original), "the input frame must not be modified"
    roi = swapper.face_roi(tf.landmarks, tgt.shape, model)
    assert roi is not None
    x0, y0, x1, y1 = roi
    outside = np.ones(tgt.shape[:2], bool)
    outside[y0:y1, x0:x1] = False
    assert np.array_equal(out[outside], tgt[outside])
    assert not np.array_equal(out[y0:y1, x0:x1], tgt[y0:y1, x0:x1])


def test_no_target_returns_frame_unchanged(obama, biden) -> None:
    (src, sf), (tgt, _) = obama, biden
    swapper = ClassicSwapper()
    model = swapper.prepare_landmarks(src, sf.landmarks)
    assert swap(swapper, tgt, [], model) is tgt


def test_two_faces_both_swapped(testdata, analyzer, biden) -> None:
    src, sf = biden
    img = load_face_image(testdata, "obama_biden_two_people.jpg", 1200)
    faces = analyzer.analyze(img, with_embedding=True)
    assert len(faces) == 2
    swapper = ClassicSwapper()
    model = swapper.prepare_landmarks(src, sf.landmarks)
    out = swap(swapper, img, [f.landmarks for f in faces], model)
    for f in faces:
        roi = swapper.face_roi(f.landmarks, img.shape, model)
        assert roi is not None
        x0, y0, x1, y1 = roi
        assert np.abs(out[y0:y1, x0:x1].astype(int) - img[y0:y1, x0:x1]).mean() > 3
        of = _face_at(analyzer, out, f)
        assert _dist(of.embedding, sf.embedding) < _dist(f.embedding, sf.embedding)


def _inner_mouth(shape: tuple[int, ...], lm: np.ndarray) -> np.ndarray:
    m = blend.polygon_mask((shape[0], shape[1]), [lm[mesh.INNER_MOUTH]], convex=False)
    return cv2.erode(m, np.ones((5, 5), np.uint8)) > 0


def test_keep_mouth_keeps_target_mouth_interior(testdata, analyzer, obama) -> None:
    src, sf = obama
    tgt = load_face_image(testdata, "obama_speech_2009.jpg")  # speaking: mouth open
    tf = analyzer.analyze(tgt)[0]
    inner = _inner_mouth(tgt.shape, tf.landmarks)
    assert inner.sum() > 50, "the test target should have an open mouth"
    kept = ClassicSwapper(SwapConfig(keep_mouth=True))
    out = swap(kept, tgt, [tf.landmarks], kept.prepare_landmarks(src, sf.landmarks))
    diff_kept = np.abs(out[inner].astype(int) - tgt[inner]).mean()
    free = ClassicSwapper(SwapConfig(keep_mouth=False))
    out2 = swap(free, tgt, [tf.landmarks], free.prepare_landmarks(src, sf.landmarks))
    diff_free = np.abs(out2[inner].astype(int) - tgt[inner]).mean()
    assert diff_kept < 2.0, diff_kept
    assert diff_free > diff_kept + 5, (diff_free, diff_kept)


@pytest.mark.parametrize("mode", ["lab", "rct"])
def test_color_transfer_moves_lab_mean_toward_target(obama, biden, mode) -> None:
    (src, sf), (tgt, tf) = obama, biden
    swapper = ClassicSwapper(SwapConfig(color="none"))
    # warp the source face onto the target without colour matching, then match
    model = swapper.prepare_landmarks(src, sf.landmarks)
    warped = swap(swapper, tgt, [tf.landmarks], model)
    region = blend.polygon_mask(tgt.shape[:2], [tf.landmarks[:27]], convex=True) > 0
    matched = blend.color_transfer(warped, tgt, region, mode, face_size=200.0)
    target_mean = blend.to_lab(tgt)[region].mean(axis=0)
    before = np.linalg.norm(blend.to_lab(warped)[region].mean(axis=0) - target_mean)
    after = np.linalg.norm(blend.to_lab(matched)[region].mean(axis=0) - target_mean)
    assert before > 5, before
    assert after < 0.3 * before, (before, after)
    assert np.array_equal(blend.color_transfer(warped, tgt, region, "none", 200.0), warped)


def test_bad_landmarks_are_a_clear_error(obama) -> None:
    src, _ = obama
    with pytest.raises(LivecamError, match=r"\(68, 2\)"):
        ClassicSwapper().prepare_landmarks(src, np.zeros((5, 2), np.float32))


def test_face_partly_outside_frame(obama, biden) -> None:
    (src, sf), (tgt, tf) = obama, biden
    # crop so the frame edge cuts through the target face
    cx = int(tf.center[0])
    crop = np.ascontiguousarray(tgt[:, cx:])
    lm = tf.landmarks - np.array([cx, 0], np.float32)
    swapper = ClassicSwapper()
    out = swap(swapper, crop, [lm], swapper.prepare_landmarks(src, sf.landmarks))
    assert out.shape == crop.shape and not np.array_equal(out, crop)


def test_keep_eyes_keeps_the_target_eyes() -> None:
    assets = Path(__file__).resolve().parents[3] / "assets"
    analyzer = offline_analyzer(max_side=800, with_encoder=False)
    src, tgt = load_image_bgr(assets / "grace_hopper.jpg"), load_image_bgr(assets / "astronaut.png")
    src_lm, tgt_lm = analyzer.analyze(src)[0].landmarks, analyzer.analyze(tgt)[0].landmarks
    assert src_lm is not None and tgt_lm is not None
    x, y = tgt_lm[36:42].mean(axis=0).astype(int)
    eye = (slice(y - 3, y + 4), slice(x - 3, x + 4))
    for keep, changed in ((False, True), (True, False)):
        swapper = ClassicSwapper(SwapConfig(eyes="own" if keep else "source"))
        out = swap(swapper, tgt, [tgt_lm], swapper.prepare_landmarks(src, src_lm))
        diff = np.abs(out[eye].astype(int) - tgt[eye].astype(int)).mean()
        assert (diff > 10) == changed, (keep, diff)


def test_swapper_fills_the_work_record(obama, biden) -> None:
    (src, sf), (tgt, tf) = obama, biden
    swapper = ClassicSwapper()
    frames = [FrameContext(tgt)]
    no_landmarks = Face(tf.bbox, tf.score, tf.kps)
    works = [FaceWork(0, 7, tf), FaceWork(0, 7, no_landmarks)]
    model = swapper.prepare_landmarks(src, sf.landmarks)
    done, skipped = swapper.swap(frames, works, [model])
    assert done is works[0] and skipped is works[1]
    assert skipped.output is None and skipped.mask is None  # needs 68 landmarks
    assert done.affine is not None and done.crop is not None
    assert done.output is not None and done.mask is not None
    assert tf.landmarks is not None
    roi = swapper.face_roi(tf.landmarks, tgt.shape, model)
    assert roi is not None
    x0, y0, x1, y1 = roi
    np.testing.assert_array_equal(done.affine, [[1, 0, -x0], [0, 1, -y0]])
    assert np.array_equal(done.crop, tgt[y0:y1, x0:x1])
    assert done.output.shape == done.crop.shape and done.mask.shape == (y1 - y0, x1 - x0)
    assert done.mask.min() >= 0 and done.mask.max() <= 1 and done.mask.max() > 0.99


def test_a_batch_of_frames_swaps_like_one_frame_at_a_time(obama, biden, testdata, analyzer):
    (src, sf), (tgt, tf) = obama, biden
    other = load_face_image(testdata, "grace_hopper_navy_portrait.jpg")
    of = analyzer.analyze(other)[0]
    swapper, blender = ClassicSwapper(), RoiBlender()
    model = swapper.prepare_landmarks(src, sf.landmarks)
    images = [tgt, other, tgt]
    frames = [FrameContext(img, seq) for seq, img in enumerate(images)]
    works = [FaceWork(0, 0, tf), FaceWork(1, 1, of), FaceWork(2, 2, tf)]
    batched = blender.blend(frames, swapper.swap(frames, works, [model]))
    single = [swap(swapper, img, [f.landmarks], model) for img, f in zip(images, [tf, of, tf])]
    assert len(batched) == 3
    for i, (a, b) in enumerate(zip(batched, single, strict=True)):
        assert np.array_equal(a, b), f"frame {i}"
    assert all(out is not img for out, img in zip(batched, images, strict=True))
    assert not np.array_equal(batched[0], tgt)


def test_roi_blender_refuses_a_rotated_crop(biden) -> None:
    tgt, tf = biden
    crop = np.ascontiguousarray(tgt[:10, :10])
    turned = np.array([[0, 1, 0], [-1, 0, 9]], np.float32)
    work = FaceWork(0, 0, tf, turned, crop, np.ones((10, 10), np.float32), crop)
    with pytest.raises(ValueError, match="whole-pixel regions"):
        RoiBlender().blend([FrameContext(tgt)], [work])


def test_a_large_face_is_swapped_at_the_source_detail_and_looks_the_same(
    analyzer, obama, biden
) -> None:
    """A target face 2.5x the source's is swapped on its ROI shrunk to the source's face
    size (the cost grows with the area): the result is within a few grey levels of the
    full-size swap, carries the source identity as well, and leaves the rest untouched."""
    (src, sf), (tgt, _) = obama, biden
    big = cv2.resize(tgt, None, fx=2.5, fy=2.5, interpolation=cv2.INTER_CUBIC)
    (bf,) = analyzer.analyze(big, with_embedding=True)
    outs = {}
    for limit in (1e9, 160.0):
        swapper = ClassicSwapper(options=ClassicOptions(max_work_size=limit))
        model = swapper.prepare_landmarks(src, sf.landmarks)
        _, _, size = mesh.face_frame(bf.landmarks)
        outs[limit] = swap(swapper, big, [bf.landmarks], model)
        scale = swapper.work_scale(size, model)
        assert (scale == 1.0) if limit > 1e6 else (scale < 0.6)
    roi = ClassicSwapper().face_roi(bf.landmarks, big.shape, model)
    assert roi is not None
    x0, y0, x1, y1 = roi
    full, shrunk = (outs[k][y0:y1, x0:x1].astype(int) for k in (1e9, 160.0))
    assert np.abs(full - shrunk).mean() < 4
    outside = np.ones(big.shape[:2], bool)
    outside[y0:y1, x0:x1] = False
    assert np.array_equal(outs[160.0][outside], big[outside])
    d = [_dist(_face_at(analyzer, outs[k], bf).embedding, sf.embedding) for k in (1e9, 160.0)]
    assert abs(d[0] - d[1]) < 0.05 and d[1] < _dist(bf.embedding, sf.embedding) - 0.05
