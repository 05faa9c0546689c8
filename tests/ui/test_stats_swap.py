"""The Stats tab shows the live swap check: Grace Hopper's face on the animated astronaut
with the lite preset (real models, real stream, null sink) reads as a swap that takes."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot
from synthetic_stream import SYNTHETIC

from livecam.config.schema import Config
from ui.main_window import MainWindow
from ui.panels.stats_panel import StatsPanel
from ui.settings import UiSettings
from ui.stream import StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"
TIMEOUT_MS = 60000


def test_the_stats_tab_shows_the_swap_strength(
    qtbot: QtBot, settings: UiSettings, testdata: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVECAM_MODELS_DIR", str(testdata / "models"))  # lite, until bundled
    config = Config.from_dict(
        {
            "source": {**SYNTHETIC, "fps": 30},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg"), "preset": "lite"},
        }
    )
    settings.save_config(config)
    window = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(window)
    window.show()
    stats = window.panels["Stats"]
    assert isinstance(stats, StatsPanel)
    try:
        qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not window.stream.starting, timeout=TIMEOUT_MS)
        assert window.stream.running
        qtbot.waitUntil(lambda: "/100" in stats.values.get("swap", ""), timeout=TIMEOUT_MS)
        text = stats.values["swap"]
        strength = int(text.split("/100")[0])
        assert 50 <= strength <= 100 and "NOT TAKING" not in text, text
        assert "cos to source" in text and "to camera" in text
    finally:
        window.close()
