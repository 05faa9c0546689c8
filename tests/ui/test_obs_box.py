"""The panel with a real OBS (``obs`` fixture): the Output tab's OBS box shows the
connection and OBS's recording from OBS's events, the swap-off badge turns into
"ON AIR: SWAP OFF" while OBS records, and its lip-sync switch works live (off puts the
microphone's own offset back)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from obs_studio import OWN_OFFSET_MS, ObsStudio
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot
from synthetic_stream import small_config

from livecam.config.schema import Config
from livecam.obs.client import Session
from ui.main_window import MainWindow
from ui.panels.obs_box import ObsBox
from ui.panels.output_panel import OutputPanel
from ui.settings import UiSettings
from ui.stream import StreamController

TIMEOUT_MS = 30000


@pytest.fixture
def window(
    qtbot: QtBot, settings: UiSettings, obs: ObsStudio, studio: Session
) -> Iterator[MainWindow]:
    """The panel running a pass-through stream (swap off) linked to OBS."""
    obs_section = {"enabled": True, "host": "127.0.0.1", "port": obs.port, "sync_interval_s": 0.5}
    settings.save_config(small_config(obs=obs_section))
    window = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.stream.running, timeout=TIMEOUT_MS)
    yield window
    window.close()


def obs_box(window: MainWindow) -> ObsBox:
    box = window.findChild(ObsBox)
    assert box is not None
    return box


def test_on_air_shows_in_the_box_and_makes_the_swap_off_badge_loud(
    qtbot: QtBot, window: MainWindow, studio: Session
) -> None:
    box = obs_box(window)
    qtbot.waitUntil(lambda: "Connected to OBS" in box.state.text(), timeout=TIMEOUT_MS)
    assert window.badge_label.text() == "SWAP OFF"  # not on air yet
    studio.call("StartRecord")
    try:
        qtbot.waitUntil(lambda: studio.call("GetRecordStatus")["outputActive"], timeout=10000)
        qtbot.waitUntil(lambda: "ON AIR: SWAP OFF" in window.badge_label.text(), timeout=1000)
        qtbot.waitUntil(lambda: "REC" in box.state.text() and "ON AIR" in box.state.text())
    finally:
        studio.call("StopRecord")
    qtbot.waitUntil(lambda: window.badge_label.text() == "SWAP OFF", timeout=10000)


def test_the_lip_sync_switch_works_live(
    qtbot: QtBot, window: MainWindow, obs: ObsStudio, studio: Session
) -> None:
    box = obs_box(window)
    assert not box.sync_audio.isChecked()
    box.sync_audio.setChecked(True)
    qtbot.waitUntil(lambda: "audio delayed by" in box.state.text().lower(), timeout=TIMEOUT_MS)
    assert obs.offset(studio) != OWN_OFFSET_MS
    box.sync_audio.setChecked(False)
    qtbot.waitUntil(lambda: obs.offset(studio) == OWN_OFFSET_MS, timeout=10000)
    assert window.stream.running


def test_the_add_button_adds_livecam_to_the_scene_once(
    qtbot: QtBot, settings: UiSettings, obs: ObsStudio, studio: Session
) -> None:
    cfg = small_config(
        output={"virtualcam_device": "/dev/video12"},
        obs={"enabled": True, "host": "127.0.0.1", "port": obs.port},
    )
    obs.remove(studio, "LiveCam")
    panel = OutputPanel(StreamController(cfg), settings)
    qtbot.addWidget(panel)
    box = panel.obs_box
    for expected in ("added LiveCam (the virtual camera /dev/video12)", "already in"):
        qtbot.mouseClick(box.add_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda e=expected: e in box.result.text(), timeout=TIMEOUT_MS)  # type: ignore[misc]
        qtbot.waitUntil(box.add_button.isEnabled)
    scene = studio.call("GetCurrentProgramScene")["currentProgramSceneName"]
    items = studio.call("GetSceneItemList", {"sceneName": scene})["sceneItems"]
    assert [i["sourceName"] for i in items].count("LiveCam") == 1
