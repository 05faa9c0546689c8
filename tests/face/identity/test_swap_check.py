"""The live swap check on real faces and real recognizers: the identity oracle swapper
(output = camera face) is flagged as not taking with one warning that names the likely
causes; the lite stack (YuNet, slim-160, MobileFaceNet, the classic swap) passes; a swap
hidden by opacity 0 is flagged and clears once the face shows again. Frame times are the
packets' own stamps (0.5 s apart), so nothing here depends on how fast the machine is."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from livecam.benchmark.synthetic_models import arcface_like, blind_recognizer, identity_swapper
from livecam.config.schema import SwapConfig
from livecam.face.identity.swap_check import WEAK_BELOW, swap_strength
from livecam.face.source.photo import SourceFaceCache
from livecam.face.swap_stage import FaceSwapStage, build_swap_stage
from livecam.models.store import ModelStore
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, FramePacket, SwapReading
from livecam.userfiles.images import load_image_bgr

STEP_NS = 500_000_000  # frame times 0.5 s apart: a sample every other frame


@pytest.fixture(scope="module")
def oracle_files(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 512-d recognizer with ArcFace's interface (real MobileFaceNet identities) and the
    identity oracle with inswapper's interface (its output is the target crop)."""
    folder = tmp_path_factory.mktemp("oracle-models")
    files = {
        "recognizer": folder / "arcface_like.onnx",
        "swapper": folder / "identity.onnx",
        "blind": folder / "blind.onnx",
    }
    arcface_like(files["recognizer"], testdata / "models" / "mobilefacenet.onnx")
    identity_swapper(files["swapper"], 128, "inswapper")
    blind_recognizer(files["blind"])
    return files


def webcam_frame(testdata: Path, name: str = "obama_official_portrait_2012.jpg") -> np.ndarray:
    """A 640x480 frame with the portrait's face at about 30 % of the width."""
    portrait = load_image_bgr(testdata / "faces" / name)
    frame = np.full((480, 640, 3), 60, np.uint8)
    frame[40:440, 160:480] = cv2.resize(portrait, (320, 400), interpolation=cv2.INTER_AREA)
    return frame


def build(cfg: SwapConfig, testdata: Path, tmp_path: Path) -> FaceSwapStage:
    store = ModelStore(models_dir=testdata / "models", data_dir=tmp_path / "data")
    stage = build_swap_stage(cfg, SourceFaceCache(tmp_path / "cache"), store)
    stage.warmup(640, 480)
    return stage


def run(stage: FaceSwapStage, frame: np.ndarray, frames: int, start: int = 0) -> list[SwapReading]:
    """``frames`` packets of ``frame`` 0.5 s apart through the stage, each check awaited;
    the readings the telemetry got, in order. Each frame is shifted 1 px from the one
    before: a repeated camera frame gets the last output again, unchecked."""
    assert stage.check is not None
    readings: list[SwapReading] = []
    for i in range(start, start + frames):
        image = np.ascontiguousarray(np.roll(frame, i % 2, axis=1))
        packet = FramePacket(image, seq=i, t_capture_ns=i * STEP_NS)
        stage.process([packet])
        assert packet.faces_swapped == 1
        assert stage.check.wait_idle(30)
        reading = stage.check.latest
        if reading is not None and (not readings or reading is not readings[-1]):
            readings.append(reading)
    return readings


def watch(stage: FaceSwapStage) -> tuple[Telemetry, list[Event]]:
    telemetry = Telemetry()
    events: list[Event] = []
    telemetry.add_listener(events.append)
    stage.report_to(telemetry)
    return telemetry, events


def test_strength_is_the_margin_from_camera_to_source() -> None:
    # the output equals the camera face, the source, or sits halfway (margin 0)
    assert swap_strength(0.1, 1.0, 0.1) == 0
    assert swap_strength(1.0, 0.1, 0.1) == 100
    assert swap_strength(0.4, 0.4, 0.1) == pytest.approx(50)
    assert swap_strength(0.9, 0.9, 0.95) is None  # source and camera: the same person


def test_the_identity_oracle_is_flagged_as_not_taking(
    testdata: Path, oracle_files: dict[str, Path], tmp_path: Path
) -> None:
    cfg = SwapConfig.of(
        preset="standard",
        provider="cpu",
        face=str(testdata / "faces" / "biden_official_portrait.jpg"),
        detector_model=str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
        recognizer_model=str(oracle_files["recognizer"]),
        swapper_model=str(oracle_files["swapper"]),
    )
    stage = build(cfg, testdata, tmp_path)
    try:
        telemetry, events = watch(stage)
        readings = run(stage, webcam_frame(testdata), 10)  # 4.5 s of frames
    finally:
        stage.close()
    assert len(readings) == 5  # one sample a second of frame time
    for r in readings:
        assert r.strength is not None and r.strength < 5, r
        assert r.cos_camera > 0.9 and r.taking is False
    # the warning comes once the output kept the camera's identity for 2 s, and only once
    assert [r.warning for r in readings] == [False, False, True, True, True]
    warnings = [e for e in events if e.origin == "swap check"]
    assert len(warnings) == 1 and warnings[0].level == "warning"
    assert "not taking" in warnings[0].message and "camera's identity" in warnings[0].message
    assert "emap" in warnings[0].hint and "--identity-weight" in warnings[0].hint
    assert "--opacity" in warnings[0].hint and "mask" in warnings[0].hint
    # it reaches telemetry: the snapshot, the status line and the --stats-json summary
    snapshot = telemetry.snapshot()
    assert snapshot.swap_check == readings[-1]
    summary = snapshot.to_summary()["swap_check"]
    assert summary["taking"] is False and summary["strength"] < 5 and summary["warning"]


def test_a_preset_recognizer_that_sees_every_face_alike_does_not_blind_the_check(
    testdata: Path, oracle_files: dict[str, Path], tmp_path: Path
) -> None:
    """The standard preset with a recognizer that cannot tell faces apart (a broken or
    random-weight file) and the identity oracle: the check judges with the bundled
    MobileFaceNet, not the preset's recognizer, so it reads a swap that does not take
    (before, the blind recognizer gave "strength n/a" and no warning)."""
    cfg = SwapConfig.of(
        preset="standard",
        provider="cpu",
        face=str(testdata / "faces" / "biden_official_portrait.jpg"),
        detector_model=str(testdata / "models" / "scrfd_2.5g_kps.onnx"),
        recognizer_model=str(oracle_files["blind"]),
        swapper_model=str(oracle_files["swapper"]),
    )
    stage = build(cfg, testdata, tmp_path)
    try:
        assert stage.parts.judge is not None and stage.parts.judge is not stage.parts.recognizer
        _, events = watch(stage)
        readings = run(stage, webcam_frame(testdata), 6)
    finally:
        stage.close()
    assert readings and all(r.judge == "MobileFaceNet" for r in readings)
    assert all(r.strength is not None and r.strength < 5 for r in readings), readings
    assert readings[-1].warning and readings[-1].taking is False
    (warning,) = [e for e in events if e.origin == "swap check"]
    assert "not taking" in warning.message and "judged by MobileFaceNet" in warning.message


def test_a_judge_that_cannot_tell_the_source_from_the_camera_warns(
    testdata: Path, tmp_path: Path
) -> None:
    """The source photo is the camera's own face: the judge cannot tell them apart, so it
    cannot say whether the swap takes. That is one warning of its own, not a silent n/a."""
    cfg = SwapConfig.of(
        preset="lite",
        provider="cpu",
        face=str(testdata / "faces" / "obama_official_portrait_2012.jpg"),
    )
    stage = build(cfg, testdata, tmp_path)
    try:
        _, events = watch(stage)
        readings = run(stage, webcam_frame(testdata), 8)
    finally:
        stage.close()
    assert all(r.strength is None and r.taking is None for r in readings), readings
    assert readings[0].cos_source_camera > 0.9
    assert [r.warning for r in readings] == [False, False, True, True]
    assert "MobileFaceNet cannot tell" in readings[-1].label()
    (warning,) = [e for e in events if e.origin == "swap check"]
    assert warning.level == "warning" and "cannot judge" in warning.message
    assert "MobileFaceNet" in warning.message and "another photo" in warning.hint


def test_the_lite_stack_passes(testdata: Path, tmp_path: Path) -> None:
    cfg = SwapConfig.of(
        preset="lite", provider="cpu", face=str(testdata / "faces" / "biden_official_portrait.jpg")
    )
    stage = build(cfg, testdata, tmp_path)
    try:
        _, events = watch(stage)
        readings = run(stage, webcam_frame(testdata), 6)
    finally:
        stage.close()
    assert len(readings) == 3
    for r in readings:
        # the output is nearer Biden than the camera's Obama, by a wide margin
        assert r.strength is not None and r.strength > 55, r
        assert r.taking and not r.warning and r.cos_source > r.cos_camera
    assert not [e for e in events if e.origin == "swap check"]


def test_a_hidden_swap_warns_and_clears_when_the_face_shows(testdata: Path, tmp_path: Path) -> None:
    """Opacity 0: the lite swap runs but nothing of it shows; the one warning names the
    opacity first. At opacity 1 the swap takes again: an info event, the warning is down."""
    cfg = SwapConfig.of(
        preset="lite",
        provider="cpu",
        face=str(testdata / "faces" / "grace_hopper_navy_portrait.jpg"),
        opacity=0.0,
    )
    stage = build(cfg, testdata, tmp_path)
    frame = webcam_frame(testdata)
    try:
        _, events = watch(stage)
        hidden = run(stage, frame, 8)
        stage.opacity = 1.0
        shown = run(stage, frame, 4, start=8)
    finally:
        stage.close()
    assert all(r.strength is not None and r.strength < WEAK_BELOW for r in hidden), hidden
    assert hidden[-1].warning
    assert all(r.taking and not r.warning for r in shown), shown
    checks = [e for e in events if e.origin == "swap check"]
    assert [e.level for e in checks] == ["warning", "info"]
    assert checks[0].hint.startswith("likely causes: the opacity is 0")
    assert "takes again" in checks[1].message
