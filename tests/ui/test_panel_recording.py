"""Recordings made from the panel: signed like ``livecam run``'s (the app builds the sinks
with its provenance) and checked with the panel's own Verify a file…; the REC timer
counts from each recording's start; a file name without a video suffix takes the one of
the chosen file type, and a start that fails for any cause leaves Start usable.

A real stream: the synthetic face-motion clip (the astronaut) with the lite swap of Grace
Hopper into the null sink and a recording, in the real window on Xvfb."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog
from pytestqt.qtbot import QtBot
from synthetic_stream import SYNTHETIC

from livecam.config.schema import Config
from ui.main_window import MainWindow
from ui.panels.output_panel import OutputPanel
from ui.settings import UiSettings
from ui.stream import StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"
FACE = ASSETS / "grace_hopper.jpg"
TIMEOUT_MS = 30000  # generous: a start loads models on a loaded machine


def config(*sinks: str) -> Config:
    return Config.from_dict(
        {
            "source": {**SYNTHETIC, "size": [320, 240], "fps": 30},
            "output": {"sinks": ["null", *sinks]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(FACE)},
        }
    )


def window_for(qtbot: QtBot, settings: UiSettings, cfg: Config) -> MainWindow:
    settings.save_config(cfg)
    window = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(window)
    window.show()
    return window


def click_start(qtbot: QtBot, window: MainWindow) -> None:
    """Click Start/Stop; a start runs on a worker thread: wait until it ran or failed."""
    qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.stream.starting, timeout=TIMEOUT_MS)


def record_once(qtbot: QtBot, window: MainWindow) -> tuple[Path, float]:
    """Start, record until REC shows and 20 frames went out, stop: the file and when the
    start was clicked (``time.monotonic``)."""
    clicked = time.monotonic()
    click_start(qtbot, window)
    assert window.stream.running, window.message.text()
    app = window.stream.app
    assert app is not None
    qtbot.waitUntil(lambda: window.rec_label.isVisible(), timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: app.snapshot().frames_out >= 20, timeout=TIMEOUT_MS)
    (written,) = window.live_view.recordings
    since = window.live_view.recording_since
    assert since is not None and since >= clicked  # REC counts from this recording's start
    click_start(qtbot, window)
    assert not window.stream.running and written.is_file()
    return written, since


def test_panel_recordings_are_signed_and_rec_counts_from_each_start(
    qtbot: QtBot, settings: UiSettings, tmp_path: Path
) -> None:
    window = window_for(qtbot, settings, config(str(tmp_path / "take.mp4")))
    try:
        first, first_since = record_once(qtbot, window)
        second, second_since = record_once(qtbot, window)  # the file exists: a new name
        output = window.panels["Output"]
        assert isinstance(output, OutputPanel)
        for recording in (first, second):
            with qtbot.waitSignal(output.verified, timeout=TIMEOUT_MS) as verified:
                output.verify_file(str(recording))
            report = output.verify_report.text()
            assert verified.args == [0], report
            assert "C2PA manifest: present, signature valid" in report, report
            assert "AI action: c2pa.edited" in report, report
    finally:
        window.close()
    assert first != second and second_since > first_since


def test_a_file_name_without_a_suffix_takes_the_chosen_type(
    qtbot: QtBot, settings: UiSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = StreamController(config())
    panel = OutputPanel(stream, settings)
    qtbot.addWidget(panel)
    chosen = str(tmp_path / "panel_avi")
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", lambda *a, **k: (chosen, "AVI video (no sound) (*.avi)")
    )
    panel.record.setChecked(True)  # no file yet: the dialog opens
    assert panel.record_path.text() == chosen + ".avi"
    assert stream.config.output.sinks == (chosen + ".avi",)
    panel.record_path.setText(str(tmp_path / "typed_mp4"))  # typed by hand: said, not used
    panel.record_path.editingFinished.emit()
    assert "typed_mp4 is not a video file name" in panel.message.text()
    assert stream.config.output.sinks == ("null",)


def test_a_start_that_fails_leaves_start_usable(
    qtbot: QtBot, settings: UiSettings, tmp_path: Path
) -> None:
    """An output the app cannot build (a config edited by hand, an older panel's file
    name) is a start error in the window, not a wedged "Starting…"."""
    window = window_for(qtbot, settings, config(str(tmp_path / "panel_avi")))
    try:
        click_start(qtbot, window)
        assert not window.stream.running and not window.stream.starting
        assert "unknown output sink" in window.message.text(), window.message.text()
        assert window.start_button.isEnabled() and window.start_button.text() == "Start"
        window.stream.set_config(config(str(tmp_path / "panel.avi")))
        click_start(qtbot, window)
        assert window.stream.running, window.message.text()
        app = window.stream.app
        assert app is not None
        # frames reached the outputs (a loaded machine may take a while), then close
        qtbot.waitUntil(lambda: app.snapshot().frames_out >= 3, timeout=30000)
    finally:
        window.close()
    assert (tmp_path / "panel.avi").is_file()
