"""A first start that works on a machine with no virtual-camera driver and no camera (this
one): the window checks the virtual camera when it opens (a worker thread), says in the
status bar that there is none, and Start streams in the preview only with the fix shown;
with no camera it says so before Start and offers the test pattern with a moving face,
which, chosen, shows a swapped face (the bundled lite preset, real models)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np
import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot
from pyvirtualcam.camera import BACKENDS
from recording_backend import register_recording_backend, unregister

from livecam.config.schema import Config
from livecam.errors import one_line
from livecam.sinks.virtualcam import virtualcam_fix
from livecam.sources.synthetic.pattern import MOTION_PERIOD, SyntheticSource
from ui.main_window import MainWindow
from ui.panels.input_panel import InputPanel
from ui.panels.stats_panel import StatsPanel
from ui.settings import UiSettings, first_run_config
from ui.stream import StreamController

TIMEOUT_MS = 90000  # a swap start loads its models on a loaded machine


@pytest.fixture
def no_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyvirtualcam with no backend at all (as on a machine without a driver), restored
    afterwards; a test may register its own."""
    for name in list(BACKENDS):
        monkeypatch.delitem(BACKENDS, name)


@pytest.fixture
def windows() -> Iterator[list[MainWindow]]:
    opened: list[MainWindow] = []
    yield opened
    for window in opened:
        window.close()


def open_window(
    qtbot: QtBot, settings: UiSettings, windows: list[MainWindow], config: Config | None
) -> MainWindow:
    """The panel as ``livecam`` opens it: over the saved ``config`` (None: a first run)."""
    if config is not None:
        settings.save_config(config)
    window = MainWindow(StreamController(settings.config), settings)
    qtbot.addWidget(window)
    windows.append(window)
    window.show()
    return window


def start(qtbot: QtBot, window: MainWindow) -> None:
    qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.stream.running, timeout=TIMEOUT_MS)


def small_virtualcam_config() -> Config:
    return Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [320, 240], "fps": 30},
            "output": {"sinks": ["virtualcam"]},
        }
    )


def test_no_virtual_camera_starts_in_preview_only_with_the_fix(
    qtbot: QtBot, settings: UiSettings, windows: list[MainWindow], no_backends: None
) -> None:
    window = open_window(qtbot, settings, windows, small_virtualcam_config())
    # checked when the window opens, off the GUI thread; the status bar says what it found
    qtbot.waitUntil(lambda: "NOT AVAILABLE" in window.vcam_label.text(), timeout=10000)
    assert window.vcam_label.text() == "virtual camera: NOT AVAILABLE (Start runs the preview only)"
    assert "no backend registered" in window.vcam_label.toolTip()
    start(qtbot, window)
    qtbot.waitUntil(lambda: window.preview.frames_painted >= 3, timeout=TIMEOUT_MS)
    assert window.vcam_label.text() == "virtual camera: NOT AVAILABLE, preview only"
    text = window.message.text()
    assert window.message.isVisible() and text.startswith("No virtual camera: ")
    assert text.endswith("fix: " + one_line(virtualcam_fix()))  # this OS's fix
    # the choice is the user's: the virtual camera stays in the saved config
    assert window.stream.config.output.sinks == ("virtualcam",)
    assert settings.config.output.sinks == ("virtualcam",)


def test_a_virtual_camera_gone_at_start_falls_back_and_one_back_is_used_again(
    qtbot: QtBot, settings: UiSettings, windows: list[MainWindow], no_backends: None
) -> None:
    store = register_recording_backend()
    try:
        config = small_virtualcam_config().with_section("output", virtualcam_backend=store.name)
        window = open_window(qtbot, settings, windows, config)
        ready = "virtual camera: ready (starts with the stream)"
        qtbot.waitUntil(lambda: window.vcam_label.text() == ready, timeout=10000)
        unregister(store.name)  # the driver went away after the check: the start finds none
        start(qtbot, window)
        qtbot.waitUntil(lambda: window.preview.frames_painted >= 3, timeout=TIMEOUT_MS)
        assert window.vcam_label.text() == "virtual camera: NOT AVAILABLE, preview only"
        assert window.message.text().startswith("No virtual camera: ")
        again = register_recording_backend(store.name)  # the driver is loaded again
        with qtbot.waitSignal(window.virtualcam_checked, timeout=10000) as checked:
            window.toggle_running()  # Stop: checked again
        assert checked.args == [True] and window.vcam_label.text() == ready
        start(qtbot, window)
        qtbot.waitUntil(lambda: len(again.frames) >= 3, timeout=TIMEOUT_MS)
        assert window.vcam_label.text() == "virtual camera: on" and window.message.isHidden()
    finally:
        unregister(store.name)


def source_frames(config: Config) -> set[bytes]:
    """Every frame the synthetic source of ``config`` can send (its motion repeats)."""
    source = SyntheticSource(config.source)
    source.open()
    return {hashlib.sha1(source.render(i).tobytes()).digest() for i in range(MOTION_PERIOD)}


def test_no_camera_offers_the_moving_face_and_it_shows_a_swap(
    qtbot: QtBot, settings: UiSettings, windows: list[MainWindow], no_backends: None
) -> None:
    assert not settings.config_path.exists()  # a first run: camera 0 into the virtual camera
    window = open_window(qtbot, settings, windows, None)
    assert window.stream.config == first_run_config()
    panel = window.panels["Input"]
    assert isinstance(panel, InputPanel)
    # the cameras are listed off the GUI thread; before Start the window says there is none
    qtbot.waitUntil(lambda: "No camera found" in window.message.text(), timeout=20000)
    assert "camera:0" in window.message.text() and "moving face" in window.message.text()
    assert panel.no_camera_offer.isVisibleTo(panel)
    qtbot.mouseClick(panel.no_camera_offer, Qt.MouseButton.LeftButton)
    config = window.stream.config
    assert config.source.spec == "synthetic" and config.source.face_motion is not None
    assert config.swap.face is not None and config.swap.face.endswith("grace_hopper.jpg")
    assert "swap" in config.pipeline.stages and window.swap_button.isChecked()
    assert settings.config.source.face_motion == config.source.face_motion  # saved
    assert panel.moving_face.isChecked()
    assert window.message.isHidden()  # the no-camera note went with the camera input

    plain = source_frames(config)
    frames: list[np.ndarray] = []
    window.stream.frame.connect(frames.append)
    start(qtbot, window)  # no virtual camera here either: the preview only
    stats = window.panels["Stats"]
    assert isinstance(stats, StatsPanel)
    qtbot.waitUntil(lambda: "/100" in stats.values.get("swap", ""), timeout=TIMEOUT_MS)
    assert len(frames) >= 2
    assert not any(hashlib.sha1(f.tobytes()).digest() in plain for f in frames[1:])
    text = stats.values["swap"]
    strength = int(text.split("/100")[0])
    assert 50 <= strength <= 100 and "NOT TAKING" not in text, text
    assert window.preview.frame is not None and window.preview.frame.shape == (720, 1280, 3)
