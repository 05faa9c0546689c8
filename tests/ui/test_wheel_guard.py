"""The mouse wheel over a value widget in a scrolling tab scrolls the tab and changes
nothing unless that widget has the focus: real QWheelEvents on the main window's
Processing tab (its combo boxes, spin boxes and sliders) and on a small scroll area."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QScrollArea,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)
from pytestqt.qtbot import QtBot
from synthetic_stream import small_config

from livecam.config.schema import Config
from ui.main_window import MainWindow
from ui.settings import UiSettings
from ui.stream import StreamController
from ui.wheel_guard import install_wheel_guard

ASSETS = Path(__file__).resolve().parents[2] / "assets"
NOTCH = 120  # one wheel notch, in eighths of a degree


def wheel(widget: QWidget, notches: int = -1) -> None:
    """One real wheel event over the middle of ``widget`` (negative: towards the user)."""
    pos = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(
        pos,
        QPointF(widget.mapToGlobal(pos.toPoint())),
        QPoint(0, 0),
        QPoint(0, NOTCH * notches),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def value(widget: QWidget) -> object:
    if isinstance(widget, QComboBox):
        return widget.currentIndex()
    assert isinstance(widget, QSpinBox | QSlider)
    return widget.value()


def focus(qtbot: QtBot, widget: QWidget) -> None:
    widget.window().activateWindow()
    widget.setFocus(Qt.FocusReason.MouseFocusReason)
    qtbot.waitUntil(widget.hasFocus, timeout=5000)


@pytest.fixture
def window(qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MainWindow]:
    monkeypatch.setenv("LIVECAM_CONFIG_DIR", str(tmp_path))
    settings = UiSettings()
    settings.save_config(small_config(ASSETS / "grace_hopper.jpg"))
    win = MainWindow(StreamController(Config()), settings)
    qtbot.addWidget(win)
    win.resize(1000, 360)  # the Processing tab is taller than this: it scrolls
    win.show()
    qtbot.waitExposed(win)
    yield win
    win.stream.stop()


def test_the_wheel_scrolls_the_processing_tab_over_unfocused_value_widgets(
    window: MainWindow, qtbot: QtBot, tmp_path: Path
) -> None:
    panel = window.panels["Processing"]
    window.tabs.setCurrentIndex(list(window.panels).index("Processing"))
    scroll = window.tabs.currentWidget()
    assert isinstance(scroll, QScrollArea)
    bar = scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=5000)
    widgets = [
        w
        for w in panel.findChildren(QWidget)
        if isinstance(w, QComboBox | QSpinBox | QSlider) and w.isEnabled()
    ]
    combos = [w for w in widgets if isinstance(w, QComboBox) and w.count() > 1]
    assert combos and any(isinstance(w, QSpinBox | QSlider) for w in widgets)
    saved = (tmp_path / "config.toml").read_bytes()
    config = window.stream.config
    for widget in widgets:
        assert widget.focusPolicy() == Qt.FocusPolicy.StrongFocus, widget  # wheel: no focus
        before = value(widget)
        bar.setValue(0)
        wheel(widget, -1)
        assert value(widget) == before, f"the wheel changed an unfocused {widget}"
        assert not widget.hasFocus()
    assert window.stream.config == config
    assert (tmp_path / "config.toml").read_bytes() == saved
    bar.setValue(0)
    wheel(combos[0], -1)
    assert bar.value() > 0, "the tab did not scroll under the wheel"
    # focused (clicked or tabbed to), the combo box takes the wheel as usual
    combo = combos[0]
    combo.setCurrentIndex(0)
    focus(qtbot, combo)
    top = bar.value()
    wheel(combo, -1)
    assert combo.currentIndex() == 1 and bar.value() == top


def test_slider_and_spin_box_in_a_scroll_area_and_widgets_made_later(qtbot: QtBot) -> None:
    area = QScrollArea()
    qtbot.addWidget(area)
    inner = QWidget()
    column = QVBoxLayout(inner)
    slider = QSlider(Qt.Orientation.Horizontal)
    slider.setRange(0, 100)
    slider.setValue(50)
    spin = QSpinBox()
    spin.setValue(5)
    column.addWidget(slider)
    column.addWidget(spin)
    column.addSpacing(2000)  # taller than the area: it scrolls
    area.setWidget(inner)
    area.resize(300, 200)
    install_wheel_guard(area)
    later = QSpinBox()  # made after the guard: polished when shown
    column.addWidget(later)
    area.show()
    qtbot.waitExposed(area)
    assert later.focusPolicy() == Qt.FocusPolicy.StrongFocus
    bar = area.verticalScrollBar()
    for widget in (slider, spin):
        start = value(widget)
        bar.setValue(0)
        wheel(widget, -1)
        assert value(widget) == start and bar.value() > 0
    wheel(bar, +1)  # the scroll bar itself still scrolls
    assert bar.value() == 0
    focus(qtbot, spin)
    wheel(spin, +1)
    assert spin.value() == 6
