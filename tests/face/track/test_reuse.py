"""Swap reuse (``swap.reuse.reuse``) through the real standard pipeline: real SCRFD on real
portraits, a 512-d recognizer made from the real MobileFaceNet, the narrow synthetic
inswapper (its output differs from the face it gets, so a pasted face is visible)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from scenes import background

from livecam.benchmark.synthetic_models import arcface_like, inswapper_like
from livecam.config.schema import SwapConfig
from livecam.errors import ConfigError
from livecam.face.identity.metrics import psnr
from livecam.face.source.photo import SourceFaceCache
from livecam.face.swap.classic import ClassicSwapper
from livecam.face.swap_stage import FaceSwapStage, build_swap_stage
from livecam.face.track.repeat import SwapReuse, thumbnail
from livecam.models.store import ModelStore
from livecam.telemetry.hub import Telemetry
from livecam.types import FramePacket
from livecam.userfiles.images import load_image_bgr

W, H = 640, 480


@pytest.fixture(scope="module")
def models(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reuse-models")
    files = {"recognizer": folder / "arcface_like.onnx", "swapper": folder / "narrow.onnx"}
    arcface_like(files["recognizer"], testdata / "models" / "mobilefacenet.onnx")
    inswapper_like(files["swapper"], width=128)
    return files


def config(testdata: Path, models: dict[str, Path], **kw: object) -> SwapConfig:
    return SwapConfig.of(
        preset="standard",
        provider="cpu",
        face=str(testdata / "faces" / "biden_official_portrait.jpg"),
        detector_model=str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
        recognizer_model=str(models["recognizer"]),
        swapper_model=str(models["swapper"]),
        **kw,
    )


@pytest.fixture(scope="module")
def stage(
    testdata: Path, models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FaceSwapStage]:
    folder = tmp_path_factory.mktemp("reuse-stage")
    store = ModelStore(models_dir=testdata / "models", data_dir=folder / "data")
    built = build_swap_stage(config(testdata, models), SourceFaceCache(folder / "faces"), store)
    built.warmup(W, H)
    yield built
    built.close()


@pytest.fixture(scope="module")
def portrait(testdata: Path) -> np.ndarray:
    image = load_image_bgr(testdata / "faces" / "obama_official_portrait_2012.jpg")
    return np.asarray(cv2.resize(image, (240, 300), interpolation=cv2.INTER_AREA))


def scene(portrait: np.ndarray, x: int, y: int = 90) -> np.ndarray:
    frame = background(W, H)
    h, w = portrait.shape[:2]
    frame[y : y + h, x : x + w] = portrait
    return frame


def varied(frames: list[np.ndarray]) -> list[np.ndarray]:
    """The frames, each with a corner patch (away from the face) brighter or darker than in
    the frame before: not a repeated camera frame, which the stage answers with its last
    output (counts included) without looking at reuse."""
    out = []
    for i, frame in enumerate(frames):
        copy = frame.copy()
        copy[:64, :64] = np.clip(copy[:64, :64].astype(np.int16) + 12 * (i % 2), 0, 255)
        out.append(copy.astype(np.uint8))
    return out


def run(
    stage: FaceSwapStage, frames: list[np.ndarray], reuse: SwapReuse | None, batch: int = 1
) -> list[FramePacket]:
    """The frames through the stage (``batch`` frames per call) from a fresh tracker, with
    ``reuse`` (a fresh cache) or without."""
    stage._tracker.reset()
    if reuse is not None:
        reuse.clear()
    stage.repeats.reuse = reuse
    packets = [
        FramePacket(f.copy(), seq=i, t_capture_ns=i * 33_333_333) for i, f in enumerate(frames)
    ]
    for i in range(0, len(packets), batch):
        stage.process(packets[i : i + batch])
    return packets


def test_the_standard_stage_reuses_by_default_and_not_when_switched_off(
    testdata: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    # a stage of its own: the module's ``stage`` has its reuse replaced by ``run``
    store = ModelStore(models_dir=testdata / "models", data_dir=tmp_path / "data")
    on = build_swap_stage(config(testdata, models), SourceFaceCache(tmp_path), store)
    try:
        assert SwapReuse.supports(on.parts.swapper)  # the standard preset's inswapper
        assert isinstance(on.repeats.reuse, SwapReuse)
        defaults = SwapConfig()
        assert (on.repeats.reuse.similarity, on.repeats.reuse.max_reuse) == (
            defaults.reuse.reuse_similarity,
            defaults.reuse.reuse_max,
        )
    finally:
        on.close()
    off = build_swap_stage(config(testdata, models, reuse=False), SourceFaceCache(tmp_path), store)
    try:
        assert off.repeats.reuse is None
    finally:
        off.close()
    # the classic swapper's crop is a landmark-sized ROI with its own mask: never reused
    assert not SwapReuse.supports(ClassicSwapper())
    with pytest.raises(ConfigError, match="swap.reuse.reuse_max"):
        SwapConfig.of(reuse_max=-1)
    with pytest.raises(ConfigError, match="swap.reuse.reuse_similarity"):
        SwapConfig.of(reuse_similarity=5)


def test_static_frame_reuses_until_the_forced_refresh(
    stage: FaceSwapStage, portrait: np.ndarray
) -> None:
    frames = varied([scene(portrait, 200)] * 10)
    without = run(stage, frames, None)
    assert [p.faces_swapped for p in without] == [1] * 10
    unlimited = run(stage, frames, SwapReuse(32.0, max_reuse=30))
    assert [p.faces_reused for p in unlimited] == [0] + [1] * 9
    capped = run(stage, frames, SwapReuse(32.0, max_reuse=3))
    assert [p.faces_reused for p in capped] == [0, 1, 1, 1, 0, 1, 1, 1, 0, 1]
    assert [p.faces_swapped for p in capped] == [1] * 10
    # the same face at the same place: the reused output is the same paste, within a grey
    # level (the tracker's detection corrections move the fresh swaps' crop by a hair)
    for a, b in zip(without, capped, strict=True):
        assert np.abs(a.frame.astype(np.int16) - b.frame).max() <= 1
        assert not np.array_equal(a.frame, frames[0])  # the face was swapped


def test_a_batch_of_frames_reuses_the_swap_of_its_first_frame(
    stage: FaceSwapStage, portrait: np.ndarray
) -> None:
    frames = [scene(portrait, 200)] * 4
    packets = run(stage, frames, SwapReuse(32.0, max_reuse=3), batch=4)
    assert [p.faces_reused for p in packets] == [0, 1, 1, 1]
    assert all(np.array_equal(p.frame, packets[0].frame) for p in packets)


def test_moving_face_output_follows_the_face_and_stays_close_to_no_reuse(
    stage: FaceSwapStage, portrait: np.ndarray
) -> None:
    step = 2  # px per frame
    frames = [scene(portrait, 160 + step * i) for i in range(12)]
    without = run(stage, frames, None)
    reuse = SwapReuse(32.0, max_reuse=3)
    with_reuse = run(stage, frames, reuse)
    reused = [i for i, p in enumerate(with_reuse) if p.faces_reused]
    assert len(reused) >= 6, [p.faces_reused for p in with_reuse]

    def left_edge(packet: FramePacket, frame: np.ndarray) -> int:
        changed = np.any(packet.frame != frame, axis=2)
        return int(np.flatnonzero(changed.any(axis=0))[0])

    refreshed = 0
    for i, packet in enumerate(with_reuse):
        if not packet.faces_reused:
            refreshed = i
            continue
        # the reused face is pasted where the face is now: it moved from the frame it was
        # swapped in as far as the paste without reuse moved
        moved = left_edge(packet, frames[i]) - left_edge(with_reuse[refreshed], frames[refreshed])
        expected = left_edge(without[i], frames[i]) - left_edge(
            without[refreshed], frames[refreshed]
        )
        assert abs(moved - expected) <= 1, (i, refreshed, moved, expected)
        assert psnr(packet.frame, without[i].frame) >= 35.0
    travel = left_edge(with_reuse[-1], frames[-1]) - left_edge(with_reuse[0], frames[0])
    assert travel >= step * (len(frames) - 1) // 2


def test_a_large_change_is_a_miss(stage: FaceSwapStage, portrait: np.ndarray) -> None:
    bright = scene(portrait, 200)
    dark = (bright * 0.55).astype(np.uint8)  # the same face at the same place, much darker
    packets = run(stage, varied([bright, bright, dark, dark]), SwapReuse(32.0, max_reuse=30))
    assert [p.faces_swapped for p in packets] == [1, 1, 1, 1]
    assert [p.faces_reused for p in packets] == [0, 1, 0, 1]
    assert psnr(thumbnail(bright[90:390, 200:440]), thumbnail(dark[90:390, 200:440])) < 32


def test_hit_rate_in_the_snapshot_status_line_and_summary(
    stage: FaceSwapStage, portrait: np.ndarray
) -> None:
    packets = run(stage, varied([scene(portrait, 200)] * 8), SwapReuse(32.0, max_reuse=3))
    telemetry = Telemetry()
    for p in packets:
        telemetry.frame_out(p, p.t_capture_ns + 5_000_000)
    snap = telemetry.snapshot()
    assert snap.faces_swapped == 8 and snap.faces_reused == 6
    assert snap.reuse_hit_rate == pytest.approx(0.75)
    assert "75% reused" in snap.status_line()
    summary = snap.to_summary()
    assert summary["faces_reused"] == 6 and summary["reuse_hit_rate"] == 0.75


def test_a_track_that_ends_drops_its_entry(stage: FaceSwapStage, portrait: np.ndarray) -> None:
    face, empty = scene(portrait, 200), background(W, H)
    reuse = SwapReuse(32.0, max_reuse=30)
    packets = run(stage, [face, face] + [empty] * 8, reuse)
    assert packets[1].faces_reused == 1
    # the tracker holds the face for a few frames without it, then ends the track; with no
    # face left its entry is gone
    assert len(packets[-1].faces) == 0 and reuse.tracks == ()
    later = [
        FramePacket(f.copy(), seq=s, t_capture_ns=s * 33_333_333)
        for s, f in enumerate([face, face], start=10)
    ]
    for packet in later:
        stage.process([packet])
    # the face came back as a new track: swapped afresh, then reused
    assert [p.faces_reused for p in later] == [0, 1]
    assert len(reuse.tracks) == 1 and reuse.tracks[0] != packets[0].faces[0].track_id
