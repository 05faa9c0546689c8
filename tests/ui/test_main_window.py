"""The panel's main window on a real stream (synthetic source, null sink): Start/Stop, the
preview, the master swap switch, stats, start errors, settings, the close; the
responsible-use notice; and ``livecam`` with no arguments opening the window on Xvfb."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QRect, Qt, QTimer
from pytestqt.qtbot import QtBot
from synthetic_stream import SYNTHETIC, passed_through, source_frames
from xwindow import press, require_windows, wait_window

from livecam.config.schema import Config
from livecam.telemetry.gpu import GpuSnapshot
from livecam.telemetry.hub import Telemetry
from livecam.types import Event
from ui.main_window import PANELS, MainWindow, PanelSpec, fit_rect
from ui.notice import NoticeDialog, acknowledge
from ui.panels.stats_panel import FIELDS, StatsPanel
from ui.settings import UiSettings
from ui.stream import StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"
REPO = ASSETS.parent
TIMEOUT_MS = 30000  # generous: a swap start loads its models on a loaded machine


def passthrough_config() -> Config:
    return Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [320, 240], "fps": 30},
            "output": {"sinks": ["null"]},
        }
    )


def swap_config() -> Config:
    """Grace Hopper's face onto the animated astronaut (the frames test_controls knows)."""
    return Config.from_dict(
        {
            "source": {**SYNTHETIC, "fps": 30},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg")},
        }
    )


def open_window(qtbot: QtBot, settings: UiSettings, config: Config) -> MainWindow:
    settings.save_config(config)
    stream = StreamController(Config())  # the window loads the saved config into it
    window = MainWindow(stream, settings)
    qtbot.addWidget(window)
    window.show()
    return window


@pytest.fixture
def closing() -> Iterator[list[MainWindow]]:
    """Windows to close after the test (their streams stop even when an assert failed)."""
    windows: list[MainWindow] = []
    yield windows
    for window in windows:
        window.close()


def click(qtbot: QtBot, button: object) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def click_start(qtbot: QtBot, window: MainWindow) -> None:
    """Click Start/Stop; a start runs on a worker thread: wait until it ran or failed."""
    click(qtbot, window.start_button)
    qtbot.waitUntil(lambda: not window.stream.starting, timeout=TIMEOUT_MS)


def test_start_preview_stats_stop_from_the_window(
    qtbot: QtBot, settings: UiSettings, closing: list[MainWindow]
) -> None:
    window = open_window(qtbot, settings, passthrough_config())
    closing.append(window)
    assert window.stream.config == settings.config  # loaded at start
    stats = window.panels["Stats"]
    assert isinstance(stats, StatsPanel)
    click_start(qtbot, window)
    assert window.stream.running and window.start_button.text() == "Stop"
    assert window.message.isHidden()
    qtbot.waitUntil(lambda: window.preview.frames_painted >= 5, timeout=TIMEOUT_MS)
    shown = window.preview.frame
    assert shown is not None and shown.shape == (240, 320, 3) and shown.any()
    # the stats reach the status bar and the Stats panel, and the graph grows
    qtbot.waitUntil(lambda: stats.updates >= 3, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: float(stats.values["fps"].split(" / ")[1]) > 0, timeout=TIMEOUT_MS)
    assert set(stats.values) == set(FIELDS) and len(stats.history) >= 3
    assert stats.values["latency"].endswith(" ms")
    assert float(stats.values["rss"].split()[0]) > 50  # a Python process with Qt and NumPy
    assert window.fps_label.text().startswith("fps ") and "n/a" not in window.fps_label.text()
    assert window.vcam_label.text() == "virtual camera: off"  # the null sink only
    click_start(qtbot, window)
    assert not window.stream.running and window.start_button.text() == "Start"
    assert window.preview.frame is None  # the idle text again


def test_the_swap_switch_with_no_face_photo_says_where_to_choose_one(
    qtbot: QtBot, settings: UiSettings, closing: list[MainWindow]
) -> None:
    window = open_window(qtbot, settings, passthrough_config())
    closing.append(window)
    assert not window.swap_button.isChecked()
    click(qtbot, window.swap_button)
    assert not window.swap_button.isChecked() and "swap" not in window.stream.config.pipeline.stages
    assert "Source tab" in window.message.text() and "swap.face" not in window.message.text()


def test_the_swap_switch_changes_the_output_frames(
    qtbot: QtBot, settings: UiSettings, closing: list[MainWindow]
) -> None:
    window = open_window(qtbot, settings, swap_config())
    closing.append(window)
    plain = source_frames()  # every frame the source sends, unswapped
    frames: list[np.ndarray] = []
    window.stream.frame.connect(frames.append)
    click_start(qtbot, window)
    assert window.swap_button.isChecked() and window.swap_button.text() == "Swap: on"
    qtbot.waitUntil(lambda: len(frames) >= 4, timeout=TIMEOUT_MS)
    assert not any(passed_through(f, plain) for f in frames[-3:]), "the face is swapped"

    with qtbot.waitSignal(window.stream.applied, timeout=TIMEOUT_MS):
        click(qtbot, window.swap_button)
    assert not window.swap_button.isChecked() and window.swap_button.text() == "Swap: off"
    start = len(frames)
    qtbot.waitUntil(lambda: len(frames) >= start + 5, timeout=TIMEOUT_MS)
    # skip the first two: they may have left the inference thread before the change
    assert all(passed_through(f, plain) for f in frames[start + 2 :]), "camera frames pass"
    assert window.preview.frame is not None and passed_through(window.preview.frame, plain)

    with qtbot.waitSignal(window.stream.applied, timeout=TIMEOUT_MS):
        click(qtbot, window.swap_button)
    assert window.swap_button.isChecked()
    start = len(frames)
    qtbot.waitUntil(lambda: len(frames) >= start + 5, timeout=TIMEOUT_MS)
    assert not any(passed_through(f, plain) for f in frames[start + 2 :])


def test_a_start_error_is_shown_and_the_window_stays_usable(
    qtbot: QtBot, settings: UiSettings, closing: list[MainWindow]
) -> None:
    cfg = passthrough_config().with_section("pipeline", stages=("swap",))  # no face given
    window = open_window(qtbot, settings, cfg)
    closing.append(window)
    click_start(qtbot, window)
    assert not window.stream.running and window.start_button.text() == "Start"
    text = window.message.text()
    assert window.message.isVisible()
    assert text.splitlines()[0] == (
        "Could not start: the swap needs a photo of the face to swap in, and none is chosen"
    )
    assert "\nfix: pick a face photo in the Source tab" in text and "Traceback" not in text
    assert "swap.face" not in text and "--face" not in text  # the panel's words, not a config's
    # the window stays usable: switch the swap off (stopped: in the config) and start
    click(qtbot, window.swap_button)
    assert window.stream.config.pipeline.stages == ("passthrough",)
    click_start(qtbot, window)
    assert window.stream.running and window.message.isHidden()
    qtbot.waitUntil(lambda: window.preview.frames_painted >= 2, timeout=TIMEOUT_MS)


def with_face_swap_off() -> Config:
    """A face chosen, the swap off (no swap stage): the Swap switch may be clicked."""
    return passthrough_config().with_section("swap", face=str(ASSETS / "grace_hopper.jpg"))


def test_a_live_change_that_fails_is_shown_and_the_stream_goes_on(
    qtbot: QtBot, settings: UiSettings, closing: list[MainWindow]
) -> None:
    window = open_window(qtbot, settings, with_face_swap_off())
    closing.append(window)
    click_start(qtbot, window)
    with qtbot.waitSignal(window.stream.failed, timeout=TIMEOUT_MS):
        click(qtbot, window.swap_button)  # no swap stage in this stream
    assert window.message.text().startswith("swap on: ")
    assert not window.swap_button.isChecked()  # back to the stream's real state
    painted = window.preview.frames_painted
    qtbot.waitUntil(lambda: window.preview.frames_painted > painted + 2, timeout=TIMEOUT_MS)
    assert window.stream.running


def test_settings_round_trip_through_the_window_and_close_stops_the_stream(
    qtbot: QtBot, settings: UiSettings
) -> None:
    window = open_window(qtbot, settings, with_face_swap_off())
    window.setGeometry(40, 50, 1000, 640)
    click(qtbot, window.swap_button)  # stopped: the config gets the swap stage, saved at once
    assert Config.load(settings.config_path).pipeline.stages == ("swap",)
    click(qtbot, window.swap_button)
    assert Config.load(settings.config_path).pipeline.stages == ("passthrough",)
    click_start(qtbot, window)
    qtbot.waitUntil(lambda: window.preview.frames_painted >= 2, timeout=TIMEOUT_MS)
    app = window.stream.app
    assert app is not None
    size = [window.width(), window.height()]
    assert size[0] == 1000
    window.close()
    assert not window.stream.running and not app.running and window.stuck_threads == []
    panel = tomllib.loads(settings.panel_path.read_text(encoding="utf-8"))
    assert panel["geometry"][2:] == size

    again = UiSettings(settings.folder)
    assert again.config == with_face_swap_off()
    reopened = MainWindow(StreamController(Config()), again)
    qtbot.addWidget(reopened)
    assert reopened.stream.config == with_face_swap_off()
    # the saved geometry, fitted into the screen (the offscreen test screen is 800 px wide:
    # the 1000 px are shrunk to it)
    fitted = fit_rect(QRect(*panel["geometry"]), reopened.screen().availableGeometry())
    assert reopened.geometry() == fitted and reopened.height() == size[1]
    reopened.close()


def test_missing_panels_are_placeholders_and_a_broken_one_does_not_stop_the_window(
    qtbot: QtBot, settings: UiSettings
) -> None:
    specs = (
        PanelSpec("Nowhere", "no_such_panel", "NoSuchPanel"),
        PanelSpec("Broken", "stats_panel", "NotAClass"),
        PanelSpec("Stats", "stats_panel", "StatsPanel"),
    )
    window = MainWindow(StreamController(Config()), settings, specs)
    qtbot.addWidget(window)
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == [
        "Nowhere",
        "Broken",
        "Stats",
    ]
    assert "not available" in window.panels["Nowhere"].text()  # type: ignore[attr-defined]
    assert "failed to open" in window.panels["Broken"].text()  # type: ignore[attr-defined]
    assert isinstance(window.panels["Stats"], StatsPanel)
    assert [p.title for p in PANELS][-1] == "Stats"
    window.close()


class OneGpu:
    """A GPU reading as NVML gives it (this machine has no NVIDIA GPU)."""

    def snapshot(self) -> GpuSnapshot:
        return GpuSnapshot(0, "NVIDIA H200", 2048.0, 143771.0, 37.0, "550.54")


def test_a_provider_fallback_and_the_gpu_are_shown(qtbot: QtBot, settings: UiSettings) -> None:
    window = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(window)
    telemetry = Telemetry(gpu_reader=OneGpu())
    telemetry.set_provider("swap", "CUDAExecutionProvider", "CPUExecutionProvider", "no libcudnn")
    telemetry.set_provider("enhance", "CPUExecutionProvider", "CPUExecutionProvider")
    window.stream.stats.emit(telemetry.snapshot())
    label = window.provider_label
    assert "swap=CPUExecutionProvider (FALLBACK, wanted CUDAExecutionProvider)" in label.text()
    assert "enhance=CPUExecutionProvider" in label.text()
    assert "bold" in label.styleSheet() and label.toolTip() == "swap: no libcudnn"
    gpu = window.panels["Stats"].values["gpu"]  # type: ignore[attr-defined]
    assert gpu == "VRAM 2048/143771MB (whole GPU), 37 % busy"
    window.close()


def test_a_warning_longer_than_the_status_bar_is_whole_in_its_tooltip(
    qtbot: QtBot, settings: UiSettings
) -> None:
    """The status bar cuts a long warning at its width (mid-word): its tooltip holds the
    whole text, fix included (issue 26)."""
    window = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(window)
    window.show()
    words = " ".join(f"word{i}" for i in range(80))
    window.stream.event_received.emit(Event("warning", "swap", words, hint="move closer"))
    bar = window.statusBar()
    whole = f"swap: {words} (fix: move closer)"
    assert bar.fontMetrics().horizontalAdvance(whole) > bar.width()  # the bar cuts it
    assert bar.currentMessage() == whole and bar.toolTip() == whole
    window.close()


def answer(dialog: NoticeDialog, accept: bool) -> None:
    """Press the dialog's button once its event loop runs."""
    button = dialog.accept_button if accept else dialog.decline_button
    QTimer.singleShot(0, button.click)


def test_the_notice_is_acknowledged_once_and_declining_says_close(
    qtbot: QtBot, settings: UiSettings
) -> None:
    declined = NoticeDialog()
    qtbot.addWidget(declined)
    answer(declined, accept=False)
    assert acknowledge(settings, declined) is False
    assert not settings.panel_path.exists() and not settings.panel.notice_acknowledged

    accepted = NoticeDialog()
    qtbot.addWidget(accepted)
    answer(accepted, accept=True)
    assert acknowledge(settings, accepted) is True
    assert UiSettings(settings.folder).panel.notice_acknowledged  # saved

    never = NoticeDialog()  # once acknowledged it is not shown: this would decline
    qtbot.addWidget(never)
    answer(never, accept=False)
    assert acknowledge(UiSettings(settings.folder), never) is True


@contextlib.contextmanager
def panel_process(display: str, folder: Path) -> Iterator[subprocess.Popen[str]]:
    """``python -m livecam`` (no arguments) on ``display`` with its settings in ``folder``;
    killed at the end if it is still running."""
    env = {
        **os.environ,
        "DISPLAY": display,
        "QT_QPA_PLATFORM": "xcb",
        "LIVECAM_CONFIG_DIR": str(folder),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "livecam"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_livecam_with_no_arguments_opens_the_panel_on_xvfb(xvfb: str, tmp_path: Path) -> None:
    require_windows(xvfb)
    folder = tmp_path / "config"
    settings = UiSettings(folder)
    settings.panel.notice_acknowledged = True
    settings.save_panel()
    settings.save_config(passthrough_config())
    with panel_process(xvfb, folder) as proc:
        wid, (_, _, w, h) = wait_window(xvfb, "^LiveCam$")
        assert w > 300 and h > 200
        press(xvfb, wid, "ctrl+q")
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "Traceback" not in out
    assert len(UiSettings(folder).panel.geometry) == 4  # saved at the close


def test_the_first_start_asks_for_the_notice_on_xvfb(xvfb: str, tmp_path: Path) -> None:
    require_windows(xvfb)
    folder = tmp_path / "config"
    with panel_process(xvfb, folder) as proc:
        wid, _ = wait_window(xvfb, "use it responsibly")
        press(xvfb, wid, "Return")  # the default button: "I understand"
        main, _ = wait_window(xvfb, "^LiveCam$")
        press(xvfb, main, "ctrl+q")
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert UiSettings(folder).panel.notice_acknowledged


def test_livecam_without_a_display_is_a_one_line_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    env["LIVECAM_CONFIG_DIR"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "livecam"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("error: cannot open the LiveCam panel: neither DISPLAY")
    assert lines[1].startswith("  fix: run `livecam` in a desktop session")
    assert "Traceback" not in proc.stderr and "qt.qpa" not in proc.stderr
