"""The torch compute path of the swapper and enhancer (``pipeline.device_path``) against
the NumPy/OpenCV path, on CPU tensors, real faces (YuNet keypoints) and the synthetic
swapper models. Tolerance: the crops differ from ``cv2.warpAffine`` by its 1/32 px and
1/1024 weight quantisation only; stated mean < 0.5 grey levels, max <= 2 for crops,
identity-oracle and narrow-network outputs and enhanced faces (measured, printed: crops
mean < 0.001, max 1; narrow network outputs mean <= 0.01, max 1); the latent-colour oracle
ignores the crop and agrees exactly."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from face_parts_data import codeformer_like, face_works, identity_enhancer, swap_scene

from livecam.benchmark import synthetic_models as sm
from livecam.errors import ConfigError
from livecam.face.enhance import FaceEnhancer
from livecam.face.swap.neural import InSwapper
from livecam.runtime import torch_path as device_path
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.types import Face, FaceWork, FrameContext

MEAN_TOL = 0.5
MAX_TOL = 2


@pytest.fixture(scope="module")
def scene(testdata: Path) -> tuple[list[FrameContext], list[list[Face]]]:
    """Three real frames of different sizes and YuNet's faces in them (2, 1 and 1)."""
    frames, faces = swap_scene(testdata)
    assert [len(f) for f in faces] == [2, 1, 1]
    return frames, faces


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("device_path")
    paths = {
        "identity": folder / "identity_128.onnx",
        "colour": folder / "colour_128.onnx",
        "narrow": folder / "inswapper_narrow.onnx",
        "enhancer": folder / "identity_enhancer.onnx",
        "enhancer_b1": folder / "identity_enhancer_b1.onnx",
        "codeformer": folder / "codeformer_like.onnx",
    }
    sm.identity_swapper(paths["identity"])
    sm.latent_colour_swapper(paths["colour"])
    sm.inswapper_like(paths["narrow"], width=128)
    identity_enhancer(paths["enhancer"])
    identity_enhancer(paths["enhancer_b1"], batch=1)  # fixed batch: run in chunks of 1
    codeformer_like(paths["codeformer"])
    return paths


def _model(path: Path) -> OnnxModel:
    return OnnxModel(path, RuntimeOptions(provider="cpu"))


def _latents(swapper: InSwapper, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [swapper.latent_of(rng.standard_normal(512).astype(np.float32)) for _ in range(n)]


def _diff(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(d.mean()), float(d.max())


def _swap_both(
    path: Path, scene: tuple[list[FrameContext], list[list[Face]]], boost: int
) -> tuple[list[FaceWork], list[FaceWork]]:
    """The same 4 faces (3 frames, 2 sources) swapped by the NumPy and the torch path."""
    frames, faces = scene
    model = _model(path)
    ref = InSwapper(model, pixel_boost=boost, compute="numpy")
    dev = InSwapper(model, pixel_boost=boost, compute="torch")
    assert (ref.compute, dev.compute) == ("numpy", "torch")
    latents = _latents(ref, 2)
    sources = [0, 1, 1, 0]
    return (
        ref.swap(frames, face_works(faces, sources), latents),
        dev.swap(frames, face_works(faces, sources), latents),
    )


@pytest.mark.parametrize("boost", [1, 2], ids=["k1", "k2"])
def test_identity_oracle_torch_path_equals_numpy_path(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path], boost: int
) -> None:
    """Same affines, crops and outputs (within the warp's rounding) for 4 faces of 3
    frames of different sizes, with and without pixel boost."""
    ref, dev = _swap_both(models["identity"], scene, boost)
    size = 128 * boost
    for a, b in zip(ref, dev, strict=True):
        assert a.affine is not None and b.affine is not None
        np.testing.assert_array_equal(a.affine, b.affine)
        assert b.crop is not None and b.output is not None and a.crop is not None
        assert b.crop.dtype == np.uint8 and b.crop.shape == (size, size, 3)
        assert b.output.dtype == np.uint8 and b.output.shape == (size, size, 3)
        np.testing.assert_array_equal(b.output, b.crop)  # the oracle: output = its crop
        mean, worst = _diff(b.crop, a.crop)
        print(f"identity k={boost}: crop diff mean {mean:.4f} max {worst:.0f}")
        assert mean < MEAN_TOL and worst <= MAX_TOL, (mean, worst)


def test_latent_colour_oracle_gets_each_faces_own_source(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """Several sources in one batch: the torch path feeds face i the latent of its
    ``source_index`` (the oracle's flat colour proves which), exactly as the NumPy path."""
    ref, dev = _swap_both(models["colour"], scene, 2)
    latents = _latents(InSwapper(_model(models["colour"])), 2)
    for a, b in zip(ref, dev, strict=True):
        assert b.output is not None
        np.testing.assert_array_equal(b.output, a.output)
        colour = sm.latent_colour(latents[b.source_index])[0][::-1] * 255.0  # BGR
        np.testing.assert_allclose(b.output.reshape(-1, 3).mean(0), colour, atol=0.51)
    first, second = dev[0].output, dev[1].output
    assert first is not None and second is not None
    assert not np.array_equal(first, second)  # sources 0 and 1 differ


@pytest.mark.parametrize("boost", [1, 2], ids=["k1", "k2"])
def test_network_torch_path_equals_numpy_path(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path], boost: int
) -> None:
    """The narrow inswapper-architecture network: the torch path's outputs agree with the
    NumPy path's to the stated tolerance."""
    ref, dev = _swap_both(models["narrow"], scene, boost)
    diffs = [_diff(b.output, a.output) for a, b in zip(ref, dev, strict=True)]  # type: ignore[arg-type]
    print(f"narrow k={boost}: output diff", [f"{m:.4f}/{w:.0f}" for m, w in diffs])
    for mean, worst in diffs:
        assert mean < MEAN_TOL and worst <= MAX_TOL, (mean, worst)


@pytest.mark.parametrize("name", ["enhancer", "enhancer_b1", "codeformer"])
def test_enhancer_torch_path_equals_numpy_path(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path], name: str
) -> None:
    """The enhancer's crops and restored faces on the torch path (dynamic batch, a fixed
    batch of 1 run in chunks, CodeFormer's float64 weight input) match the NumPy path's."""
    frames, faces = scene
    works = face_works(faces, [0, 0, 0, 0])
    model = _model(models[name])
    ref = FaceEnhancer(model, compute="numpy").enhance(frames, works)
    dev = FaceEnhancer(model, compute="torch").enhance(frames, works)
    assert len(dev) == 4
    for a, b in zip(ref, dev, strict=True):
        assert b.crop is not None and b.output is not None and b.mask is not None
        assert a.crop is not None and a.output is not None
        assert b.output.shape == (512, 512, 3) and b.output.dtype == np.uint8
        np.testing.assert_array_equal(b.mask, a.mask)
        for ours, theirs in ((b.crop, a.crop), (b.output, a.output)):
            mean, worst = _diff(ours, theirs)
            assert mean < MEAN_TOL and worst <= MAX_TOL, (name, mean, worst)


def test_enhancer_every_n_reuses_crops_on_the_torch_path(
    scene: tuple[list[FrameContext], list[list[Face]]], models: dict[str, Path]
) -> None:
    """With ``every`` 2 the second call runs the model on no face and re-pastes the last
    enhanced crops, as on the NumPy path."""
    frames, faces = scene
    enhancer = FaceEnhancer(_model(models["enhancer"]), every=2, compute="torch")
    tracked = [
        [dataclasses.replace(f, track_id=10 * i + j) for j, f in enumerate(fs)]
        for i, fs in enumerate(faces)
    ]
    works = face_works(tracked, [0, 0, 0, 0])
    first = enhancer.enhance(frames, works)
    second = enhancer.enhance(frames, works)
    for a, b in zip(first, second, strict=True):
        assert b.output is a.output  # pasted again, not recomputed


def test_auto_picks_numpy_on_a_cpu_session(models: dict[str, Path]) -> None:
    model = _model(models["identity"])
    assert model.device == "cpu"
    assert InSwapper(model).compute == "numpy"
    assert FaceEnhancer(_model(models["enhancer"])).compute == "numpy"


def test_compute_decision() -> None:
    """auto: torch only with torch (CUDA build) installed and a CUDA session; torch
    without PyTorch, or without its CUDA build on a CUDA session, and an unknown path are
    one-line errors with their fix."""
    resolve = device_path.resolve_compute
    assert resolve("auto", "cuda", has_torch=True, torch_cuda=True) == "torch"
    assert resolve("auto", "cuda", has_torch=True, torch_cuda=False) == "numpy"
    assert resolve("auto", "cuda", has_torch=False) == "numpy"
    assert resolve("auto", "cpu", has_torch=True) == "numpy"
    assert resolve("torch", "cpu", has_torch=True) == "torch"
    assert resolve("numpy", "cuda", has_torch=True, torch_cuda=True) == "numpy"
    assert resolve("numpy", "cpu", has_torch=False) == "numpy"
    with pytest.raises(ConfigError, match="needs PyTorch, which is not installed") as err:
        resolve("torch", "cpu", has_torch=False)
    assert "install the CUDA build of torch" in err.value.hint
    with pytest.raises(ConfigError, match="on a cuda session needs PyTorch with CUDA"):
        resolve("torch", "cuda", has_torch=True, torch_cuda=False)
    with pytest.raises(ConfigError, match="unknown compute path 'gpu'"):
        resolve("gpu", "cuda", has_torch=True)
