"""The control plane on a running stream: every command changes the output within a few
frames, invalid commands change nothing, and the stream never stops for a change.

Checks are exact: the synthetic source renders each frame as a pure function of its index
(so "camera frame passed through" means "one of the source's own frames"), and the
rebuild tests use a still photo (every input frame identical).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from recording_backend import RecordingStore
from synthetic_stream import SYNTHETIC, passed_through, source_frames
from waiting import poll

from livecam.app import App
from livecam.config.schema import Config
from livecam.control.controls import Change
from livecam.errors import ConfigError, ControlError, FaceSourceError
from livecam.runtime.providers import Providers
from livecam.telemetry.hub import Telemetry
from livecam.types import Event
from livecam.userfiles.images import load_image_bgr, make_even

ASSETS = Path(__file__).resolve().parents[2] / "assets"
APPLY_TIMEOUT_S = 30.0  # generous: a rebuild loads its models on a loaded CI machine


@pytest.fixture
def target(testdata: Path) -> Path:
    return testdata / "faces" / "obama_small_320x240.jpg"


OVERLAP = [pytest.param(False, id="serial"), pytest.param(True, id="overlap")]


@pytest.fixture(params=OVERLAP)
def live(
    vcam: RecordingStore, target: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[App, list[Event]]]:
    """A running stream: the still photo at 30 fps -> lite swap -> virtual camera, with
    the tracking on the inference thread before the swap, or beside it (overlap)."""
    app, events = start_app(vcam, {"spec": str(target), "fps": 30}, request.param)
    yield app, events
    assert app.stop() == []


@pytest.fixture(params=OVERLAP)
def synthetic(
    vcam: RecordingStore, request: pytest.FixtureRequest
) -> Iterator[tuple[App, list[Event]]]:
    """A running stream: the synthetic face-motion clip at 30 fps -> lite swap (serial
    or overlapped)."""
    app, events = start_app(vcam, {**SYNTHETIC, "fps": 30}, request.param)
    yield app, events
    assert app.stop() == []


def start_app(
    vcam: RecordingStore, source: dict[str, object], overlap: bool = False
) -> tuple[App, list[Event]]:
    """Start ``source`` at 30 fps -> lite swap (Grace Hopper's face) -> virtual camera."""
    events: list[Event] = []
    telemetry = Telemetry()
    telemetry.add_listener(events.append)
    cfg = Config.from_dict(
        {
            "source": source,
            "output": {"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
            "pipeline": {"stages": ["swap"], "overlap": overlap},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg")},
        }
    )
    app = App(cfg, telemetry=telemetry)
    app.start()
    assert app.overlap is overlap
    return app, events


def frames_after(vcam: RecordingStore, change: Change, count: int = 4) -> list[np.ndarray]:
    """Wait until ``change`` is applied, then return the next ``count`` frames sent."""
    change.wait(APPLY_TIMEOUT_S)
    return next_frames(vcam, count)


def next_frames(vcam: RecordingStore, count: int = 4) -> list[np.ndarray]:
    """The next ``count`` frames the virtual camera receives from now on."""
    start = len(vcam.frames)
    assert poll(lambda: len(vcam.frames) >= start + count + 3, APPLY_TIMEOUT_S), "no frames"
    # skip the first three: two may wait for the output thread and, with overlap, one may
    # be rendering with the stages of before the change
    return [f.frame for f in vcam.frames[start + 3 : start + 3 + count]]


def face_changed(frame: np.ndarray, original: np.ndarray) -> float:
    """Share of pixels that differ from the original photo."""
    return float((np.abs(frame.astype(int) - original).sum(axis=2) > 0).mean())


def test_swap_blank_freeze_and_stage_switches_apply_live(
    synthetic: tuple[App, list[Event]], vcam: RecordingStore
) -> None:
    app, events = synthetic
    plain = source_frames()
    assert not any(passed_through(f, plain) for f in next_frames(vcam)), "the face is swapped"

    result = app.controls.set_swap(False).wait(APPLY_TIMEOUT_S)
    assert result.state.swap is False and result.config.swap.face is not None
    assert all(passed_through(f, plain) for f in next_frames(vcam)), "camera frames pass"
    on = frames_after(vcam, app.controls.toggle("swap"))
    assert app.controls.state.swap is True
    assert not any(passed_through(f, plain) for f in on)

    blank = frames_after(vcam, app.controls.set_blank(True))
    assert all(not f.any() for f in blank), "blank sends black frames"
    still = frames_after(vcam, app.controls.set_blank(True, ASSETS / "grace_hopper.jpg"))
    assert all(np.array_equal(f, still[0]) and f.any() for f in still), "a still picture"
    back = frames_after(vcam, app.controls.set_blank(False))
    assert not any(passed_through(f, plain) or not f.any() for f in back)

    frozen = frames_after(vcam, app.controls.set_freeze(True), 6)
    assert all(np.array_equal(f, frozen[0]) for f in frozen)
    assert app.controls.state.frozen
    moving = frames_after(vcam, app.controls.set_freeze(False), 6)
    assert len({f.tobytes() for f in moving}) > 1, "live again"

    off = frames_after(vcam, app.controls.set_stage_enabled("swap", False))
    assert all(passed_through(f, plain) for f in off)
    messages = [e.message for e in events if e.origin == "controls"]
    assert {"swap off", "swap on", "blank on", "blank off", "freeze on", "freeze off"} <= set(
        messages
    )
    assert app.running


def test_face_selection_and_quality_changes_rebuild_without_stopping(
    live: tuple[App, list[Event]], vcam: RecordingStore, target: Path, testdata: Path
) -> None:
    app, _ = live
    assert app.snapshot().providers == {"swap": {"requested": "cpu", "used": "cpu"}}
    original = make_even(load_image_bgr(target))
    first = next_frames(vcam)[-1]
    sent_before = len(vcam.frames)

    applied = app.controls.set_face(testdata / "faces" / "astronaut_eileen_collins.png")
    result = applied.wait(APPLY_TIMEOUT_S)
    assert result.config.swap.face is not None and result.config.swap.face.endswith(".png")
    assert app.config.swap.face == result.config.swap.face
    other = next_frames(vcam)
    assert face_changed(other[-1], original) > 0.03
    assert not np.array_equal(other[-1], first), "another face is pasted in"

    quality = app.controls.update_swap(detect_size=320, blend="seamless").wait(APPLY_TIMEOUT_S)
    assert (
        quality.config.swap.detect.detect_size == 320
        and quality.config.swap.classic.blend == "seamless"
    )
    preset = app.controls.set_preset("auto").wait(APPLY_TIMEOUT_S)
    assert preset.config.swap.preset == "auto"
    selection = app.controls.set_selection("all").wait(APPLY_TIMEOUT_S)
    assert selection.config.swap.select.select == "all"

    times = np.array([f.t_ns for f in vcam.frames[sent_before:]]) / 1e9
    assert len(times) > 10 and float(np.diff(times).max()) < 1.0, "no output gap over 1 s"
    assert app.running


def test_invalid_commands_change_nothing(
    live: tuple[App, list[Event]], vcam: RecordingStore, tmp_path: Path
) -> None:
    app, events = live
    before = app.config
    with pytest.raises(ConfigError, match="preset"):
        app.controls.set_preset("best")
    with pytest.raises(ConfigError, match="swap.detect.detect_size"):
        app.controls.update_swap(detect_size=10)
    with pytest.raises(ConfigError, match="face"):
        app.controls.update_swap(face="x.jpg")
    with pytest.raises(FaceSourceError, match="does not exist"):
        app.controls.set_face(tmp_path / "missing.jpg")
    with pytest.raises(ControlError, match="stages running: swap"):
        app.controls.set_stage_enabled("enhancer", False)
    with pytest.raises(ConfigError, match="reference"):
        app.controls.set_selection("nobody")  # type: ignore[arg-type]

    wall = tmp_path / "wall.png"
    cv2.imwrite(str(wall), np.full((300, 300, 3), 128, np.uint8))
    change = app.controls.set_face(wall)
    with pytest.raises(FaceSourceError, match="0 faces found"):
        change.wait(APPLY_TIMEOUT_S)
    assert app.config == before, "a failed change leaves the effective config as it was"
    assert any(e.level == "error" and "0 faces found" in e.message for e in events)
    assert len(next_frames(vcam)) == 4 and app.running, "the stream went on"


def test_controls_need_a_running_stream_with_a_swap(vcam: RecordingStore) -> None:
    cfg = Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [320, 240], "fps": 30},
            "output": {"sinks": ["virtualcam"], "virtualcam_backend": vcam.name},
        }
    )
    app = App(cfg)
    with pytest.raises(ControlError, match="not running"):
        _ = app.controls
    app.start()
    try:
        with pytest.raises(ControlError, match="--face"):
            app.controls.set_swap(True)
        assert app.controls.state.stages == ("passthrough",)
        assert app.controls.state.providers == {}  # pass-through runs no model
        # picking a face later adds the swap to the running stream
        result = app.controls.set_face(ASSETS / "grace_hopper.jpg").wait(APPLY_TIMEOUT_S)
        assert result.state.stages == ("swap",) and result.state.swap
        assert result.config.pipeline.stages == ("swap",)
        # the lite preset's parts run on the CPU, which is what it asks for
        assert result.state.providers["swap"] == Providers(("cpu",), ("cpu",))
    finally:
        assert app.stop() == []
