"""FaceEnhancer on real faces with tiny ONNX models in place of GFPGAN / CodeFormer / GPEN:
an identity enhancer leaves the frame nearly unchanged, all faces go in one call and
batched equals looped, CodeFormer's fidelity input is fed, GPEN-256's size, every Nth
frame per tracked face, blend 0 changes nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from face_parts_data import (
    CountingModel,
    codeformer_like,
    identity_enhancer,
    load_face_image,
    psnr,
    yunet_faces,
)

from livecam.errors import ModelError
from livecam.face.crops import align
from livecam.face.enhance import FaceEnhancer
from livecam.face.masks import box_mask
from livecam.face.parts import Enhancer
from livecam.face.paste.blenders import AffineBlender
from livecam.runtime.onnx_model import RuntimeOptions
from livecam.types import Face, FaceWork, Frame, FrameContext

CPU = RuntimeOptions(provider="cpu")


@pytest.fixture(scope="module")
def identity512(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return identity_enhancer(tmp_path_factory.mktemp("enh") / "identity512.onnx")


@pytest.fixture(scope="module")
def two_people(testdata: Path) -> tuple[Frame, list[Face]]:
    image = load_face_image(testdata, "obama_biden_two_people.jpg", max_side=1126)
    faces = yunet_faces(image)
    assert len(faces) == 2
    return image, faces


def swapped(faces: list[Face], frame_index: int = 0, track: bool = False) -> list[FaceWork]:
    """Records as the swap step leaves them (the enhancer only reads their faces)."""
    return [
        FaceWork(frame_index, frame_index, dataclasses.replace(f, track_id=i if track else -1))
        for i, f in enumerate(faces)
    ]


def test_identity_enhancer_leaves_the_frame_nearly_unchanged(
    identity512: Path, two_people: tuple[Frame, list[Face]]
) -> None:
    image, faces = two_people
    enhancer: Enhancer = FaceEnhancer(CountingModel(identity512, options=CPU), blend=1.0)
    frames = [FrameContext(image)]
    works = enhancer.enhance(frames, swapped(faces))
    assert [w.face.kps.tolist() for w in works] == [f.kps.tolist() for f in faces]
    for work in works:
        assert work.output is not None and work.crop is not None and work.mask is not None
        assert work.output.shape == (512, 512, 3) and work.mask.shape == (512, 512)
        # the identity model gives back the crop, exactly: (x/127.5 - 1 + 1)/2*255 rounded
        assert np.array_equal(work.output, work.crop)
        expected = align.align_affine(work.face.kps, "ffhq_512", 512)
        assert work.affine is not None and np.allclose(work.affine, expected)
    out = AffineBlender().blend(frames, works)[0]
    for face in faces:
        x1, y1, x2, y2 = face.bbox.astype(int)
        assert psnr(out[y1:y2, x1:x2], image[y1:y2, x1:x2]) > 40  # measured 44.4 and 44.9 dB


def test_all_faces_in_one_call_and_batched_equals_looped(
    identity512: Path, tmp_path: Path, two_people: tuple[Frame, list[Face]]
) -> None:
    image, faces = two_people
    # a model that is not the identity, so the comparison means something
    model = CountingModel(codeformer_like(tmp_path / "cf.onnx"), options=CPU)
    enhancer = FaceEnhancer(model, fidelity=0.8)
    flipped = np.ascontiguousarray(image[:, ::-1])
    frames = [FrameContext(image), FrameContext(flipped)]
    faces2 = yunet_faces(flipped)
    records = swapped(faces) + swapped(faces2, frame_index=1)
    batched = enhancer.enhance(frames, records)
    assert model.batches == [4]  # one session run for 4 faces of 2 frames
    looped = [enhancer.enhance(frames, [r])[0] for r in records]
    assert model.batches == [4, 1, 1, 1, 1]
    for a, b in zip(batched, looped, strict=True):
        assert a.frame_index == b.frame_index and a.output is not None and b.output is not None
        assert np.array_equal(a.output, b.output)


@pytest.mark.parametrize(("image_name", "weight_name"), [("input", "weight"), ("x", "w")])
def test_codeformer_fidelity_weight_is_fed(
    tmp_path: Path, two_people: tuple[Frame, list[Face]], image_name: str, weight_name: str
) -> None:
    image, faces = two_people
    path = codeformer_like(tmp_path / "cf.onnx", image_name, weight_name)
    frames = [FrameContext(image)]
    half = FaceEnhancer(CountingModel(path, options=CPU), fidelity=0.5)
    full = FaceEnhancer(CountingModel(path, options=CPU), fidelity=1.0)
    assert "w0.5" in half.model_id and "w1" in full.model_id
    a = half.enhance(frames, swapped(faces))[0]
    b = full.enhance(frames, swapped(faces))[0]
    assert a.output is not None and a.crop is not None and b.output is not None
    assert np.array_equal(a.output, a.crop)  # 2 * 0.5 = the identity
    # 2 * 1.0 doubles the [-1, 1] pixel: x -> clip(2x - 127.5) in 0..255
    rgb = a.crop.astype(np.float32) / 127.5 - 1
    ref = np.round((np.clip(2 * rgb, -1, 1) + 1) / 2 * 255).astype(np.uint8)
    assert np.abs(b.output.astype(int) - ref.astype(int)).max() <= 1


def test_gpen_256_with_a_fixed_batch(tmp_path: Path, two_people: tuple[Frame, list[Face]]) -> None:
    image, faces = two_people
    path = identity_enhancer(tmp_path / "gpen256.onnx", size=256, batch=1)
    with pytest.raises(ModelError, match="input_size to 256"):
        FaceEnhancer(CountingModel(path, options=CPU))
    model = CountingModel(path, options=CPU)
    enhancer = FaceEnhancer(model, input_size=256)
    works = enhancer.enhance([FrameContext(image)], swapped(faces))
    assert model.batches == [1, 1]  # a fixed batch of 1: run_batch feeds it in chunks
    for work in works:
        assert work.output is not None and work.output.shape == (256, 256, 3)
        expected = align.umeyama(work.face.kps, align.FFHQ_512 / 2)
        assert work.affine is not None and np.allclose(work.affine, expected, atol=1e-4)


def test_every_third_frame_runs_the_model_and_repastes_between(
    identity512: Path, testdata: Path
) -> None:
    frames_img = [
        load_face_image(testdata, "obama_official_portrait_2012.jpg"),
        load_face_image(testdata, "biden_official_portrait.jpg"),
    ]
    model = CountingModel(identity512, options=CPU)
    enhancer = FaceEnhancer(model, every=3, blend=1.0)
    tracked = dataclasses.replace(yunet_faces(frames_img[0])[0], track_id=7)
    untracked = yunet_faces(frames_img[1])[0]
    outputs = []
    for n in range(6):
        frames = [FrameContext(frames_img[0]), FrameContext(frames_img[1])]
        works = [FaceWork(0, n, tracked), FaceWork(1, n, untracked)]
        out = enhancer.enhance(frames, works)
        assert len(out) == 2 and all(w.output is not None for w in out)
        outputs.append(out[0].output)
    # the tracked face runs on frames 0 and 3 (with the untracked one), the untracked alone
    # on the other four
    assert model.batches == [2, 1, 1, 2, 1, 1]
    assert outputs[1] is outputs[0] and outputs[2] is outputs[0] and outputs[4] is outputs[3]


def test_blend_scales_the_mask_and_zero_changes_nothing(
    identity512: Path, two_people: tuple[Frame, list[Face]]
) -> None:
    image, faces = two_people
    frames = [FrameContext(image)]
    model = CountingModel(identity512, options=CPU)
    works = FaceEnhancer(model, blend=0.8).enhance(frames, swapped(faces))
    assert works[0].mask is not None
    assert np.allclose(works[0].mask, 0.8 * box_mask((512, 512), 0.3, (0, 0, 0, 0)))
    none = FaceEnhancer(model, blend=0.0).enhance(frames, swapped(faces))
    assert none == [] and AffineBlender().blend(frames, none)[0] is image
    assert model.batches == [1 * 2]  # blend 0 does not run the model


def test_bad_settings_are_refused(identity512: Path, tmp_path: Path) -> None:
    model = CountingModel(identity512, options=CPU)
    for kwargs, message in [
        ({"blend": 1.5}, "blend must be within 0..1"),
        ({"every": 0}, "every must be a whole number"),
        ({"fidelity": -1}, "fidelity must be within 0..1"),
        ({"template": "ffhq_1024"}, "template must be one of"),
    ]:
        with pytest.raises(ValueError, match=message):
            FaceEnhancer(model, **kwargs)  # type: ignore[arg-type]


def test_every_within_one_batch_of_frames(identity512: Path, testdata: Path) -> None:
    """Three frames of one tracked face in one call with every=3: one face is enhanced and
    the other two frames get its crop, placed at their own face."""
    image = load_face_image(testdata, "obama_official_portrait_2012.jpg")
    shifted = np.ascontiguousarray(np.roll(image, 12, axis=1))
    model = CountingModel(identity512, options=CPU)
    enhancer = FaceEnhancer(model, every=3)
    face = dataclasses.replace(yunet_faces(image)[0], track_id=3)
    moved = dataclasses.replace(yunet_faces(shifted)[0], track_id=3)
    frames = [FrameContext(image), FrameContext(shifted), FrameContext(image)]
    works = [FaceWork(2, 2, face), FaceWork(1, 1, moved), FaceWork(0, 0, face)]
    out = enhancer.enhance(frames, works)
    assert model.batches == [1]
    assert [w.frame_index for w in out] == [2, 1, 0]  # the caller's order
    assert out[0].output is out[1].output is out[2].output
    assert out[1].affine is not None and out[2].affine is not None
    assert not np.allclose(out[1].affine, out[2].affine)
    for work in out:  # each affine puts its own frame's face on the template
        assert work.affine is not None
        placed = align.transform_points(work.face.kps, work.affine)
        assert np.abs(placed - align.FFHQ_512).max() < 20
