"""The Hotkeys panel: each action and its key combination, edited, checked and saved, and
the hotkeys themselves while the stream runs.

Global hotkeys (``livecam.control.hotkeys``) work while another app has the focus; where that is
impossible (Wayland, no X display, pynput failing) the panel says why and installs the
same combinations as in-window shortcuts (QShortcut) instead.

Editing (``ComboEdit``): the user clicks an action's field and presses the whole
combination. Modifiers held alone only show a preview and change nothing; Escape (or
leaving the field) cancels; the first other key ends the capture. A valid, free
combination is saved at once to the user's config (``[hotkeys]`` of config.toml) and
rebinds the running hotkeys; an invalid one, or one another action holds, keeps the old
binding, says why (naming the action that holds it) and saves nothing. Backspace or Delete
alone leaves the action without a hotkey. While a field has the focus, the running hotkeys
pause (the keys typed are a combination being entered). A binding that is a known desktop,
OS or overlay shortcut (``livecam.control.desktop_shortcuts``) is saved but warned about,
naming who uses it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from PySide6.QtCore import QEvent, QKeyCombination, Qt, Signal
from PySide6.QtGui import QCloseEvent, QFocusEvent, QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from livecam.config.keycombo import canonical
from livecam.config.schema import HotkeysConfig
from livecam.control.desktop_shortcuts import clash_warnings
from livecam.control.hotkeys import (
    ACTION_TITLES,
    ACTIONS,
    ORIGIN,
    HotkeyActions,
    HotkeyListener,
    hotkeys_available,
)
from livecam.errors import ConfigError, LivecamError
from livecam.types import Event
from ui.main_window import FALLBACK_STYLE, error_line
from ui.settings import UiSettings
from ui.stream import StreamController

log = logging.getLogger(__name__)

PORTABLE = QKeySequence.SequenceFormat.PortableText
KEYBOARD_MODIFIERS = (
    Qt.KeyboardModifier.MetaModifier,
    Qt.KeyboardModifier.ControlModifier,
    Qt.KeyboardModifier.AltModifier,
    Qt.KeyboardModifier.ShiftModifier,
)
MODIFIER_NAMES = ("Meta", "Ctrl", "Alt", "Shift")
#: keys that are modifiers (or layout switches): pressed alone they never end a capture
MODIFIER_KEYS = frozenset(
    {
        Qt.Key.Key_Control,
        Qt.Key.Key_Shift,
        Qt.Key.Key_Alt,
        Qt.Key.Key_AltGr,
        Qt.Key.Key_Meta,
        Qt.Key.Key_Super_L,
        Qt.Key.Key_Super_R,
        Qt.Key.Key_Hyper_L,
        Qt.Key.Key_Hyper_R,
        Qt.Key.Key_CapsLock,
        Qt.Key.Key_NumLock,
        Qt.Key.Key_Mode_switch,
        Qt.Key.Key_unknown,
    }
)
#: the modifier a modifier key itself adds (its own press does not always report it: X11)
KEY_MODIFIER = {
    Qt.Key.Key_Control: Qt.KeyboardModifier.ControlModifier,
    Qt.Key.Key_Shift: Qt.KeyboardModifier.ShiftModifier,
    Qt.Key.Key_Alt: Qt.KeyboardModifier.AltModifier,
    Qt.Key.Key_Meta: Qt.KeyboardModifier.MetaModifier,
    Qt.Key.Key_Super_L: Qt.KeyboardModifier.MetaModifier,
    Qt.Key.Key_Super_R: Qt.KeyboardModifier.MetaModifier,
}
CLEAR_KEYS = frozenset({Qt.Key.Key_Backspace, Qt.Key.Key_Delete})
PROMPT = "press the keys (Esc cancels)"


def held_modifiers(modifiers: Qt.KeyboardModifier) -> Qt.KeyboardModifier:
    """``modifiers`` without the keypad and group flags (only Meta, Ctrl, Alt, Shift)."""
    held = Qt.KeyboardModifier.NoModifier
    for m in KEYBOARD_MODIFIERS:
        if modifiers & m:
            held |= m
    return held


def modifiers_text(modifiers: Qt.KeyboardModifier) -> str:
    """The held modifiers as a capture preview: ``Ctrl+Alt+…`` ("" for none)."""
    names = [n for m, n in zip(KEYBOARD_MODIFIERS, MODIFIER_NAMES, strict=True) if modifiers & m]
    return "+".join(names) + "+…" if names else ""


class ComboEdit(QLineEdit):
    """One action's key combination, captured whole (see the module docstring): emits
    ``captured`` with the combination's text ("" for Backspace/Delete alone) when a
    non-modifier key is pressed; shows ``combo`` (the saved one) otherwise."""

    captured = Signal(str)

    def __init__(self, combo: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setPlaceholderText("no hotkey")
        self.combo = combo
        self.capturing = False  # keys pressed now are a combination being entered
        self.focused = False  # read by the hotkey thread: the hotkeys pause meanwhile
        self.setText(combo)

    def show_combo(self, combo: str) -> None:
        """Show ``combo`` (the binding now in force) and stop any capture."""
        self.combo = combo
        self.capturing = False
        self.setPlaceholderText("no hotkey")
        self.setText(combo)

    def cancel(self) -> None:
        """End a capture without changing anything."""
        self.show_combo(self.combo)

    def event(self, event: QEvent) -> bool:
        # keys pressed here are a combination to capture, not in-window shortcuts to run
        if event.type() == QEvent.Type.ShortcutOverride:
            event.accept()
            return True
        return super().event(event)

    def focusInEvent(self, event: QFocusEvent) -> None:  # noqa: N802 (Qt's name)
        super().focusInEvent(event)
        self.focused = True
        self.capturing = True
        self.setText("")
        self.setPlaceholderText(PROMPT)

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802 (Qt's name)
        super().focusOutEvent(event)
        self.focused = False
        self.cancel()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt's name)
        key = Qt.Key(event.key())
        modifiers = held_modifiers(event.modifiers())
        if key in MODIFIER_KEYS:
            self.capturing = True
            own = KEY_MODIFIER.get(key, Qt.KeyboardModifier.NoModifier)
            self.setText(modifiers_text(modifiers | own))
            self.setPlaceholderText(PROMPT)
            return
        if key == Qt.Key.Key_Escape and not modifiers:
            self.cancel()
            self.clearFocus()
            return
        text = ""
        if not (key in CLEAR_KEYS and not modifiers):
            text = QKeySequence(QKeyCombination(modifiers, key)).toString(PORTABLE)
        self.cancel()  # shows the binding in force until the panel accepts the new one
        self.captured.emit(text)

    def keyReleaseEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt's name)
        key = Qt.Key(event.key())
        if key in MODIFIER_KEYS and self.capturing:
            held = held_modifiers(event.modifiers())
            released = KEY_MODIFIER.get(key)
            if released is not None:
                held &= ~released
            self.setText(modifiers_text(held))


class HotkeysPanel(QWidget):
    """See the module docstring. ``listener`` is the running global listener (or None);
    ``shortcuts`` the in-window fallback shortcuts by action (empty when unused)."""

    def __init__(
        self, stream: StreamController, settings: UiSettings, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.stream = stream
        self.settings = settings
        self.saved: HotkeysConfig = settings.config.hotkeys
        self.listener: HotkeyListener | None = None
        self.shortcuts: dict[str, QShortcut] = {}
        self.global_ok, self.global_why = hotkeys_available()

        self.availability = QLabel()
        self.availability.setWordWrap(True)
        self.error = QLabel()  # why the last edit was refused (the old binding kept)
        self.error.setWordWrap(True)
        self.error.setStyleSheet(FALLBACK_STYLE)
        self.error.hide()
        self.warning = QLabel()  # bindings that desktops or overlays use too
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet(FALLBACK_STYLE)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.editors: dict[str, ComboEdit] = {}
        form = QFormLayout()
        for action in ACTIONS:
            editor = ComboEdit(getattr(self.saved, action))
            editor.setToolTip("Click, then press the whole combination (Esc cancels)")
            editor.captured.connect(lambda text, a=action: self.capture(a, text))
            clear = QToolButton()
            clear.setText("Clear")
            clear.setToolTip("No hotkey for this action")
            clear.clicked.connect(lambda _checked=False, a=action: self.capture(a, ""))
            row = QHBoxLayout()
            row.addWidget(editor, 1)
            row.addWidget(clear)
            self.editors[action] = editor
            form.addRow(ACTION_TITLES[action], row)
        defaults = QPushButton("Restore defaults")
        defaults.clicked.connect(self.restore_defaults)
        layout = QVBoxLayout(self)
        layout.addWidget(self.availability)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(self.warning)
        layout.addWidget(defaults, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.message)
        layout.addStretch(1)
        self._show_availability()
        self._show_warnings()
        stream.running_changed.connect(self._on_running)
        stream.event_received.connect(self._on_event)

    # --- editing ------------------------------------------------------------------------
    def bindings(self) -> dict[str, str]:
        """The saved bindings (what the hotkeys use)."""
        return self.saved.bindings()

    def capture(self, action: str, text: str) -> None:
        """``text`` (a whole combination, "" for none) was entered for ``action``: save it,
        or keep the old binding and say why (invalid, or another action's)."""
        old = getattr(self.saved, action) or "no hotkey"
        try:
            combo = canonical(text)
        except ValueError as e:
            self._refuse(
                f"{text} cannot be a hotkey: {e}. \u201c{ACTION_TITLES[action]}\u201d keeps {old}."
            )
            return
        holder = next((a for a, c in self.bindings().items() if c == combo and a != action), None)
        if combo and holder is not None:
            self._refuse(
                f"{combo} is already the hotkey of \u201c{ACTION_TITLES[holder]}\u201d "
                f"(hotkeys.{holder}); \u201c{ACTION_TITLES[action]}\u201d keeps {old}. "
                "Choose another combination, or clear that one first."
            )
            return
        self._try({**self.bindings(), action: combo})

    def _refuse(self, why: str) -> None:
        self.error.setText(why)
        self.error.setVisible(bool(why))
        self._show_saved()

    def restore_defaults(self) -> None:
        self._try(HotkeysConfig().bindings())

    def _show_saved(self) -> None:
        for action, editor in self.editors.items():
            editor.show_combo(getattr(self.saved, action))
        self._show_warnings()

    def _show_warnings(self) -> None:
        """Name the bindings that desktops, the OS or overlays use too."""
        warnings = clash_warnings(self.bindings())
        self.warning.setText(
            "\n".join(
                f"{ACTION_TITLES[a]}: {w}; the desktop may take it before LiveCam."
                for a, w in warnings.items()
            )
        )
        self.warning.setVisible(bool(warnings))
        for action, editor in self.editors.items():
            editor.setStyleSheet(FALLBACK_STYLE if action in warnings else "")

    def _try(self, bindings: dict[str, str]) -> None:
        """Check ``bindings``; save and apply them, or show the problem (nothing saved)."""
        try:
            hotkeys = HotkeysConfig(**bindings, faces=self.saved.faces)
        except ConfigError as e:
            self._refuse(error_line(e))
            return
        self.error.clear()
        self.error.hide()
        if hotkeys == self.saved:
            self._show_saved()
            return
        self.saved = hotkeys
        self._show_saved()
        config = dataclasses.replace(self.stream.config, hotkeys=hotkeys)
        try:
            self.settings.save_config(config)
        except OSError as e:
            self.error.setText(f"the hotkeys were not saved: {e.strerror or e}")
            self.error.show()
        if not self.stream.running:
            self.stream.set_config(config)
        else:
            self._unbind()
            self._bind()

    # --- the hotkeys while the stream runs ------------------------------------------------
    def _on_running(self, running: bool) -> None:
        if running:
            self._bind()
            return
        self._unbind()
        if self.stream.config.hotkeys != self.saved:  # the run's config had the old ones
            self.stream.set_config(dataclasses.replace(self.stream.config, hotkeys=self.saved))

    def _bind(self) -> None:
        app = self.stream.app
        if app is None:
            return

        def faces() -> list[str]:  # as the Source tab shows them, at each press
            return [*self.settings.panel.recent_faces, *self.saved.faces]

        actions = HotkeyActions(app.controls, faces, app.store, app.telemetry.event)
        handlers = {a: self._unless_editing(h) for a, h in actions.handlers().items()}
        if self.global_ok:
            listener = HotkeyListener(self.saved.bindings(), handlers)
            try:
                listener.start()
            except LivecamError as e:
                self.global_ok, self.global_why = False, e.message
                self._show_availability()
            else:
                self.listener = listener
                return
        window = self.window()
        for action, combo in self.saved.bindings().items():
            if combo:
                shortcut = QShortcut(QKeySequence(combo), window)
                shortcut.setContext(Qt.ShortcutContext.ApplicationShortcut)
                shortcut.activated.connect(handlers[action])
                self.shortcuts[action] = shortcut

    def _unless_editing(self, handler: Callable[[], None]) -> Callable[[], None]:
        """``handler``, doing nothing while an editor has the focus: the keys typed there
        are a combination being entered, not a command to the stream."""

        def handle() -> None:
            if not any(editor.focused for editor in self.editors.values()):
                handler()

        return handle

    def _unbind(self) -> None:
        if self.listener is not None:
            self.listener.stop()
            self.listener = None
        for shortcut in self.shortcuts.values():
            shortcut.setEnabled(False)
            shortcut.deleteLater()
        self.shortcuts = {}

    def _show_availability(self) -> None:
        if self.global_ok:
            self.availability.setText("Global hotkeys: they work while other apps have the focus.")
        else:
            self.availability.setText(
                f"Global hotkeys are not available: {self.global_why}. "
                "In-window shortcuts instead: they work while a LiveCam window has the focus."
            )

    def _on_event(self, event: Event) -> None:
        if event.origin == ORIGIN:
            self.message.setText(str(event))

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's name)
        self._unbind()
        super().closeEvent(event)
