"""The ONNX presets end to end: the lite preset on the real small models, the standard
pipeline with the user's own model files (real SCRFD, a 512-d recognizer made from the real
MobileFaceNet, synthetic swappers), several sources mapped to target people, and a CUDA
request on this CPU-only machine reported as a fallback with its cause."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from face_parts_data import read_color

from livecam.benchmark.synthetic_models import (
    arcface_like,
    identity_swapper,
    latent_colour,
    latent_colour_swapper,
)
from livecam.config.schema import SwapConfig
from livecam.face.build import build_parts
from livecam.face.identity.metrics import embedding_distance, psnr
from livecam.face.source.photo import SourceFaceCache
from livecam.face.swap.neural import InSwapper
from livecam.face.swap_stage import build_swap_stage
from livecam.models.presets import PRESETS
from livecam.models.store import ModelStore
from livecam.types import FaceWork, FrameContext, FramePacket
from livecam.userfiles.images import load_image_bgr


@pytest.fixture(scope="module")
def synthetic(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Model files a user could bring: a 512-d recognizer with ArcFace's interface (real
    MobileFaceNet identities) and two oracle swappers with inswapper's interface."""
    folder = tmp_path_factory.mktemp("synthetic-models")
    files = {
        "recognizer": folder / "arcface_like.onnx",
        "identity": folder / "identity_swapper.onnx",
        "colour": folder / "colour_swapper.onnx",
    }
    arcface_like(files["recognizer"], testdata / "models" / "mobilefacenet.onnx")
    identity_swapper(files["identity"], 128, "inswapper")
    latent_colour_swapper(files["colour"], 128, "inswapper")
    return files


def standard_config(testdata: Path, synthetic: dict[str, Path], swapper: str, **kw) -> SwapConfig:
    return SwapConfig.of(
        preset="standard",
        provider="cpu",
        detector_model=str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
        recognizer_model=str(synthetic["recognizer"]),
        swapper_model=str(synthetic[swapper]),
        **kw,
    )


def face_box(frame: np.ndarray, kps: np.ndarray, grow: float = 0.6) -> tuple[slice, slice]:
    """The region around a face's 5 keypoints (``grow`` x their spread on each side)."""
    lo, hi = kps.min(axis=0), kps.max(axis=0)
    pad = grow * (hi - lo)
    (x1, y1), (x2, y2) = np.maximum(lo - pad, 0).astype(int), (hi + pad).astype(int)
    return slice(y1, min(y2, frame.shape[0])), slice(x1, min(x2, frame.shape[1]))


def test_lite_preset_moves_the_identity_toward_the_source(testdata: Path, tmp_path: Path) -> None:
    """Real YuNet, slim-160 68-point landmarks and MobileFaceNet from the testdata folder,
    the classic swapper; identity measured with the preset's own MobileFaceNet."""
    store = ModelStore(models_dir=testdata / "models", data_dir=tmp_path / "data")
    faces = testdata / "faces"
    cfg = SwapConfig.of(
        preset="lite", provider="cpu", face=str(faces / "biden_official_portrait.jpg")
    )
    cache = SourceFaceCache(tmp_path / "cache")
    stage = build_swap_stage(cfg, cache, store)
    try:
        assert stage.preset == "lite" and stage.providers.used == ("cpu",)
        stage.warmup(640, 480)
        # a webcam-like frame: Obama's portrait scaled so his face is ~30 % of the width
        portrait = load_image_bgr(faces / "obama_official_portrait_2012.jpg")
        frame = np.full((480, 640, 3), 60, np.uint8)
        small = cv2.resize(portrait, (320, 400), interpolation=cv2.INTER_AREA)
        frame[40:440, 160:480] = small
        packets = [FramePacket(frame.copy(), seq=i, t_capture_ns=i * 33_000_000) for i in range(4)]
        for packet in packets:
            stage.process([packet])
        out = packets[-1].frame
        assert packets[-1].faces_swapped == 1
        recognizer = stage.parts.recognizer

        def embedding(image: np.ndarray) -> np.ndarray:
            found = stage.parts.photo_detector.detect([FrameContext(image)])[0]
            work = recognizer.embed([FrameContext(image)], [FaceWork(0, 0, found[0])])[0]
            assert work.face.embedding is not None
            return work.face.embedding

        source_emb = embedding(load_image_bgr(faces / "biden_official_portrait.jpg"))
        before = embedding_distance(source_emb, embedding(frame))
        after = embedding_distance(source_emb, embedding(out))
        assert after < before - 0.1, (before, after)
    finally:
        stage.close()


def test_standard_pipeline_with_own_model_files_from_the_command_line(
    testdata: Path, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    """`livecam run --preset standard` with every model given by path: the identity oracle
    swapper leaves the face region nearly unchanged after align -> swap -> paste-back, and
    a CUDA request on this machine is reported as a fallback with its cause."""
    faces = testdata / "faces"
    target = faces / "biden_official_portrait.jpg"
    out, stats = tmp_path / "out.png", tmp_path / "stats.json"
    # the pixel comparison below needs the invisible mark off (it touches the whole frame)
    config = tmp_path / "no-mark.toml"
    config.write_text("[output]\nwatermark = false\n")
    cmd = [
        sys.executable, "-m", "livecam", "run", "--preset", "standard", "--config", str(config),
        "--face", str(faces / "obama_official_portrait_2012.jpg"),
        "--source", str(target), "--sink", str(out), "--frames", "3",
        "--detector-model", str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
        "--recognizer-model", str(synthetic["recognizer"]),
        "--swapper-model", str(synthetic["identity"]),
        "--provider", "cuda", "--stats-json", str(stats), "-q",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(stats.read_text())
    swap = summary["providers"]["swap"]
    assert (swap["requested"], swap["used"]) == ("cuda", "cpu")
    assert ".so" in swap["reason"]  # the CUDA library that failed to load
    assert summary["faces_swapped"] >= 1
    # the user's swapper file is not in the manifest: used after the contract check, with
    # a warning that names its sha256
    assert "identity_swapper.onnx is not a file LiveCam knows (sha256 " in proc.stderr
    original, swapped = load_image_bgr(target), read_color(out)
    assert swapped.shape == original.shape and not np.array_equal(swapped, original)
    gray = cv2.cvtColor(original, cv2.COLOR_BGR2GRAY)
    faces_found = cv2.FaceDetectorYN.create(
        str(testdata / "models" / "face_detection_yunet_2023mar.onnx"),
        "",
        (gray.shape[1], gray.shape[0]),
        0.6,
    ).detect(original)[1]
    kps = faces_found[0][4:14].reshape(5, 2)
    rows, cols = face_box(original, kps)
    assert psnr(swapped[rows, cols], original[rows, cols]) > 30
    # nothing is pasted outside the aligned crop (the 128 crop spans ~3.7x the eye distance)
    changed = np.any(swapped != original, axis=2)
    outside = np.ones_like(changed)
    outside[face_box(original, kps, grow=2.0)] = False
    assert changed[rows, cols].any() and not changed[outside].any()


def test_mapped_sources_each_go_onto_their_own_target_person(
    testdata: Path, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    """--map SOURCE=TARGET for both people of the two-people photo through the real stage:
    the latent-to-colour oracle paints each face with the colour of its own source."""
    faces = testdata / "faces"
    pairs = [
        f"{faces / 'astronaut_eileen_collins.png'}={faces / 'obama_official_portrait_2012.jpg'}",
        f"{faces / 'grace_hopper_navy_portrait.jpg'}={faces / 'biden_official_portrait.jpg'}",
    ]
    cfg = standard_config(testdata, synthetic, "colour", map=tuple(pairs), masks=("box",))
    store = ModelStore(data_dir=tmp_path / "data")
    stage = build_swap_stage(cfg, SourceFaceCache(tmp_path / "cache"), store)
    try:
        swapper = stage.parts.swapper
        assert isinstance(swapper, InSwapper)
        colours = [latent_colour(swapper.prepare(s)[None])[0] * 255 for s in stage.sources]
        assert np.abs(colours[0] - colours[1]).max() > 30  # two distinguishable colours
        photo = load_image_bgr(faces / "obama_biden_two_people.jpg")
        packet = FramePacket(photo.copy(), seq=0, t_capture_ns=0)
        stage.process([packet])
        assert packet.faces_swapped == 2
        # Obama is on the left of this photo, Biden on the right
        by_x = sorted(packet.faces, key=lambda f: f.center[0])
        for face, colour in zip(by_x, colours, strict=True):
            cx, cy = (int(v) for v in face.kps[2])  # the nose tip: inside the swapped face
            patch = packet.frame[cy - 3 : cy + 4, cx - 3 : cx + 4].reshape(-1, 3)
            rgb = patch.mean(axis=0)[::-1]
            assert np.abs(rgb - colour).max() < 6, (rgb, colour)
    finally:
        stage.close()


def test_standard_parts_follow_the_manifest_contracts(
    testdata: Path, synthetic: dict[str, Path], tmp_path: Path
) -> None:
    cfg = standard_config(testdata, synthetic, "identity", pixel_boost=2, mouth_mask=0)
    parts = build_parts(PRESETS["standard"], cfg, ModelStore(data_dir=tmp_path))
    try:
        swapper = parts.swapper
        assert isinstance(swapper, InSwapper)
        assert (swapper.input_size, swapper.template, swapper.pixel_boost) == (
            128,
            "arcface_128",
            2,
        )
        assert parts.recognizer.dim == 512 and parts.landmarker is None
        assert parts.blender.model_id == "affine-insightface"  # the preset's paste-back edge
    finally:
        parts.close()
