"""Settings that take effect when the stream (re)starts: the input and the outputs.

A source or a sink is opened once at start, so the Input and Output panels cannot change
them live. Stopped, a change goes into the config at once. Running, it is kept as
pending (and saved for the next run), the panel says "applies when you restart the
stream" and offers **Restart now** (stop, then start with the change: the preview
resumes with the first new frame); a stop by any other means applies it too.

A control whose change waits for a restart says so beside it (``restart_row``: a small
"applies at restart" tag); a live one (the Input panel's mirror) has none.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

from livecam.config.schema import Config
from livecam.errors import ConfigError, LivecamError
from ui.main_window import startup_text
from ui.settings import UiSettings
from ui.stream import StreamController

log = logging.getLogger(__name__)

RESTART_NOTE = "Applies when you restart the stream."
RESTART_TAG = "applies at restart"
RESTART_TIP = (
    "Opened when the stream starts: a change made while it runs applies when you restart "
    "the stream (Restart now)."
)
TAG_NAME = "applies_at_restart"  # the tag's object name, and the property of its controls
TAG_STYLE = "color: #a8a8b4; font-size: 8pt; font-style: italic;"


def restart_row(*controls: QWidget, stretch: int = 0, actions: Sequence[QWidget] = ()) -> QWidget:
    """``controls`` in one row with the "applies at restart" tag at its end; each control
    gets the property ``applies_at_restart`` (True). ``stretch``: the index of the control
    that takes the free width; ``actions``: buttons that change no setting (Check,
    Choose…), after the controls."""
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    for i, control in enumerate(controls):
        control.setProperty(TAG_NAME, True)
        row.addWidget(control, 1 if i == stretch else 0)
    for action in actions:
        row.addWidget(action)
    tag = QLabel(RESTART_TAG)
    tag.setObjectName(TAG_NAME)
    tag.setToolTip(RESTART_TIP)
    tag.setStyleSheet(TAG_STYLE)
    tag.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
    tag.setBuddy(controls[0])
    row.addWidget(tag)
    return box


class NextStartChanges(QObject):
    """Config changes of one or more sections for the next start (see the module doc).

    ``apply(section, **fields)`` validates (raises ConfigError, nothing changed) and
    applies or keeps the change; ``pending`` holds what waits for a restart;
    ``restarted(str)`` says how a restart ended ("" when the stream runs again, else
    the error shown).
    """

    restarted = Signal(str)

    def __init__(
        self, stream: StreamController, settings: UiSettings, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.stream = stream
        self.settings = settings
        self.pending: dict[str, dict[str, Any]] = {}
        self.bar = QWidget()
        self.note = QLabel(RESTART_NOTE)
        self.note.setWordWrap(True)
        self.restart_button = QPushButton("Restart now")
        self.restart_button.clicked.connect(self.restart)
        row = QHBoxLayout(self.bar)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.note, 1)
        row.addWidget(self.restart_button)
        self.bar.hide()
        self._restarting = False  # restart() started the stream; its outcome not seen yet
        stream.running_changed.connect(self._on_running)
        stream.start_failed.connect(self._on_start_failed)

    def merged(self, config: Config) -> Config:
        """``config`` with the pending changes."""
        for section, fields in self.pending.items():
            config = config.with_section(section, **fields)
        return config

    def apply(self, section: str, **fields: Any) -> Config:
        """Change ``section``'s ``fields`` for the next start; returns the config the next
        start will use. ConfigError (nothing changed) when a value is invalid."""
        candidate = self.merged(self.stream.config).with_section(section, **fields)
        if not self.stream.running:
            self.stream.set_config(candidate)
            self.settings.save_config(candidate)
            return candidate
        self.pending.setdefault(section, {}).update(fields)
        self.settings.save_config(candidate)
        self.bar.show()
        return candidate

    def restart(self) -> None:
        """Stop, then start again with the pending changes on the stream's start thread
        (the window stays responsive); ``restarted`` tells how it ended."""
        if self.stream.running:
            self.stream.stop()  # running_changed(False) applies the pending changes
        if self.stream.starting:
            return
        self._restarting = True
        self.restart_button.setEnabled(False)
        self.stream.start_async()  # ends in running_changed(True) or start_failed

    def _on_start_failed(self, error: LivecamError) -> None:
        if not self._restarting:  # a start of the main window: it shows the error
            return
        self._restarting = False
        text = startup_text(error)
        self.note.setText(text)
        self.bar.show()
        self.restart_button.setEnabled(True)
        self.restart_button.hide()
        self.restarted.emit(text)

    def _on_running(self, running: bool) -> None:
        self.restart_button.setEnabled(True)
        if running:
            self.bar.hide()
            if self._restarting:
                self._restarting = False
                self.restarted.emit("")
            return
        self._restarting = False  # stopped (or a restart abandoned before it started)
        self.note.setText(RESTART_NOTE)
        self.restart_button.show()
        if not self.pending:
            return
        try:
            config = self.merged(self.stream.config)
        except ConfigError as e:  # cannot happen for values checked in apply; logged
            log.warning("pending input/output changes dropped: %s", e.message)
        else:
            self.stream.set_config(config)
            self.settings.save_config(config)
        self.pending.clear()
        self.bar.hide()
