"""AffineBlender on real faces: insightface's inswapper paste-back reproduced within
rounding, an identity paste that leaves the face nearly unchanged, only the face's region
touched, outputs of any size, faces of one frame pasted in order onto one copy."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from face_parts_data import load_face_image, psnr, yunet_faces

from livecam.face.crops import align
from livecam.face.masks import BoxMasker
from livecam.face.parts import Blender
from livecam.face.paste.blenders import AffineBlender, RoiBlender, paste_region
from livecam.types import Face, FaceWork, Frame, FrameContext


def insightface_paste_back(img: Frame, swapped: Frame, m: np.ndarray) -> Frame:
    """insightface 0.7.3 ``INSwapper.get(..., paste_back=True)``'s paste-back, transcribed
    (its unused ``fake_diff`` mask left out)."""
    target_img = img
    bgr_fake: np.ndarray = swapped  # insightface's names (the arrays change type on the way)
    im = cv2.invertAffineTransform(m)
    img_white: np.ndarray = np.full((bgr_fake.shape[0], bgr_fake.shape[1]), 255, dtype=np.float32)
    size = (target_img.shape[1], target_img.shape[0])
    bgr_fake = cv2.warpAffine(bgr_fake, im, size, borderValue=0.0)
    img_white = cv2.warpAffine(img_white, im, size, borderValue=0.0)
    img_white[img_white > 20] = 255
    img_mask: np.ndarray = img_white
    mask_h_inds, mask_w_inds = np.where(img_mask == 255)
    mask_h = np.max(mask_h_inds) - np.min(mask_h_inds)
    mask_w = np.max(mask_w_inds) - np.min(mask_w_inds)
    mask_size = int(np.sqrt(mask_h * mask_w))
    k = max(mask_size // 10, 10)
    kernel = np.ones((k, k), np.uint8)
    img_mask = cv2.erode(img_mask, kernel, iterations=1)
    k = max(mask_size // 20, 5)
    kernel_size = (k, k)
    blur_size = tuple(2 * i + 1 for i in kernel_size)
    img_mask = cv2.GaussianBlur(img_mask, blur_size, 0)
    img_mask = img_mask / 255
    img_mask = np.reshape(img_mask, [img_mask.shape[0], img_mask.shape[1], 1])
    fake_merged = img_mask * bgr_fake + (1 - img_mask) * target_img.astype(np.float32)
    return fake_merged.astype(np.uint8)


def swapped_record(image: Frame, face: Face, frame_index: int = 0, size: int = 128) -> FaceWork:
    """A record as an inswapper-style swapper leaves it: the 128 crop and, as the 'swapped'
    face, its colour negative (so every pasted pixel visibly changes)."""
    affine = align.align_affine(face.kps, "arcface_128", size)
    crop = align.warp_crop(image, affine, size)
    return FaceWork(frame_index, 0, face, affine=affine, crop=crop, output=255 - crop)


@pytest.mark.parametrize(
    "name",
    ["obama_official_portrait_2012.jpg", "obama_partial_face.jpg", "obama_biden_two_people.jpg"],
)
def test_insightface_edge_equals_insightface_paste_back(testdata: Path, name: str) -> None:
    image = load_face_image(testdata, name, max_side=1200)
    faces = yunet_faces(image)
    assert faces
    blender = AffineBlender(edge="insightface")
    for face in faces:
        work = swapped_record(image, face)
        assert work.affine is not None and work.output is not None
        ours = blender.blend([FrameContext(image)], [work])[0]
        theirs = insightface_paste_back(image, work.output, work.affine)
        changed = np.any(theirs != image, axis=2)
        assert changed.sum() > 5000  # a whole face was pasted
        diff = np.abs(ours.astype(np.int16) - theirs.astype(np.int16))
        # insightface truncates the blend, we round (1); OpenCV's fixed-point bilinear warp
        # can land 1 apart when the same warp is done in a shifted region (1 more)
        assert diff.max() <= 2
        assert (diff > 1).mean() < 0.002
        assert np.abs(diff).mean() < 0.1


def test_identity_paste_leaves_the_face_nearly_unchanged(testdata: Path) -> None:
    image = load_face_image(testdata, "obama_official_portrait_2012.jpg")
    face = yunet_faces(image)[0]
    affine = align.align_affine(face.kps, "arcface_128", 128)
    crop = align.warp_crop(image, affine, 128)
    work = FaceWork(0, 0, face, affine=affine, crop=crop, output=crop)
    work = BoxMasker().mask([FrameContext(image)], [work])[0]
    out = AffineBlender().blend([FrameContext(image)], [work])[0]
    x1, y1, x2, y2 = paste_region(image.shape, align.invert(affine), (128, 128))
    inside = psnr(out[y1:y2, x1:x2], image[y1:y2, x1:x2])
    assert inside > 30, inside  # measured 35.0 dB: a bilinear 128 crop of a ~300 px face and back
    outside = np.ones(image.shape[:2], bool)
    outside[y1:y2, x1:x2] = False
    assert np.array_equal(out[outside], image[outside])  # only the face's region is touched


def test_output_of_any_size_pastes_like_the_crop(testdata: Path) -> None:
    """An output at 2x the crop (an enhancer's 1024 for a 512 crop) lands where the crop
    came from; the mask may have yet another size."""
    image = load_face_image(testdata, "biden_official_portrait.jpg")
    face = yunet_faces(image)[0]
    small = swapped_record(image, face)
    assert small.output is not None
    big = FaceWork(
        0,
        0,
        face,
        affine=small.affine,
        crop=small.crop,
        output=np.asarray(
            cv2.resize(small.output, (256, 256), interpolation=cv2.INTER_CUBIC), np.uint8
        ),
        mask=np.ones((64, 64), np.float32),
    )
    blender = AffineBlender()
    a = blender.blend([FrameContext(image)], [small])[0]
    b = blender.blend([FrameContext(image)], [big])[0]
    assert np.count_nonzero(np.any(a != image, axis=2)) > 5000
    assert psnr(a, b) > 30


def test_faces_of_a_frame_pasted_in_order_onto_one_copy(testdata: Path) -> None:
    image = load_face_image(testdata, "obama_biden_two_people.jpg", max_side=1200)
    other = np.ascontiguousarray(image[::-1])  # a second frame, nothing pasted into it
    keep = image.copy()
    left, right = yunet_faces(image)[:2]
    works = [swapped_record(image, left), swapped_record(image, right)]
    blender: Blender = AffineBlender()
    frames = [FrameContext(image), FrameContext(other)]
    out = blender.blend(frames, works)
    assert out[1] is other
    assert out[0] is not image and np.array_equal(image, keep)
    for face in (left, right):
        x1, y1, x2, y2 = face.bbox.astype(int)
        assert np.mean(np.abs(out[0][y1:y2, x1:x2].astype(int) - image[y1:y2, x1:x2])) > 40
    # the same face twice: the later record is what shows where its mask is 1
    twice = swapped_record(image, left)
    assert twice.output is not None and twice.crop is not None
    twice.output = np.full_like(twice.crop, (0, 255, 0))
    out2 = blender.blend([FrameContext(image)], [works[0], twice])[0]
    cx, cy = (int(v) for v in left.center)
    assert tuple(out2[cy, cx]) == (0, 255, 0)
    assert blender.blend(frames, [])[0] is image


def test_roi_blender_still_rejects_rotated_crops(testdata: Path) -> None:
    image = load_face_image(testdata, "obama_official_portrait_2012.jpg")
    work = swapped_record(image, yunet_faces(image)[0])
    work.mask = np.ones((128, 128), np.float32)
    with pytest.raises(ValueError, match="RoiBlender pastes crops"):
        RoiBlender().blend([FrameContext(image)], [work])


def test_unknown_edge_is_refused() -> None:
    with pytest.raises(ValueError, match="'mask' or 'insightface'"):
        AffineBlender(edge="poisson")  # type: ignore[arg-type]
