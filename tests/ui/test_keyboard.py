"""The panel without a mouse: Enter presses the focused button, and the control the
keyboard moved the focus to shows a ring that can be seen on the dark theme (its pixels
are checked on the rendered window); a click moves the focus without a ring."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QPushButton, QWidget
from pytestqt.qtbot import QtBot

from livecam.config.schema import Config
from ui.keyboard import RING_COLOUR
from ui.main_window import MainWindow, apply_theme
from ui.notice import contrast_ratio
from ui.panels.input_panel import InputPanel
from ui.settings import UiSettings
from ui.stream import StreamController

WINDOW_BACKGROUND = "#24242b"  # apply_theme's Window colour
NON_TEXT_CONTRAST = 3.0  # WCAG 2.1, 1.4.11: a focus indicator against what is around it


@pytest.fixture
def window(qtbot: QtBot, settings: UiSettings) -> Iterator[MainWindow]:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    apply_theme(app)
    settings.save_config(Config.from_dict({"source": {"spec": "synthetic"}}))
    shown = MainWindow(StreamController(settings.config), settings)
    qtbot.addWidget(shown)
    shown.show()
    qtbot.waitExposed(shown)
    shown.activateWindow()
    qtbot.waitUntil(shown.isActiveWindow, timeout=5000)
    yield shown
    shown.close()


def ring_pixels(window: MainWindow, widget: QWidget) -> int:
    """How many pixels of the ring's colour lie along the edges of ``widget``'s rectangle
    (2 px either side of each edge) in the rendered window."""
    image: QImage = window.grab().toImage()
    top_left = widget.mapTo(window, QPoint(0, 0))
    x0, y0, w, h = top_left.x(), top_left.y(), widget.width(), widget.height()
    band = range(-2, 2)
    edge = {(x, y + d) for x in range(x0, x0 + w) for y in (y0, y0 + h - 1) for d in band}
    edge |= {(x + d, y) for y in range(y0, y0 + h) for x in (x0, x0 + w - 1) for d in band}
    inside = [(x, y) for x, y in edge if 0 <= x < image.width() and 0 <= y < image.height()]
    return sum(image.pixelColor(x, y) == RING_COLOUR for x, y in inside)


def ringed(window: MainWindow, widget: QWidget) -> bool:
    """A ring all round ``widget``: at least one ring pixel per pixel of its perimeter."""
    return ring_pixels(window, widget) >= 2 * (widget.width() + widget.height())


def test_the_ring_colour_stands_out_on_the_dark_theme() -> None:
    background = QColor(WINDOW_BACKGROUND)
    ratio = contrast_ratio(RING_COLOUR.name(), background.name())
    assert ratio >= NON_TEXT_CONTRAST, ratio
    button = QColor("#2f2f38")  # the Button colour around a focused button
    assert contrast_ratio(RING_COLOUR.name(), button.name()) >= NON_TEXT_CONTRAST


def test_tab_shows_a_ring_on_each_control_and_a_click_none(
    qtbot: QtBot, window: MainWindow
) -> None:
    seen: list[QWidget] = []
    for _ in range(8):  # Tab through the controls: each one ringed while it has the focus
        focused = QApplication.focusWidget()
        QTest.keyClick(focused or window, Qt.Key.Key_Tab)
        now = QApplication.focusWidget()
        assert now is not None and now is not focused
        qtbot.waitUntil(functools.partial(ringed, window, now), timeout=5000)
        seen.append(now)
    assert window.start_button in seen and window.swap_button in seen
    assert any(w.parentWidget() is window.tabs for w in seen)  # the tab bar, at its parent's edge

    qtbot.mouseClick(window.start_button, Qt.MouseButton.RightButton)  # not a press
    window.start_button.setFocus(Qt.FocusReason.MouseFocusReason)  # a click's focus: no ring
    assert not window.keyboard.ring.isVisible()
    assert ring_pixels(window, window.start_button) == 0


def test_enter_presses_the_focused_button(qtbot: QtBot, window: MainWindow) -> None:
    inputs = window.panels["Input"]
    assert isinstance(inputs, InputPanel)
    window.tabs.setCurrentIndex(list(window.panels).index("Input"))
    button: QPushButton = inputs.refresh_button
    qtbot.waitUntil(button.isEnabled, timeout=10000)  # the first listing, at open, ended
    button.setFocus(Qt.FocusReason.TabFocusReason)
    assert button.hasFocus() and button.isEnabled()
    with qtbot.waitSignal(inputs.devices_listed, timeout=10000):
        QTest.keyClick(button, Qt.Key.Key_Return)  # lists the devices again
    with qtbot.waitSignal(inputs.devices_listed, timeout=10000):
        QTest.keyClick(button, Qt.Key.Key_Enter)  # the keypad's Enter too
