"""The neural swapper parts (inswapper and hyperswap contracts) on real faces found by the
bundled YuNet, with synthetic models built by ``livecam.benchmark.synthetic_models``: identity and
latent-colour oracles prove what the part feeds the model and how it reads the result.

No 512-d ArcFace recognizer is in the test data, so source faces carry seeded random unit
embeddings (the swapper only normalises and projects them).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from face_helpers import lite_parts
from face_parts_data import face_works, psnr, swap_scene
from onnx import numpy_helper

from livecam.benchmark import synthetic_models as sm
from livecam.errors import ConfigError, ModelError
from livecam.face.crops import align
from livecam.face.parts import Swapper
from livecam.face.paste.blenders import AffineBlender
from livecam.face.source.photo import SourceFace
from livecam.face.swap.neural import (
    HyperSwapper,
    InSwapper,
    NeuralSwapper,
    identity_blend,
    join_tiles,
    split_tiles,
)
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.types import Face, FaceWork, FrameContext


@pytest.fixture(scope="module")
def scene(testdata: Path) -> tuple[list[FrameContext], list[list[Face]]]:
    """Three real frames and the faces YuNet finds in them (2, 1 and 1)."""
    frames, faces = swap_scene(testdata)
    assert [len(f) for f in faces] == [2, 1, 1]
    return frames, faces


def _source(seed: int, path: Path = Path("source.jpg")) -> SourceFace:
    emb = np.random.default_rng(seed).standard_normal(512).astype(np.float32) * 3.0
    face = Face(
        bbox=np.zeros(4, np.float32), score=1.0, kps=np.zeros((5, 2), np.float32), embedding=emb
    )
    image = np.zeros((8, 8, 3), np.uint8)
    return SourceFace(path, "0" * 64, image, face, 0, 1)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("swappers")
    paths = {
        "identity": folder / "identity_128.onnx",
        "identity_256": folder / "identity_256.onnx",
        "colour": folder / "colour_128.onnx",
        "colour_256": folder / "colour_256.onnx",
        "narrow": folder / "inswapper_narrow.onnx",
        "narrow_fp16": folder / "inswapper_narrow_fp16.onnx",
        "hyperswap": folder / "hyperswap_like.onnx",
    }
    sm.identity_swapper(paths["identity"])
    sm.identity_swapper(paths["identity_256"], size=256, kind="hyperswap")
    sm.latent_colour_swapper(paths["colour"])
    sm.latent_colour_swapper(paths["colour_256"], size=256, kind="hyperswap")
    sm.inswapper_like(paths["narrow"], width=128)
    sm.inswapper_like(paths["narrow_fp16"], width=128, fp16=True)
    sm.hyperswap_like(paths["hyperswap"], width=64)
    return paths


def _model(path: Path) -> OnnxModel:
    return OnnxModel(path, RuntimeOptions(provider="cpu"))


def _face_psnr(frames: list[FrameContext], works: list[FaceWork]) -> list[float]:
    """PSNR of each face's box after swap and paste-back (``AffineBlender``, no mask: the
    whole crop), one face per frame at a time."""
    values = []
    for work in works:
        frame = frames[work.frame_index].image
        pasted = AffineBlender().blend(frames, [work])[work.frame_index]
        assert pasted is not frame
        x0, y0, x1, y1 = (int(v) for v in work.face.bbox)
        box = (slice(max(y0, 0), y1), slice(max(x0, 0), x1))
        values.append(psnr(pasted[box], frame[box]))
    return values


def test_swappers_are_swapper_parts(models: dict[str, Path]) -> None:
    swapper = InSwapper(_model(models["identity"]))
    assert isinstance(swapper, Swapper)
    assert swapper.needs_identity
    assert swapper.model_id == "identity_128:emap:arcface_128@128:boost1:weight0.5"
    assert swapper.providers.used == ("cpu",)


@pytest.mark.parametrize(
    ("boost", "min_psnr"), [(1, 30.0), (2, 35.0), (4, 38.0)], ids=["k1", "k2", "k4"]
)
def test_identity_oracle_round_trip_keeps_the_face(
    scene: tuple[list[FrameContext], list[list[Face]]],
    models: dict[str, Path],
    boost: int,
    min_psnr: float,
) -> None:
    """align -> swap -> paste-back with output = target leaves every face nearly as it
    was (only the two bilinear resamplings change it); measured PSNR per face."""
    frames, faces = scene
    swapper = InSwapper(_model(models["identity"]), pixel_boost=boost)
    works = swapper.swap(frames, face_works(faces), [swapper.prepare(_source(0))])
    values = _face_psnr(frames, works)
    print(f"identity round trip, pixel boost {boost}: face PSNR", [f"{v:.1f}" for v in values])
    assert min(values) > min_psnr


def test_hyperswap_identity_oracle_round_trip(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """The hyperswap contract ((x - 127.5) / 127.5 in, x * 127.5 + 127.5 out) at 256
    returns its crop exactly and pastes back like inswapper."""
    frames, faces = scene
    swapper = HyperSwapper(_model(models["identity_256"]))
    works = swapper.swap(frames, face_works(faces), [swapper.prepare(_source(0))])
    for work in works:
        assert work.crop is not None and work.crop.shape == (256, 256, 3)
        np.testing.assert_array_equal(work.output, work.crop)
    values = _face_psnr(frames, works)
    print("hyperswap identity round trip: face PSNR", [f"{v:.1f}" for v in values])
    assert min(values) > 33.0


def test_crop_follows_the_contract_template(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """Each record's affine maps the face's keypoints near the +8 px ArcFace template at
    the boosted size, and its crop is the frame warped by that affine."""
    frames, faces = scene
    swapper = InSwapper(_model(models["identity"]), pixel_boost=2)
    works = swapper.swap(frames, face_works(faces), [swapper.prepare(_source(0))])
    for work in works:
        assert work.affine is not None and work.crop is not None
        mapped = align.transform_points(work.face.kps, work.affine)
        assert np.abs(mapped - align.ARCFACE_128 * 2).max() < 12  # least squares, real face
        expected = cv2.warpAffine(frames[work.frame_index].image, work.affine, (256, 256))
        np.testing.assert_array_equal(work.crop, expected)
        assert work.mask is None


@pytest.mark.parametrize("boost", [2, 3, 4])
def test_pixel_boost_reassembles_exactly(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path], boost: int
) -> None:
    frames, faces = scene
    swapper = InSwapper(_model(models["identity"]), pixel_boost=boost)
    works = swapper.swap(frames, face_works(faces), [swapper.prepare(_source(0))])
    for work in works:
        assert work.crop is not None and work.crop.shape == (128 * boost, 128 * boost, 3)
        np.testing.assert_array_equal(work.output, work.crop)


def test_pixel_boost_tiles_are_facefusions_sub_images(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """With a real network, the boosted output equals FaceFusion's recipe done by hand:
    every k-th pixel as k^2 sub-images, each swapped alone, interleaved back."""
    frames, faces = scene
    model = _model(models["narrow"])
    swapper = InSwapper(model, pixel_boost=2)
    latent = swapper.prepare(_source(3))
    work = swapper.swap(frames, face_works(faces)[:1], [latent])[0]
    assert work.crop is not None and work.output is not None
    s, k = 128, 2
    subs = work.crop.reshape(s, k, s, k, 3).transpose(1, 3, 0, 2, 4).reshape(k * k, s, s, 3)
    np.testing.assert_array_equal(split_tiles(work.crop[None], k), subs)
    swapped = []
    for sub in subs:
        x = (sub[:, :, ::-1].astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
        y = model.run({"target": x, "source": latent[None]})[0][0].transpose(1, 2, 0)
        swapped.append(np.rint(np.clip(y * 255.0, 0, 255)).astype(np.uint8)[:, :, ::-1])
    by_hand = np.stack(swapped).reshape(k, k, s, s, 3).transpose(2, 0, 3, 1, 4)
    diff = np.abs(work.output.astype(int) - by_hand.reshape(s * k, s * k, 3).astype(int))
    assert diff.max() <= 1  # batched vs single runs: float rounding at most
    np.testing.assert_array_equal(join_tiles(split_tiles(work.crop[None], k), k)[0], work.crop)


def test_batched_output_equals_per_face_output(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """All faces of three frames in one call give the same crops as one face at a time
    (at most 1 level apart: float summation order in a batched convolution)."""
    frames, faces = scene
    swapper = InSwapper(_model(models["narrow"]))
    sources = [swapper.prepare(_source(1)), swapper.prepare(_source(2))]
    together = swapper.swap(frames, face_works(faces, [0, 1, 0, 1]), sources)
    for work, batched in zip(face_works(faces, [0, 1, 0, 1]), together, strict=True):
        alone = swapper.swap(frames, [work], sources)[0]
        assert alone.output is not None and batched.output is not None
        np.testing.assert_array_equal(alone.affine, batched.affine)
        assert np.abs(alone.output.astype(int) - batched.output.astype(int)).max() <= 1


def test_each_face_gets_its_own_source(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """Several sources in one batch: with the latent-to-colour oracle every face comes out
    in the colour of the latent of ``sources[work.source_index]``."""
    frames, faces = scene
    swapper = InSwapper(_model(models["colour"]))
    sources = [swapper.prepare(_source(s)) for s in (10, 11, 12)]
    order = [2, 0, 1, 0]
    works = swapper.swap(frames, face_works(faces, order), sources)
    expected = sm.latent_colour(np.stack(sources)) * 255.0  # RGB per source
    for work, index in zip(works, order, strict=True):
        assert work.output is not None
        bgr = work.output.reshape(-1, 3)
        assert (bgr == bgr[0]).all()  # flat
        np.testing.assert_allclose(bgr[0][::-1], expected[index], atol=0.51)
    gaps = np.abs(expected[:, None] - expected[None]).max(axis=2)[np.triu_indices(3, 1)]
    assert gaps.min() > 5  # the three sources are told apart


def test_hyperswap_feeds_the_normalised_embedding(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    frames, faces = scene
    swapper = HyperSwapper(_model(models["colour_256"]))
    source = _source(20)
    latent = swapper.prepare(source)
    emb = np.asarray(source.face.embedding, np.float64)
    np.testing.assert_allclose(latent, emb / np.linalg.norm(emb), atol=1e-6)
    works = swapper.swap(frames, face_works(faces), [latent])
    expected = sm.latent_colour(latent[None])[0] * 255.0
    for work in works:
        assert work.output is not None and work.output.shape == (256, 256, 3)
        np.testing.assert_allclose(work.output[0, 0][::-1], expected, atol=0.51)


def test_latent_is_the_embedding_through_the_last_initializer(models: dict[str, Path]) -> None:
    """inswapper's latent by hand: e = emb/|emb|, l = e @ emap, l/|l| (insightface), with
    emap the file's LAST initializer."""
    model = _model(models["narrow"])
    last = onnx.load(str(models["narrow"])).graph.initializer[-1]
    emap = numpy_helper.to_array(last).astype(np.float64)
    source = _source(30)
    emb = np.asarray(source.face.embedding, np.float64)
    e = emb / np.linalg.norm(emb)
    latent = e @ emap
    latent /= np.linalg.norm(latent)
    np.testing.assert_allclose(InSwapper(model).prepare(source), latent, atol=1e-6)
    # FaceFusion's latent (no second normalisation) points the same way, but is longer
    assert abs(np.linalg.norm(e @ emap) - 1.0) > 0.05


def test_identity_weight_blends_the_target_embedding(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """weight w: source * (1 - w') + target_norm * w', w' = interp(w, [0, 1], [.35, -.35]);
    0.5 leaves the source as is and needs no target embedding."""
    frames, faces = scene
    assert identity_blend(0.5) == 0.0
    assert identity_blend(0.0) == pytest.approx(0.35)
    assert identity_blend(1.0) == pytest.approx(-0.35)
    rng = np.random.default_rng(40)
    targets = [rng.standard_normal(512).astype(np.float32) * 2 for _ in range(4)]
    works = face_works(faces)
    for work, emb in zip(works, targets, strict=True):
        work.face = dataclasses.replace(work.face, embedding=emb)
    swapper = InSwapper(_model(models["colour"]), identity_weight=0.2)
    latent = swapper.prepare(_source(41))
    swapped = swapper.swap(frames, works, [latent])
    share = float(np.interp(0.2, [0, 1], [0.35, -0.35]))
    for work, emb in zip(swapped, targets, strict=True):
        blended = latent * (1 - share) + emb / np.linalg.norm(emb) * share
        expected = sm.latent_colour(blended[None])[0] * 255.0
        assert work.output is not None
        np.testing.assert_allclose(work.output[0, 0][::-1], expected, atol=0.51)

    without = InSwapper(_model(models["colour"]), identity_weight=0.2)
    with pytest.raises(ModelError, match="target face's 512-d ArcFace embedding"):
        without.swap(frames, face_works(faces), [latent])


def test_fp16_stays_close_to_fp32(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """The fp16 export of the narrow network (float16 weights, activations and I/O) on
    real faces: mean difference under 0.25 levels, none over 3 levels (measured: 0.04, 1)."""
    frames, faces = scene
    full = InSwapper(_model(models["narrow"]))
    half = InSwapper(_model(models["narrow_fp16"]))
    latent = full.prepare(_source(50))
    np.testing.assert_allclose(half.prepare(_source(50)), latent, atol=1e-3)  # fp16 emap
    a = full.swap(frames, face_works(faces), [latent])
    b = half.swap(frames, face_works(faces), [latent])
    diffs = []
    for x, y in zip(a, b, strict=True):
        assert x.output is not None and y.output is not None
        diffs.append(np.abs(x.output.astype(int) - y.output.astype(int)).ravel())
    diff = np.concatenate(diffs)
    print(f"fp16 vs fp32: mean {diff.mean():.3f}, max {diff.max()} levels")
    assert diff.mean() < 0.25 and diff.max() <= 3


def test_unswappable_faces_keep_output_none(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    frames, faces = scene
    good = faces[1][0]
    outside = dataclasses.replace(good, kps=good.kps + np.float32(5000))
    no_kps = dataclasses.replace(good, kps=np.zeros((0, 2), np.float32))
    nan_kps = dataclasses.replace(good, kps=np.full((5, 2), np.nan, np.float32))
    works = [FaceWork(1, 1, f) for f in (outside, good, no_kps, nan_kps)]
    swapper = InSwapper(_model(models["identity"]))
    done = swapper.swap(frames, works, [swapper.prepare(_source(0))])
    assert [w.output is not None for w in done] == [False, True, False, False]
    assert [w.affine is not None for w in done] == [False, True, False, False]
    alone = swapper.swap(frames, [FaceWork(1, 1, outside)], [swapper.prepare(_source(0))])
    assert alone[0].output is None


def test_bad_settings_and_models_are_one_line_errors(models: dict[str, Path]) -> None:
    with pytest.raises(ModelError, match="takes 128x128 crops") as e:
        HyperSwapper(_model(models["identity"]))
    assert "input_size" in e.value.hint
    with pytest.raises(ModelError, match="not the 512x512 emap"):
        InSwapper(_model(models["hyperswap"]), input_size=256)
    with pytest.raises(ConfigError, match="pixel boost"):
        InSwapper(_model(models["identity"]), pixel_boost=0)
    with pytest.raises(ConfigError, match="identity weight"):
        InSwapper(_model(models["identity"]), identity_weight=1.5)
    with pytest.raises(ConfigError, match="latent"):
        NeuralSwapper(_model(models["identity"]), input_size=128)
    no_embedding = dataclasses.replace(
        _source(0), face=dataclasses.replace(_source(0).face, embedding=None)
    )
    with pytest.raises(ModelError, match="needs a 512-d ArcFace embedding"):
        InSwapper(_model(models["identity"])).prepare(no_embedding)


def test_hyperswap_like_network_runs_through_the_part(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """A hyperswap-shaped network with two outputs: the part reads output 0 and decodes
    [-1, 1] to a full-range image; different sources give different faces."""
    frames, faces = scene
    swapper = HyperSwapper(_model(models["hyperswap"]))
    a = swapper.swap(frames, face_works(faces), [swapper.prepare(_source(60))])
    b = swapper.swap(frames, face_works(faces), [swapper.prepare(_source(61))])
    for x, y in zip(a, b, strict=True):
        assert x.output is not None and y.output is not None
        assert x.output.shape == (256, 256, 3) and x.output.std() > 10
        assert np.abs(x.output.astype(int) - y.output.astype(int)).mean() > 2


def test_identity_weight_refuses_a_recognizer_of_another_size(models: dict[str, Path]) -> None:
    """The target embedding is blended into a 512-d vector: the lite preset's 128-d
    MobileFaceNet cannot serve it."""
    mobilefacenet = lite_parts().recognizer
    with pytest.raises(ConfigError, match="gives 128-d ones"):
        InSwapper(_model(models["colour"]), identity_weight=0.2, recognizer=mobilefacenet)
