"""The panel without a mouse: Enter (or Return) presses the focused button, as Space does,
and the control that Tab, Shift+Tab or a shortcut moved the focus to shows a ring that
can be seen on the dark theme (Fusion's own focus frame is a faint line there).

``install_keyboard_help(window)`` installs one application-wide event filter for the
window's lifetime (it goes with the window), and one ``FocusRing`` that follows the
keyboard focus (an overlay over the window). A click moves the focus without a ring, as
browsers do.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QPoint, QRect, Qt
from PySide6.QtGui import QColor, QFocusEvent, QKeyEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QAbstractButton,
    QCheckBox,
    QDialog,
    QRadioButton,
    QWidget,
)

#: the ring's colour: 6.5:1 against the window (#24242b), 3:1 at least against any control
RING_COLOUR = QColor("#8ab4f8")
RING_WIDTH = 2  # px
ENTER_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
#: what moves the ring with its target: the target or a parent moved, resized, shown, hidden
FOLLOWED = (QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.Hide)
KEYBOARD_REASONS = (
    Qt.FocusReason.TabFocusReason,
    Qt.FocusReason.BacktabFocusReason,
    Qt.FocusReason.ShortcutFocusReason,
)


def presses_on_enter(widget: QObject) -> bool:
    """A push or tool button whose Enter Qt itself ignores (a check box or radio button
    toggles on Space; a dialog's buttons already take Enter as its default)."""
    if not isinstance(widget, QAbstractButton) or isinstance(widget, QCheckBox | QRadioButton):
        return False
    return not isinstance(widget.window(), QDialog)


class FocusRing(QWidget):
    """An overlay over the whole window that draws a ``RING_WIDTH`` px ring in
    ``RING_COLOUR`` around ``target`` (outside it: no layout moves), cut to what the
    target's parents show (drawn just inside a parent's edge that the target touches, and
    around the visible part of a scrolled one). Mouse events pass through it."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.target: QWidget | None = None
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.hide()

    def ring_rect(self) -> QRect | None:
        """Where the ring goes in this overlay's coordinates (None: no target shown)."""
        target, window = self.target, self.parentWidget()
        if target is None or window is None or not target.isVisible():
            return None
        pad = RING_WIDTH
        area = QRect(target.mapTo(window, QPoint(0, 0)), target.size()).adjusted(
            -pad, -pad, pad, pad
        )
        parent = target.parentWidget()
        while parent is not None and parent is not window:  # cut to what each parent shows
            area = area.intersected(QRect(parent.mapTo(window, QPoint(0, 0)), parent.size()))
            parent = parent.parentWidget()
        return area.intersected(self.rect()) if area.isValid() else None

    def show_around(self, target: QWidget | None) -> None:
        self.target = target
        window = self.parentWidget()
        if target is None or window is None:
            self.hide()
            return
        self.setGeometry(window.rect())
        self.raise_()
        self.show()
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        area = self.ring_rect()
        if area is None:
            return
        painter = QPainter(self)
        painter.setPen(QPen(RING_COLOUR, RING_WIDTH))
        half = RING_WIDTH / 2
        painter.drawRect(area.toRectF().adjusted(half, half, -half, -half))
        painter.end()


class KeyboardHelp(QObject):
    """The application-wide filter; see the module docstring."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.ring = FocusRing(window)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        kind = event.type()
        if kind == QEvent.Type.KeyPress and presses_on_enter(watched):
            assert isinstance(event, QKeyEvent) and isinstance(watched, QAbstractButton)
            if event.key() in ENTER_KEYS and not event.isAutoRepeat():
                if watched.isEnabled():
                    watched.animateClick()
                return True
        elif kind == QEvent.Type.FocusIn and isinstance(watched, QWidget):
            assert isinstance(event, QFocusEvent)
            if watched.window() is self.ring.parentWidget() and not watched.isWindow():
                keyboard = event.reason() in KEYBOARD_REASONS
                self.ring.show_around(watched if keyboard else None)
        elif kind == QEvent.Type.FocusOut and watched is self.ring.target:
            assert isinstance(event, QFocusEvent)
            if event.reason() != Qt.FocusReason.ActiveWindowFocusReason:
                self.ring.show_around(None)
        elif kind in FOLLOWED and self._holds_target(watched):
            self.ring.show_around(self.ring.target)  # moved, resized, scrolled, hidden
        return False

    def _holds_target(self, widget: QObject) -> bool:
        """``widget`` is the ringed widget or one of its parents."""
        target = self.ring.target
        if target is None or not isinstance(widget, QWidget):
            return False
        return widget is target or widget.isAncestorOf(target)


def install_keyboard_help(window: QWidget) -> KeyboardHelp:
    """Enter presses buttons and keyboard focus shows a ring while ``window`` lives."""
    helper = KeyboardHelp(window)
    app = QCoreApplication.instance()
    assert app is not None, "a QApplication must exist"
    app.installEventFilter(helper)
    return helper
