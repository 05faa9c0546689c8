"""Picking the swapped person in the panel: a click on a face in the preview swaps that
person (the click mapped to the frame, letterbox bars included), a right click or Auto
goes back to the main face, the line under the preview says who is swapped, and a click
far from every face picks nobody and says so in the status bar. A real
stream: the two-person testdata photo -> lite swap (select one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from pytestqt.qtbot import QtBot

from livecam.config.schema import Config
from livecam.types import Frame
from livecam.userfiles.images import load_image_bgr, make_even
from ui.main_window import NO_FACE_THERE, MainWindow
from ui.settings import UiSettings
from ui.stream import StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"
TIMEOUT_MS = 30000  # generous: a swap start loads its models on a loaded machine
TWO = "obama_biden_two_people.jpg"
# face centres in the photo, as fractions of its width and height (Obama left, the main
# face; Biden right)
LEFT, RIGHT = (0.29, 0.24), (0.78, 0.29)
FAR = (0.52, 0.85)  # between their crossed arms: far from both faces


@pytest.fixture
def window(qtbot: QtBot, settings: UiSettings, testdata: Path) -> Iterator[MainWindow]:
    cfg = Config.from_dict(
        {
            "source": {"spec": str(testdata / "faces" / TWO), "fps": 30},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg"), "select": "one"},
        }
    )
    settings.save_config(cfg)
    win = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    yield win
    win.close()


def widget_pos(window: MainWindow, frame: Frame, point: tuple[float, float]) -> QPoint:
    """Where the preview shows frame ``point``: the frame is scaled to fit, aspect kept,
    and centred between bars."""
    w, h = window.preview.width(), window.preview.height()
    scale = min(w / frame.shape[1], h / frame.shape[0])
    x0 = (w - frame.shape[1] * scale) / 2
    y0 = (h - frame.shape[0] * scale) / 2
    return QPoint(
        round(x0 + point[0] * frame.shape[1] * scale), round(y0 + point[1] * frame.shape[0] * scale)
    )


def changed(shown: Frame, original: Frame, point: tuple[float, float]) -> bool:
    """True when the output differs from the photo around ``point`` (a face swapped)."""
    x, y = int(point[0] * original.shape[1]), int(point[1] * original.shape[0])
    patch = (slice(y - 20, y + 20), slice(x - 20, x + 20))
    diff = np.abs(shown[patch].astype(int) - original[patch]).sum(axis=2)
    return bool((diff > 30).mean() > 0.3)  # the source decodes the photo a bit differently


def test_a_click_on_a_face_in_the_preview_swaps_that_person(
    qtbot: QtBot, window: MainWindow, testdata: Path
) -> None:
    photo = make_even(load_image_bgr(testdata / "faces" / TWO))
    qtbot.mouseClick(window.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.stream.running, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: window.preview.frames_painted >= 3, timeout=TIMEOUT_MS)
    preview = window.preview

    def shown() -> Frame:
        frame = preview.frame
        assert frame is not None and frame.shape == photo.shape
        return frame

    assert changed(shown(), photo, LEFT) and not changed(shown(), photo, RIGHT)
    assert window.target_label.text().startswith("Swapping: auto")
    # the preview's shape is not the photo's: bars on two sides; a click on a bar picks
    # nothing
    top, left = widget_pos(window, photo, (0.5, 0.0)), widget_pos(window, photo, (0.0, 0.5))
    bar = top - QPoint(0, 3) if top.y() > 3 else left - QPoint(3, 0)
    assert bar.x() >= 0 and bar.y() >= 0, "the test needs a letterboxed preview"
    assert preview.frame_point(QPointF(bar)) is None
    with qtbot.assertNotEmitted(window.stream.applied, wait=300):
        qtbot.mouseClick(preview, Qt.MouseButton.LeftButton, pos=bar)

    qtbot.mouseClick(preview, Qt.MouseButton.LeftButton, pos=widget_pos(window, photo, RIGHT))
    qtbot.waitUntil(lambda: "face #" in window.target_label.text(), timeout=TIMEOUT_MS)
    controls = window.stream.controls
    assert controls is not None and controls.state.swap_target is not None
    assert window.target_label.text().startswith(f"Swapping: face #{controls.state.swap_target}")
    qtbot.waitUntil(
        lambda: changed(shown(), photo, RIGHT) and not changed(shown(), photo, LEFT),
        timeout=TIMEOUT_MS,
    )

    # a click far from both faces picks nobody and the status bar says so; the person
    # picked stays
    picked = controls.state.swap_target
    assert controls.state.faces_seen and not any(
        face.reaches(FAR) for face in controls.state.faces_seen
    )
    window.statusBar().clearMessage()
    qtbot.mouseClick(preview, Qt.MouseButton.LeftButton, pos=widget_pos(window, photo, FAR))
    assert window.statusBar().currentMessage() == NO_FACE_THERE
    assert controls.state.swap_target == picked
    assert window.target_label.text().startswith(f"Swapping: face #{picked}")

    qtbot.mouseClick(preview, Qt.MouseButton.RightButton, pos=widget_pos(window, photo, RIGHT))
    qtbot.waitUntil(
        lambda: window.target_label.text().startswith("Swapping: auto"), timeout=TIMEOUT_MS
    )
    qtbot.waitUntil(
        lambda: changed(shown(), photo, LEFT) and not changed(shown(), photo, RIGHT),
        timeout=TIMEOUT_MS,
    )

    qtbot.mouseClick(preview, Qt.MouseButton.LeftButton, pos=widget_pos(window, photo, RIGHT))
    qtbot.waitUntil(lambda: "face #" in window.target_label.text(), timeout=TIMEOUT_MS)
    qtbot.mouseClick(window.auto_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: window.target_label.text().startswith("Swapping: auto"), timeout=TIMEOUT_MS
    )
