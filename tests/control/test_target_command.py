"""The swap target on a running stream: the console's `target X Y` pins the person there
and the control state says who is swapped, until that person leaves the picture (a real
two-person clip made of the testdata photo: both people, then one of them gone)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from waiting import poll

from livecam.app import App
from livecam.cli.console import HELP, execute
from livecam.config.schema import Config
from livecam.errors import ConfigError, ControlError
from livecam.userfiles.images import load_image_bgr

ASSETS = Path(__file__).resolve().parents[2] / "assets"
WAIT_S = 30.0  # generous: a loaded machine
BOTH_S, ALONE_S = 6, 6  # seconds of the clip with both people, then with one
FPS = 30
SIZE = (640, 376)


def two_person_clip(testdata: Path, path: Path) -> tuple[float, float]:
    """Write the clip; return a point on the right person's face (normalised), the one
    who leaves."""
    two = cv2.resize(load_image_bgr(testdata / "faces" / "obama_biden_two_people.jpg"), SIZE)
    alone = two.copy()
    alone[:, SIZE[0] * 62 // 100 :] = np.median(two, axis=(0, 1))  # Biden leaves (right side)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), FPS, SIZE)
    rng = np.random.default_rng(0)
    for frame, seconds in ((two, BOTH_S), (alone, ALONE_S)):
        for _ in range(seconds * FPS):
            noise = rng.integers(-2, 3, frame.shape)
            writer.write(np.clip(frame.astype(int) + noise, 0, 255).astype(np.uint8))
    writer.release()
    return 0.78, 0.35


def test_target_command_pins_a_person_and_the_state_follows_them_out(
    tmp_path: Path, testdata: Path
) -> None:
    clip = tmp_path / "two_people.avi"
    right = two_person_clip(testdata, clip)
    cfg = Config.from_dict(
        {
            "source": {"spec": str(clip), "fps": FPS, "unpaced": False},  # real time
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg")},
        }
    )
    app = App(cfg)
    app.start()
    try:
        controls = app.controls
        assert controls.state.swap_target is None and controls.state.target_text == "auto"
        change = execute(controls, f"target {right[0]} {right[1]}")
        assert change is not None and not isinstance(change, str)
        assert change.wait(WAIT_S).command == "target 0.780 0.350"
        assert poll(lambda: controls.state.swap_target is not None, WAIT_S), "never pinned"
        pinned = controls.state.swap_target
        assert controls.state.target_text == f"face #{pinned}"
        # the pinned person leaves the picture: the state goes back to auto by itself
        assert poll(lambda: controls.state.swap_target is None, WAIT_S), "still pinned"
        assert controls.state.target_text == "auto"
        assert app.running  # the stream never stopped
    finally:
        assert app.stop() == []


def test_target_command_errors_change_nothing(testdata: Path) -> None:
    assert "target X Y|auto" in HELP
    cfg = Config.from_dict(
        {
            "source": {"spec": str(testdata / "faces" / "obama_small_320x240.jpg"), "fps": 30},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg"), "select": "all"},
        }
    )
    app = App(cfg)
    app.start()
    try:
        with pytest.raises(ControlError, match="select one"):
            execute(app.controls, "target 0.5 0.5")  # `all` swaps everyone
        app.controls.set_selection("one").wait(WAIT_S)
        with pytest.raises(ConfigError, match="outside the frame"):
            execute(app.controls, "target 1.5 0.5")
        with pytest.raises(ValueError):
            execute(app.controls, "target left top")
        change = execute(app.controls, "target auto")
        assert change is not None and not isinstance(change, str)
        assert change.wait(WAIT_S).state.swap_target is None
    finally:
        assert app.stop() == []
