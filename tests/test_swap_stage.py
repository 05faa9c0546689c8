"""The swap stage and `livecam run --face` on real faces (offline preset, no downloads)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from recording_backend import RecordingStore, register_recording_backend, unregister

from livecam.app import App
from livecam.cli import main as cli_main
from livecam.config import Config, SwapConfig
from livecam.errors import ConfigError, FaceSourceError, ModelError
from livecam.pipeline.analysis import offline_analyzer
from livecam.pipeline.identity import embedding_distance
from livecam.pipeline.swap import build_swap_stage
from livecam.sources.image import load_image_bgr, make_even
from livecam.types import FramePacket

ASSETS = Path(__file__).resolve().parents[1] / "assets"


@pytest.fixture
def vcam() -> RecordingStore:
    store = register_recording_backend()
    yield store
    unregister(store.name)


def faces_dir(testdata: Path) -> Path:
    return testdata / "faces"


def test_live_swap_moves_identity_toward_the_source(testdata: Path, vcam: RecordingStore) -> None:
    source = faces_dir(testdata) / "biden_official_portrait.jpg"
    target = faces_dir(testdata) / "obama_official_portrait_2012.jpg"
    cfg = Config.from_dict(
        {
            "source": {"spec": str(target), "fps": 30},
            "buffer": {"lossless": True},
            "output": {"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(source)},
            "run": {"frames": 6},
        }
    )
    app = App(cfg)
    app.start()
    assert app.wait(30)
    app.stop()
    out = vcam.frames[-1].frame
    analyzer = offline_analyzer(max_side=640)
    src_face = analyzer.analyze(load_image_bgr(source), with_embedding=True)[0]
    original = make_even(load_image_bgr(target))
    assert out.shape == original.shape
    before = analyzer.analyze(original, with_embedding=True)
    after = analyzer.analyze(out, with_embedding=True)
    assert len(before) == 1 and len(after) == 1
    assert src_face.embedding is not None
    d_before = embedding_distance(src_face.embedding, before[0].embedding)
    d_after = embedding_distance(src_face.embedding, after[0].embedding)
    assert d_after < d_before - 0.05, (d_before, d_after)
    assert app.snapshot().stages_ms["swap"].p50 > 0


def test_frame_without_a_face_passes_through_untouched(testdata: Path) -> None:
    stage = build_swap_stage(
        SwapConfig(face=str(faces_dir(testdata) / "astronaut_eileen_collins.png"))
    )
    stage.warmup(320, 240)
    blank = np.full((240, 320, 3), 90, np.uint8)
    packet = FramePacket(blank, seq=0, t_capture_ns=0)
    stage.process([packet])
    assert packet.frame is blank and packet.faces == []


def test_all_swaps_both_faces_and_one_only_the_largest(testdata: Path) -> None:
    two = load_image_bgr(faces_dir(testdata) / "obama_biden_two_people.jpg")
    face = str(faces_dir(testdata) / "astronaut_eileen_collins.png")
    changed = {}
    for mode in ("all", "one"):
        stage = build_swap_stage(SwapConfig(face=face, select=mode))  # type: ignore[arg-type]
        stage.warmup(two.shape[1], two.shape[0])
        packet = FramePacket(two, seq=0, t_capture_ns=0)
        stage.process([packet])
        assert len(packet.faces) == 2
        diff = np.abs(packet.frame.astype(int) - two).sum(axis=2) > 0
        changed[mode] = [
            bool(
                diff[int(f.bbox[1]) : int(f.bbox[3]), int(f.bbox[0]) : int(f.bbox[2])].mean() > 0.3
            )
            for f in packet.faces
        ]
    assert changed["all"] == [True, True]
    assert changed["one"] == [True, False], "only the largest face is swapped"


def test_reference_selection_swaps_only_the_matching_person(testdata: Path) -> None:
    two = load_image_bgr(faces_dir(testdata) / "obama_biden_two_people.jpg")
    stage = build_swap_stage(
        SwapConfig(
            face=str(faces_dir(testdata) / "astronaut_eileen_collins.png"),
            select="reference",
            reference=str(faces_dir(testdata) / "obama_official_portrait_2012.jpg"),
        )
    )
    stage.warmup(two.shape[1], two.shape[0])
    packet = FramePacket(two, seq=0, t_capture_ns=0)
    stage.process([packet])
    diff = np.abs(packet.frame.astype(int) - two).sum(axis=2) > 0
    obama, biden = sorted(packet.faces, key=lambda f: f.bbox[0])  # Obama stands on the left

    def region(f):  # noqa: E306
        return diff[int(f.bbox[1]) : int(f.bbox[3]), int(f.bbox[0]) : int(f.bbox[2])].mean()

    assert region(obama) > 0.3 and region(biden) == 0


def test_source_image_without_a_face_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blank = tmp_path / "wall.png"
    cv2.imwrite(str(blank), np.full((300, 300, 3), 128, np.uint8))
    code = cli_main(["run", "--source", "synthetic", "--sink", "null", "--face", str(blank)])
    err = capsys.readouterr().err
    assert code == 2
    assert "wall.png" in err and "0 faces found" in err and "fix:" in err


def test_source_image_with_several_faces_asks_for_an_index(testdata: Path) -> None:
    two = str(faces_dir(testdata) / "obama_biden_two_people.jpg")
    with pytest.raises(FaceSourceError) as info:
        build_swap_stage(SwapConfig(face=two))
    text = str(info.value)
    assert "2 faces found" in text and "--face-index" in text and "0:" in text and "1:" in text
    stage = build_swap_stage(SwapConfig(face=two, face_index=1))
    assert stage.source.face_index == 1
    with pytest.raises(FaceSourceError, match="out of range"):
        build_swap_stage(SwapConfig(face=two, face_index=2))


def test_missing_face_and_unknown_preset_are_startup_errors() -> None:
    with pytest.raises(ConfigError, match="--face"):
        build_swap_stage(SwapConfig())
    with pytest.raises(ModelError, match="--preset offline"):
        build_swap_stage(SwapConfig(face="x.jpg", preset="standard"))


def test_detect_size_finds_smaller_faces_in_large_frames(testdata: Path) -> None:
    portrait = load_image_bgr(faces_dir(testdata) / "obama_official_portrait_2012.jpg")
    small = cv2.resize(portrait, None, fx=0.45, fy=0.45)
    frame = np.full((720, 1280, 3), 100, np.uint8)
    frame[100 : 100 + small.shape[0], 500 : 500 + small.shape[1]] = small
    found = {}
    for size in (400, 800):
        stage = build_swap_stage(
            SwapConfig(face=str(ASSETS / "grace_hopper.jpg"), detect_size=size)
        )
        stage.warmup(1280, 720)
        packet = FramePacket(frame, seq=0, t_capture_ns=0)
        stage.process([packet])
        found[size] = len(packet.faces)
    assert found == {400: 0, 800: 1}
