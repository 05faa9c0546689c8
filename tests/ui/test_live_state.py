"""The window shows the stream's true state, whoever changed it: every switch is changed
from OUTSIDE the window (the control plane, the hotkey handlers, real global hotkeys sent
with xdotool while another X window has the focus) and the window's Swap, Blank and Freeze
buttons, the preview's badges (widget state and rendered pixels), the status bar, the
Source tab's face, the Processing tab's preset and the target line follow. Blank and Freeze
work from their buttons; the REC indicator names the file really written.

A real stream: the synthetic face-motion clip (the astronaut) with the lite swap of Grace
Hopper, into the null sink (and a recording)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QPushButton
from pytestqt.qtbot import QtBot
from synthetic_stream import SYNTHETIC
from xwindow import require_windows, wait_window, xdotool

from livecam.config.schema import Config
from livecam.control.controls import Controls
from livecam.control.hotkeys import HotkeyActions
from livecam.models.store import ModelStore
from ui.main_window import MainWindow
from ui.panels.hotkeys_panel import HotkeysPanel
from ui.panels.processing_panel import ProcessingPanel
from ui.panels.source_panel import SourcePanel
from ui.preview_widget import BADGE_COLOUR, FACE_COLOUR
from ui.settings import UiSettings
from ui.stream import LiveView, StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"
FACE = ASSETS / "grace_hopper.jpg"
OTHER_FACE = ASSETS / "astronaut.png"
TIMEOUT_MS = 30000  # generous: a start or a rebuild loads models on a loaded machine


def config(hotkeys: dict[str, Any] | None = None, **output: Any) -> Config:
    return Config.from_dict(
        {
            "source": {**SYNTHETIC, "fps": 30},
            "output": {"sinks": ["null"], **output},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(FACE), "select": "one"},
            "hotkeys": hotkeys or {},
        }
    )


def started(qtbot: QtBot, settings: UiSettings, cfg: Config) -> MainWindow:
    settings.save_config(cfg)
    window = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.stream.running, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: window.preview.frames_painted >= 2, timeout=TIMEOUT_MS)
    return window


@pytest.fixture
def window(qtbot: QtBot, settings: UiSettings) -> Iterator[MainWindow]:
    running = started(qtbot, settings, config())
    yield running
    running.close()


def controls_of(window: MainWindow) -> Controls:
    controls = window.stream.controls
    assert controls is not None
    return controls


def badge_pixels(window: MainWindow) -> list[QColor]:
    """The rendered preview's colour inside each badge (its left edge, mid height)."""
    image = window.preview.grab().toImage()  # paints the widget: badge_rects are fresh
    rects = window.preview.badge_rects
    return [image.pixelColor(r.x() + 4, r.y() + r.height() // 2) for r in rects]


def shows_switches(window: MainWindow, swap: bool, blank: bool, frozen: bool) -> bool:
    """The Swap, Blank and Freeze buttons are checked as given; Swap says it."""
    return (
        window.swap_button.isChecked() == swap
        and window.swap_button.text() == f"Swap: {'on' if swap else 'off'}"
        and window.blank_button.isChecked() == blank
        and window.freeze_button.isChecked() == frozen
    )


def test_swap_blank_and_freeze_changed_through_the_controls_show_everywhere(
    qtbot: QtBot, window: MainWindow
) -> None:
    controls = controls_of(window)
    processing = window.panels["Processing"]
    assert isinstance(processing, ProcessingPanel)
    assert shows_switches(window, swap=True, blank=False, frozen=False)
    assert window.preview.badges == () and window.badge_label.isHidden()
    assert window.blank_button.isEnabled() and window.freeze_button.isEnabled()

    controls.set_swap(False)  # no click: the control plane, as the API and hotkeys do
    qtbot.waitUntil(lambda: shows_switches(window, False, False, False), timeout=TIMEOUT_MS)
    assert window.preview.badges == ("SWAP OFF",)
    assert window.badge_label.text() == "SWAP OFF" and window.badge_label.isVisible()
    assert not processing.swap_on.isChecked()

    controls.set_blank(True)
    controls.set_freeze(True)
    qtbot.waitUntil(lambda: shows_switches(window, False, True, True), timeout=TIMEOUT_MS)
    assert window.preview.badges == ("BLANK", "FROZEN", "SWAP OFF")
    assert window.badge_label.text() == "BLANK  FROZEN  SWAP OFF"
    assert [c.name() for c in badge_pixels(window)] == [BADGE_COLOUR.name()] * 3

    for change in (controls.set_swap(True), controls.set_blank(False), controls.set_freeze(False)):
        change.wait(10)
    qtbot.waitUntil(lambda: shows_switches(window, True, False, False), timeout=TIMEOUT_MS)
    assert window.preview.badges == () and window.badge_label.isHidden()
    assert badge_pixels(window) == [] and processing.swap_on.isChecked()


def test_blank_and_freeze_buttons_switch_the_stream_and_show_their_badges(
    qtbot: QtBot, window: MainWindow
) -> None:
    controls = controls_of(window)
    qtbot.mouseClick(window.blank_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: controls.state.blank, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: window.preview.badges == ("BLANK",), timeout=TIMEOUT_MS)
    assert window.blank_button.isChecked()
    # the output is black: the preview shows the black frame under a red BLANK badge
    qtbot.waitUntil(
        lambda: window.preview.frame is not None and not window.preview.frame.any(),
        timeout=TIMEOUT_MS,
    )
    image = window.preview.grab().toImage()
    (badge,) = window.preview.badge_rects
    assert image.pixelColor(badge.x() + 4, badge.center().y()) == BADGE_COLOUR
    row = [image.pixelColor(x, badge.center().y()) for x in range(badge.x(), badge.right())]
    assert any(c.lightness() > 200 for c in row)  # its white text
    middle = image.pixelColor(window.preview.width() // 2, window.preview.height() // 2)
    assert (middle.red(), middle.green(), middle.blue()) == (0, 0, 0)  # the blanked frame
    assert window.badge_label.text() == "BLANK"

    qtbot.mouseClick(window.freeze_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: controls.state.frozen, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: window.preview.badges == ("BLANK", "FROZEN"), timeout=TIMEOUT_MS)
    assert window.freeze_button.isChecked()

    qtbot.mouseClick(window.blank_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(window.freeze_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: not controls.state.blank and not controls.state.frozen, timeout=TIMEOUT_MS
    )
    qtbot.waitUntil(lambda: window.preview.badges == (), timeout=TIMEOUT_MS)
    qtbot.waitUntil(
        lambda: window.preview.frame is not None and bool(window.preview.frame.any()),
        timeout=TIMEOUT_MS,
    )  # the camera again
    assert not window.blank_button.isChecked() and not window.freeze_button.isChecked()


def click_through_the_window(window: MainWindow, button: QPushButton) -> None:
    """Click ``button`` as the window system delivers a click: to the window, where a modal
    dialog would block it (a click sent to the widget itself passes any modal dialog)."""
    handle = window.windowHandle()
    assert handle is not None
    centre = button.mapTo(window, button.rect().center())
    QTest.mouseClick(handle, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)


def test_blank_and_freeze_work_while_a_model_download_dialog_is_open(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    controls = controls_of(window)
    processing = window.panels["Processing"]
    assert isinstance(processing, ProcessingPanel)
    # no standard models here: picking the preset while streaming opens the download dialog
    processing.store = ModelStore(models_dir=tmp_path / "models", data_dir=tmp_path / "data")
    processing.preset.setCurrentIndex(processing.preset.findData("standard"))
    processing.preset.activated.emit(processing.preset.currentIndex())
    dialog = processing.dialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=TIMEOUT_MS)
    assert QApplication.activeModalWidget() is None

    click_through_the_window(window, window.blank_button)
    qtbot.waitUntil(lambda: controls.state.blank, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: window.preview.badges == ("BLANK",), timeout=TIMEOUT_MS)
    click_through_the_window(window, window.freeze_button)
    qtbot.waitUntil(lambda: controls.state.frozen, timeout=TIMEOUT_MS)
    click_through_the_window(window, window.blank_button)
    click_through_the_window(window, window.freeze_button)
    qtbot.waitUntil(
        lambda: not controls.state.blank and not controls.state.frozen, timeout=TIMEOUT_MS
    )
    assert dialog.isVisible() and processing.dialog is dialog  # still open, untouched

    with qtbot.waitSignal(dialog.rejected, timeout=TIMEOUT_MS):
        dialog.cancel_button.click()
    assert processing.dialog is None and controls.config.swap.preset == "lite"
    assert processing.preset.currentData() == "lite"  # nothing changed


def test_face_preset_and_target_changed_outside_the_panel_are_shown(
    qtbot: QtBot, window: MainWindow
) -> None:
    controls = controls_of(window)
    source, processing = window.panels["Source"], window.panels["Processing"]
    assert isinstance(source, SourcePanel) and isinstance(processing, ProcessingPanel)
    # the next face hotkey's handler (the key press itself: the X test below)
    actions = HotkeyActions(controls, faces=[str(OTHER_FACE)], report=lambda e: None)
    face = actions.run("next_face")
    assert face is not None and face.wait(TIMEOUT_MS / 1000).config.swap.face == str(OTHER_FACE)
    qtbot.waitUntil(
        lambda: source.faces is not None and source.faces.path.absolute() == OTHER_FACE,
        timeout=TIMEOUT_MS,
    )
    assert source.face_index == 0 and source.picker.currentIndex() == 0
    assert "astronaut.png" in source.message.text()
    # the window names the face in use too (issue 26: which one N/P picked)
    qtbot.waitUntil(
        lambda: window.face_label.text() == f"Face in use: {OTHER_FACE.name}", timeout=TIMEOUT_MS
    )
    assert controls.config.swap.face == str(OTHER_FACE)  # shown, nothing applied again

    assert processing.preset.currentData() == "lite"
    controls.set_preset("offline").wait(TIMEOUT_MS / 1000)
    qtbot.waitUntil(lambda: processing.preset.currentData() == "offline", timeout=TIMEOUT_MS)

    # the target: the person nearest the frame's centre, picked through the control plane
    qtbot.waitUntil(lambda: controls.state.swap_check is not None, timeout=TIMEOUT_MS)
    controls.set_target((0.5, 0.5)).wait(10)
    qtbot.waitUntil(lambda: "face #" in window.target_label.text(), timeout=TIMEOUT_MS)
    assert controls.state.target_text in window.target_label.text()
    controls.set_target(None).wait(10)
    qtbot.waitUntil(lambda: "auto" in window.target_label.text(), timeout=TIMEOUT_MS)


def test_the_preview_numbers_the_faces_a_click_can_pick_while_the_pointer_is_over_it(
    qtbot: QtBot, window: MainWindow
) -> None:
    controls = controls_of(window)
    preview = window.preview
    qtbot.waitUntil(lambda: bool(controls.state.faces_seen), timeout=TIMEOUT_MS)
    assert not preview.choosing and preview.face_labels == []  # not while the pointer is away
    QTest.mouseMove(preview, preview.rect().center())
    qtbot.waitUntil(lambda: preview.choosing and bool(preview.face_labels), timeout=TIMEOUT_MS)
    image = preview.grab().toImage()  # paints: face_labels are fresh
    seen = {f"#{face.track_id}" for face in controls.state.faces_seen}
    assert {text for text, _ in preview.face_labels} & seen, (preview.face_labels, seen)
    for _text, label in preview.face_labels:
        assert image.pixelColor(label.x() + 1, label.center().y()) == FACE_COLOUR

    # the number shown is the one a click on that face picks ("Swapping: face #N")
    text, label = preview.face_labels[0]
    face = next(f for f in controls.state.faces_seen if f"#{f.track_id}" == text)
    x1, y1, x2, y2 = face.box
    controls.set_target(((x1 + x2) / 2, (y1 + y2) / 2)).wait(10)
    qtbot.waitUntil(lambda: f"face {text}" in window.target_label.text(), timeout=TIMEOUT_MS)

    QApplication.sendEvent(preview, QEvent(QEvent.Type.Leave))  # the pointer leaves
    preview.grab()
    assert not preview.choosing and preview.face_labels == []


# --- real global hotkeys while another X window has the focus -------------------------------
@pytest.fixture
def display(xvfb: str, monkeypatch: pytest.MonkeyPatch) -> str:
    require_windows(xvfb)
    monkeypatch.setenv("DISPLAY", xvfb)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("XDG_SESSION_TYPE", "x11")
    return xvfb


def keys(combo: str) -> str:
    """xdotool's form of a binding: ``Ctrl+Alt+Shift+S`` -> ``ctrl+alt+shift+s``."""
    return "+".join(part.lower() for part in combo.split("+"))


def test_a_global_hotkey_typed_in_another_app_flips_the_swap_button_and_badge(
    qtbot: QtBot, settings: UiSettings, display: str
) -> None:
    window = started(qtbot, settings, config(hotkeys={"faces": [str(OTHER_FACE)]}))
    other = subprocess.Popen(
        ["xmessage", "-display", display, "-name", "otherapp", "another app has the focus"],
        env={**os.environ, "DISPLAY": display},
    )
    try:
        hotkeys = window.panels["Hotkeys"]
        assert isinstance(hotkeys, HotkeysPanel)
        qtbot.waitUntil(
            lambda: hotkeys.listener is not None and hotkeys.listener.running,
            timeout=TIMEOUT_MS,
        )
        wid, _ = wait_window(display, "otherapp|xmessage")
        xdotool(display, "windowfocus", "--sync", wid)
        assert xdotool(display, "getwindowfocus").strip() == wid  # not the panel's

        bindings = window.stream.config.hotkeys
        xdotool(display, "key", "--clearmodifiers", keys(bindings.swap))
        qtbot.waitUntil(lambda: window.swap_button.text() == "Swap: off", timeout=TIMEOUT_MS)
        assert not window.swap_button.isChecked()
        assert window.preview.badges == ("SWAP OFF",) and window.badge_label.text() == "SWAP OFF"
        assert [c.name() for c in badge_pixels(window)] == [BADGE_COLOUR.name()]

        xdotool(display, "key", "--clearmodifiers", keys(bindings.blank))
        qtbot.waitUntil(lambda: window.blank_button.isChecked(), timeout=TIMEOUT_MS)
        assert window.preview.badges == ("BLANK", "SWAP OFF")

        xdotool(display, "key", "--clearmodifiers", keys(bindings.swap))
        xdotool(display, "key", "--clearmodifiers", keys(bindings.blank))
        qtbot.waitUntil(lambda: window.swap_button.text() == "Swap: on", timeout=TIMEOUT_MS)
        qtbot.waitUntil(lambda: window.preview.badges == (), timeout=TIMEOUT_MS)
        assert window.swap_button.isChecked() and not window.blank_button.isChecked()

        xdotool(display, "key", "--clearmodifiers", keys(bindings.freeze))
        qtbot.waitUntil(lambda: window.preview.badges == ("FROZEN",), timeout=TIMEOUT_MS)
        assert window.freeze_button.isChecked()
        xdotool(display, "key", "--clearmodifiers", keys(bindings.freeze))
        qtbot.waitUntil(lambda: not window.freeze_button.isChecked(), timeout=TIMEOUT_MS)

        source = window.panels["Source"]
        assert isinstance(source, SourcePanel)
        xdotool(display, "key", "--clearmodifiers", keys(bindings.next_face))
        qtbot.waitUntil(
            lambda: source.faces is not None and source.faces.path.absolute() == OTHER_FACE,
            timeout=TIMEOUT_MS,
        )
        assert window.stream.config.swap.face == str(OTHER_FACE)
    finally:
        other.terminate()
        other.wait(10)
        window.close()


# --- the REC indicator ----------------------------------------------------------------------
def test_rec_shows_the_elapsed_time_and_the_file_really_written(
    qtbot: QtBot, settings: UiSettings, tmp_path: Path, testdata: Path
) -> None:
    chosen = tmp_path / "show.mp4"
    shutil.copy(testdata / "video" / "liveportrait_d6.mp4", chosen)  # an older recording
    older = chosen.read_bytes()  # the name is taken: the recorder picks a new one
    window = started(qtbot, settings, config(sinks=["null", str(chosen)]))
    try:
        qtbot.waitUntil(lambda: window.rec_label.isVisible(), timeout=TIMEOUT_MS)
        (written,) = window.live_view.recordings
        assert written != chosen and written.parent == tmp_path
        assert re.fullmatch(r"show-\d{8}-\d{6}(-\d+)?\.mp4", written.name), written.name
        assert re.fullmatch(
            rf"\u25cf REC 00:\d\d {re.escape(written.name)} \(no sound\)",
            window.rec_label.text(),
        )
        assert str(written) in window.rec_label.toolTip()
        assert "records the picture only" in window.rec_label.toolTip()
    finally:
        window.close()
    assert window.rec_label.isHidden()
    assert chosen.read_bytes() == older  # never replaced
    assert written.stat().st_size > 1000  # the file the panel named is the recording


def test_rec_text_counts_minutes_and_hours() -> None:
    view = LiveView(True, True, recordings=(Path("/x/a.mkv"),), recording_since=100.0)
    # a live run records the picture only: the line says so (issue 26: .avi, no sound)
    assert view.recording_text(now=107.9) == "REC 00:07 a.mkv (no sound)"
    assert view.recording_text(now=100 + 3725) == "REC 1:02:05 a.mkv (no sound)"
    assert LiveView(True, True).recording_text(now=5) == ""
    assert LiveView(False, False).badges == ()  # stopped: the idle preview has none
    assert LiveView(True, False, blank=True).badges == ("BLANK", "SWAP OFF")
