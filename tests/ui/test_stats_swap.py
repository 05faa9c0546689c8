"""The Stats tab shows the live swap check: Grace Hopper's face on the animated astronaut
with the lite preset (real models, real stream, null sink) reads as a swap that takes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot
from synthetic_stream import SYNTHETIC

from livecam.config.schema import Config
from livecam.telemetry.hub import Telemetry
from livecam.types import FramePacket
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


def test_the_latency_graph_draws_p99_beside_p50(qtbot: QtBot, settings: UiSettings) -> None:
    telemetry = Telemetry()
    for i in range(100):  # latencies 1..100 ms: p50 about 50, p99 about 99
        packet = FramePacket(np.zeros((4, 4, 3), np.uint8), i, t_capture_ns=0)
        telemetry.frame_out(packet, t_sent_ns=(i + 1) * 1_000_000)
    stats = StatsPanel(StreamController(Config()), settings)
    qtbot.addWidget(stats)
    stats.show_snapshot(telemetry.snapshot())
    _, _, _, p50, p99 = stats.history[-1]
    assert 45 <= p50 <= 55 and 95 <= p99 <= 100
    drawn = [curve.getData()[1][-1] for curve in stats._lat_curves]
    assert drawn == [p50, p99]
