"""The mouse wheel scrolls the panel; it changes a combo box, spin box or slider only when
that widget has the focus (clicked or tabbed to). Without this, scrolling a tall tab
changed whatever value widget passed under the pointer: the memory strategy, the quality.

``install_wheel_guard(window)`` installs one application-wide event filter for the
window's lifetime (it goes with the window). It gives every value widget
``Qt.StrongFocus`` (the wheel no longer focuses it) as the widget is polished, and sends a
wheel event over an unfocused one to the scroll area around it instead (or lets it pass
up unused when there is none). Scroll bars keep the wheel: scrolling is their job.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QScrollBar,
    QWidget,
)

VALUE_WIDGETS = (QComboBox, QAbstractSpinBox, QAbstractSlider)


def is_value_widget(obj: QObject) -> bool:
    """A widget whose value the wheel changes (scroll bars excepted)."""
    return isinstance(obj, VALUE_WIDGETS) and not isinstance(obj, QScrollBar)


def take_wheel_only_when_focused(widget: QWidget) -> None:
    """Focus by click or Tab, never by the wheel (Qt.WheelFocus becomes Qt.StrongFocus)."""
    if widget.focusPolicy() == Qt.FocusPolicy.WheelFocus:
        widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)


def scroll_area_around(widget: QWidget) -> QAbstractScrollArea | None:
    """The nearest scroll area that holds ``widget`` (None when none does)."""
    parent = widget.parentWidget()
    while parent is not None and not isinstance(parent, QAbstractScrollArea):
        parent = parent.parentWidget()
    return parent


class WheelGuard(QObject):
    """The application-wide filter; see the module docstring."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        kind = event.type()
        if kind == QEvent.Type.Polish and is_value_widget(watched):
            assert isinstance(watched, QWidget)
            take_wheel_only_when_focused(watched)
        elif kind == QEvent.Type.Wheel and is_value_widget(watched):
            assert isinstance(watched, QWidget)
            if not watched.hasFocus():
                area = scroll_area_around(watched)
                if area is not None:  # the scroll area scrolls instead
                    QCoreApplication.sendEvent(area.viewport(), event)
                else:
                    event.ignore()  # a real wheel event goes on to the parents
                return True
        return False


def install_wheel_guard(window: QWidget) -> WheelGuard:
    """Guard every value widget of the application while ``window`` lives (the filter is
    its child); the widgets that exist already get their focus policy now."""
    guard = WheelGuard(window)
    app = QCoreApplication.instance()
    assert app is not None, "a QApplication must exist"
    app.installEventFilter(guard)
    for widget in window.findChildren(QWidget):
        if is_value_widget(widget):
            take_wheel_only_when_focused(widget)
    return guard
