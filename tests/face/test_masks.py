"""Maskers on real faces: FaceFusion's box mask, the ellipse, the mouth mask that keeps the
user's real mouth (visible from strength 0 to 100, nothing else changes), the BiSeNet
region mask (with a tiny parser whose classes follow the pixels) and their minimum."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import pytest
from face_helpers import lite_analyzer
from face_parts_data import colour_parser, load_face_image, yunet_faces

from livecam.errors import ModelError
from livecam.face.crops import align
from livecam.face.masks import (
    BoxMasker,
    CombinedMasker,
    EllipseMasker,
    MouthMasker,
    RegionMasker,
    box_mask,
    winner_in,
)
from livecam.face.parts import Masker
from livecam.face.paste.blenders import AffineBlender
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.types import Face, FaceWork, Frame, FrameContext

CPU = RuntimeOptions(provider="cpu")


def record(image: Frame, face: Face, size: int = 128, template: str = "arcface_128") -> FaceWork:
    """A swapped record: the aligned crop and, as the swapped face, its colour negative."""
    affine = align.align_affine(face.kps, template, size)  # type: ignore[arg-type]
    crop = align.warp_crop(image, affine, size)
    return FaceWork(0, 0, face, affine=affine, crop=crop, output=255 - crop)


@pytest.fixture(scope="module")
def speaking(testdata: Path) -> tuple[Frame, Face]:
    """Obama speaking (mouth open), with the lite preset's 68 landmarks."""
    image = load_face_image(testdata, "obama_speech_2009.jpg")
    faces = lite_analyzer(640, with_encoder=False).analyze(image)
    assert faces and faces[0].landmarks is not None and len(faces[0].landmarks) == 68
    return image, faces[0]


def test_box_mask_follows_facefusion() -> None:
    m = box_mask((128, 128), 0.3, (0, 0, 0, 0))
    # FaceFusion: blur_amount = int(128 * 0.5 * 0.3) = 19, border max(19 // 2, 1) = 9 px
    # zeroed, Gaussian sigma 19 * 0.25
    ref = np.ones((128, 128), np.float32)
    ref[:9], ref[-9:], ref[:, :9], ref[:, -9:] = 0, 0, 0, 0
    blurred = cv2.GaussianBlur(ref, (0, 0), 19 * 0.25)
    assert np.array_equal(m, blurred)
    assert m[64, 64] == pytest.approx(1.0, abs=1e-4) and m[0, 0] < 0.01
    padded = box_mask((128, 128), 0.0, (25, 0, 10, 0))  # top 25 %, bottom 10 %, no blur
    assert padded[:32].max() == 0 and padded[-12:].max() == 0
    assert padded[32:-12, 1:-1].min() == 1
    assert padded[40, :1].max() == 0  # the 1 px minimum border


def test_ellipse_scales_with_the_crop() -> None:
    work128 = FaceWork(0, 0, _dummy_face(), output=np.zeros((128, 128, 3), np.uint8))
    work512 = FaceWork(0, 0, _dummy_face(), output=np.zeros((512, 512, 3), np.uint8))
    m128, m512 = (w.mask for w in EllipseMasker().mask([], [work128, work512]))
    assert m128 is not None and m512 is not None
    # axes 0.44 * 128 = 56 px about the centre, blurred (kernel 31, sigma 12)
    assert m128[64, 64] > 0.99 and m128[64, 20] > 0.9 and m128[64, 2] < 0.5
    assert m128[2, 2] < 0.01
    small = cv2.resize(m512, (128, 128), interpolation=cv2.INTER_AREA)
    assert np.abs(small - m128).max() < 0.08  # the same shape at 4x the size


def _dummy_face() -> Face:
    return Face(np.zeros(4, np.float32), 1.0, np.zeros((5, 2), np.float32))


def test_mouth_strength_visibly_keeps_the_real_mouth(speaking: tuple[Frame, Face]) -> None:
    image, face = speaking
    assert face.landmarks is not None
    blender = AffineBlender()
    frames = [FrameContext(image)]
    outs = {}
    for strength in (0, 50, 100):
        masker = CombinedMasker([BoxMasker(), MouthMasker(strength)])
        outs[strength] = blender.blend(frames, masker.mask(frames, [record(image, face)]))[0]
    lips = face.landmarks[48:68]
    hull = np.zeros(image.shape[:2], np.uint8)
    cv2.fillConvexPoly(hull, cv2.convexHull(np.round(lips).astype(np.int32)), 1)
    inside = hull.astype(bool)
    d100 = np.abs(outs[100].astype(int) - outs[0].astype(int))
    d50 = np.abs(outs[50].astype(int) - outs[0].astype(int))
    # strength 100 gives the mouth back: the frame's own mouth, not the swapped negative
    assert d100[inside].mean() > 60
    assert np.abs(outs[100].astype(int) - image.astype(int))[inside].mean() < 3
    assert 0.3 * d100[inside].mean() < d50[inside].mean() < 0.7 * d100[inside].mean()
    # and nothing away from the mouth changes
    x0, y0 = lips.min(axis=0)
    x1, y1 = lips.max(axis=0)
    reach = max(x1 - x0, y1 - y0)
    far = np.ones(image.shape[:2], bool)
    far[
        max(0, int(y0 - reach)) : int(y1 + reach) + 1, max(0, int(x0 - reach)) : int(x1 + reach) + 1
    ] = False
    assert np.array_equal(outs[100][far], outs[0][far])
    assert d100[far].max() == 0 and np.count_nonzero(np.any(outs[0] != image, axis=2)) > 5000


def test_mouth_from_106_points_matches_68(speaking: tuple[Frame, Face]) -> None:
    """2d106det's lips are points 52-71: the same lips there give the same mask."""
    image, face = speaking
    assert face.landmarks is not None
    p106 = np.zeros((106, 2), np.float32)
    p106[52:72] = face.landmarks[48:68]
    face106 = Face(face.bbox, face.score, face.kps, landmarks=p106)
    m68 = MouthMasker(100).mask([], [record(image, face)])[0].mask
    m106 = MouthMasker(100).mask([], [record(image, face106)])[0].mask
    assert m68 is not None and m106 is not None
    assert np.array_equal(m68, m106) and m68.min() == 0.0


def test_mouth_mask_skips_faces_without_landmarks(testdata: Path) -> None:
    image = load_face_image(testdata, "obama_official_portrait_2012.jpg")
    face = yunet_faces(image)[0]  # keypoints only
    assert face.landmarks is None
    frames = [FrameContext(image)]
    work = record(image, face)
    box_only = BoxMasker().mask(frames, [work])[0]
    both = CombinedMasker([BoxMasker(), MouthMasker(100)]).mask(frames, [work])[0]
    assert both.mask is not None and box_only.mask is not None
    assert np.array_equal(both.mask, box_only.mask)
    assert MouthMasker(100).mask(frames, [work])[0].mask is None


def test_combined_is_the_elementwise_minimum(speaking: tuple[Frame, Face]) -> None:
    image, face = speaking
    work = record(image, face, 256, "arcface_128")
    parts: list[Masker] = [BoxMasker(0.5, (10, 0, 0, 0)), EllipseMasker(), MouthMasker(80)]
    alone = [p.mask([], [work])[0].mask for p in parts]
    combined = CombinedMasker(parts).mask([], [work])[0].mask
    masks = [m for m in alone if m is not None]
    assert combined is not None and len(masks) == 3 and all(m.shape == (256, 256) for m in masks)
    assert np.array_equal(combined, np.minimum.reduce(masks))
    assert work.mask is None  # records are not changed in place


def test_region_mask_keeps_the_chosen_parser_classes(
    testdata: Path, tmp_path: Path, speaking: tuple[Frame, Face]
) -> None:
    image, face = speaking
    model = OnnxModel(colour_parser(tmp_path / "parser.onnx"), CPU, model_id="parser")
    # the parser reads the swapped face (FaceFusion parses the swapper's output): here the
    # face itself
    works = [record(image, face), record(image, face, 256)]
    works = [dataclasses.replace(w, output=w.crop) for w in works]
    masked = RegionMasker(model, regions=("skin", "nose")).mask([], works)
    for work in masked:
        assert work.output is not None and work.mask is not None
        h, w = work.output.shape[:2]
        # reference: FaceFusion's preprocessing (512, RGB, ImageNet mean/std); the parser
        # calls a pixel skin where red is above its mean and above green
        x = cv2.resize(work.output, (512, 512))[..., ::-1].astype(np.float32) / 255
        x = (x - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]
        skin = ((x[..., 0] > 0) & (x[..., 0] > x[..., 1])).astype(np.float32)
        skin = np.asarray(cv2.resize(skin, (w, h)), np.float32)
        ref = (np.clip(cv2.GaussianBlur(skin.clip(0, 1), (0, 0), 5), 0.5, 1) - 0.5) * 2
        assert work.mask.shape == (h, w)
        assert np.abs(work.mask - ref).max() < 1e-4
        assert 0.05 < (work.mask > 0.5).mean() < 0.95  # a real split of the face
    hair_only = RegionMasker(model, regions=("glasses",)).mask([], works[:1])[0].mask
    assert hair_only is not None and hair_only.max() == 0.0


def test_region_masker_refuses_bad_settings(tmp_path: Path) -> None:
    model = OnnxModel(colour_parser(tmp_path / "p.onnx", size=256), CPU, model_id="p")
    with pytest.raises(ModelError, match="input_size to 256"):
        RegionMasker(model)
    with pytest.raises(ValueError, match="unknown face-parser regions"):
        RegionMasker(model, input_size=256, regions=("hair",))


def test_winner_in_is_argmax_membership_with_ties() -> None:
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((2, 19, 64, 64)).astype(np.float32)
    scores[:, 3] = np.round(scores[:, 3])  # ties between a kept and a dropped class
    scores[:, 7] = np.round(scores[:, 7])
    scores[:, 0] = np.round(scores[:, 0])
    for classes in ({1, 3, 10}, {0, 5}, {7}):
        ref = np.isin(scores.argmax(axis=1), list(classes))
        assert np.array_equal(winner_in(scores, classes), ref)
