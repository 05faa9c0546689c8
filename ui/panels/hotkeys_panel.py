"""The Hotkeys panel: each action and its key combination, edited, checked and saved, and
the hotkeys themselves while the stream runs.

Global hotkeys (``livecam.control.hotkeys``) work while another app has the focus; where that is
impossible (Wayland, no X display, pynput failing) the panel says why and installs the
same combinations as in-window shortcuts (QShortcut) instead. A valid edit is saved at
once to the user's config (``[hotkeys]`` of config.toml) and rebinds the running hotkeys;
a conflict is shown in the panel and nothing is saved until it is resolved.
"""

from __future__ import annotations

import dataclasses
import logging

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFormLayout,
    QKeySequenceEdit,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from livecam.config.schema import HotkeysConfig
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
from ui.main_window import error_line
from ui.settings import UiSettings
from ui.stream import StreamController

log = logging.getLogger(__name__)

PORTABLE = QKeySequence.SequenceFormat.PortableText


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
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c0392b")
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.editors: dict[str, QKeySequenceEdit] = {}
        form = QFormLayout()
        for action in ACTIONS:
            editor = QKeySequenceEdit(QKeySequence(getattr(self.saved, action)))
            editor.setMaximumSequenceLength(1)
            editor.setClearButtonEnabled(True)
            editor.keySequenceChanged.connect(lambda _seq, a=action: self._edited(a))
            self.editors[action] = editor
            form.addRow(ACTION_TITLES[action], editor)
        defaults = QPushButton("Restore defaults")
        defaults.clicked.connect(self.restore_defaults)
        layout = QVBoxLayout(self)
        layout.addWidget(self.availability)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(defaults, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.message)
        layout.addStretch(1)
        self._show_availability()
        stream.running_changed.connect(self._on_running)
        stream.event_received.connect(self._on_event)

    # --- editing ------------------------------------------------------------------------
    def bindings(self) -> dict[str, str]:
        """The saved bindings (what the hotkeys use)."""
        return self.saved.bindings()

    def _edited(self, action: str) -> None:
        text = self.editors[action].keySequence().toString(PORTABLE)
        self._try({**self.saved.bindings(), action: text})

    def restore_defaults(self) -> None:
        defaults = HotkeysConfig().bindings()
        for action, editor in self.editors.items():
            editor.blockSignals(True)
            editor.setKeySequence(QKeySequence(defaults[action]))
            editor.blockSignals(False)
        self._try(defaults)

    def _try(self, bindings: dict[str, str]) -> None:
        """Check ``bindings``; save and apply them, or show the problem (nothing saved)."""
        try:
            hotkeys = HotkeysConfig(**bindings, faces=self.saved.faces)
        except ConfigError as e:
            self.error.setText(error_line(e))
            return
        self.error.clear()
        if hotkeys == self.saved:
            return
        self.saved = hotkeys
        config = dataclasses.replace(self.stream.config, hotkeys=hotkeys)
        try:
            self.settings.save_config(config)
        except OSError as e:
            self.error.setText(f"the hotkeys were not saved: {e.strerror or e}")
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
        faces = [*self.saved.faces, *self.settings.panel.recent_faces]
        actions = HotkeyActions(app.controls, faces, app.store, app.telemetry.event)
        handlers = actions.handlers()
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
