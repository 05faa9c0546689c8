"""The torch device path against the NumPy/OpenCV reference, on CPU tensors and real faces:
crops (cv2.warpAffine) and normalisation (the parts' NumPy formula). Tolerances: OpenCV
quantises sampling positions to 1/32 px and bilinear weights to 1/1024, so warps agree to
rounding: mean < 0.5 grey levels, max < 2 (bilinear interpolation of uint8 within one
quantisation step)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from face_parts_data import load_face_image, yunet_faces

from livecam.face.crops import align
from livecam.runtime import torch_ops as device
from livecam.types import Frame

MEAN_TOL = 0.5
MAX_TOL = 2


def _diff(ours: torch.Tensor | np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    a = ours.numpy() if isinstance(ours, torch.Tensor) else ours
    d = np.abs(a.astype(np.float64) - ref.astype(np.float64))
    return float(d.mean()), float(d.max())


@pytest.fixture(scope="module")
def two_people(testdata: Path) -> tuple[Frame, list[np.ndarray]]:
    image = load_face_image(testdata, "obama_biden_two_people.jpg")
    faces = yunet_faces(image)
    assert len(faces) == 2
    return image, [f.kps for f in faces]


@pytest.mark.parametrize(("name", "size"), [("arcface_112", 112), ("arcface_128", 256)])
def test_warp_crops_equal_cv2(two_people: tuple[Frame, list[np.ndarray]], name, size) -> None:
    image, kps = two_people
    other = np.ascontiguousarray(image[:, ::-1])  # a second frame in the batch
    frames = device.frames_to_tensor([image, other])
    affines = np.stack([align.align_affine(k, name, size) for k in kps])
    # crop 0 and 1 from frame 0, crop 2 (face 0's affine) from the mirrored frame 1
    crops = device.warp_crops(frames, np.concatenate([affines, affines[:1]]), size, [0, 0, 1])
    assert crops.shape == (3, size, size, 3) and crops.dtype == torch.float32
    for crop, affine, src in zip(crops, [*affines, affines[0]], [image, image, other], strict=True):
        ref = align.warp_crop(src, affine, size)
        mean, worst = _diff(crop.round(), ref)
        assert mean < MEAN_TOL and worst <= MAX_TOL, (mean, worst)
    half = device.warp_crops(frames, affines, size, [0, 0], half=True)
    assert half.dtype == torch.float16
    mean, worst = _diff(half.float().round(), crops[:2].round().numpy())
    assert mean < MEAN_TOL and worst <= MAX_TOL, (mean, worst)  # float16 steps of 1/8 at 255


def test_warp_outside_the_frame_is_zero_like_cv2(testdata: Path) -> None:
    image = load_face_image(testdata, "obama_partial_face.jpg")
    # a crop hanging over the left edge: the border must be 0 as with BORDER_CONSTANT
    affine = np.array([[0.5, 0.1, 40.0], [-0.1, 0.5, 10.0]], np.float32)
    crop = device.warp_crops(device.frames_to_tensor([image]), affine[None], (200, 150))[0]
    ref = np.asarray(cv2.warpAffine(image, affine, (200, 150)))
    assert (ref == 0).all(axis=-1).sum() > 1000  # really outside
    mean, worst = _diff(crop.round(), ref)
    assert mean < MEAN_TOL and worst <= MAX_TOL, (mean, worst)
    # "border" replicates the frame's edge as BORDER_REPLICATE does
    frames = device.frames_to_tensor([image])
    edge = device.warp_crops(frames, affine[None], (200, 150), padding="border")[0]
    ref = np.asarray(cv2.warpAffine(image, affine, (200, 150), borderMode=cv2.BORDER_REPLICATE))
    mean, worst = _diff(edge.round(), ref)
    assert mean < MEAN_TOL and worst <= MAX_TOL, (mean, worst)


def test_normalise_equals_the_numpy_formula(two_people: tuple[Frame, list[np.ndarray]]) -> None:
    image, kps = two_people
    crops = np.stack(
        [align.warp_crop(image, align.align_affine(k, "arcface_112", 112), 112) for k in kps]
    )
    mean, std = [127.5, 120.0, 110.0], [127.5, 128.0, 64.0]
    ref = ((crops[..., ::-1].astype(np.float32) - mean) / std).transpose(0, 3, 1, 2)
    ours = device.normalise(torch.from_numpy(crops), mean, std, rgb=True)
    assert ours.shape == (2, 3, 112, 112) and ours.is_contiguous()
    np.testing.assert_allclose(ours.numpy(), ref, rtol=0, atol=1e-5)
    bgr = device.normalise(torch.from_numpy(crops), 0.0, 255.0, rgb=False, half=True)
    assert bgr.dtype == torch.float16
    np.testing.assert_allclose(
        bgr.float().numpy(), crops.transpose(0, 3, 1, 2) / 255.0, rtol=0, atol=1e-3
    )
