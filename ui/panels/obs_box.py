"""The OBS box of the Output tab: LiveCam and OBS Studio in step (``livecam.obs``).

* **Connect to OBS** (``obs.enabled``), its host and port: applied at the next start,
  like the other outputs. The password goes to LiveCam's private password file
  (``livecam.obs.secret``), never into the config.
* **Match the audio delay** (``obs.sync_audio``): live while running (switching it off
  puts the microphone's own offset back at once), and kept for the next start.
* The state, from the running stream's OBS link: connected (OBS's version and outputs)
  or why not with the fix, and "audio delayed by N ms in OBS to match the video".
* **Add LiveCam to OBS**: ``livecam obs add-source`` on a worker thread.
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from livecam.config.schema import Config
from livecam.errors import LivecamError, one_line
from livecam.obs.client import connect
from livecam.obs.secret import read_password, save_password
from livecam.obs.source import add_livecam, virtual_camera
from livecam.obs.state import ObsState
from ui.notice import ERROR_TEXT_STYLE
from ui.panels.next_start import NextStartChanges, restart_row
from ui.stream import StreamController


def state_text(state: ObsState | None, enabled: bool) -> tuple[str, bool]:
    """The box's state line, and whether it is a problem to show in red."""
    if not enabled:
        return "Off: LiveCam does not talk to OBS.", False
    if state is None:
        return "Connects to OBS when the stream starts.", False
    if state.connection == "failed":
        return f"Not connected: {state.problem}\nfix: {state.fix}", True
    if not state.connected:
        return "Connecting to OBS…", False
    lines = [f"Connected to OBS {state.obs_version}: {state.outputs_text()}."]
    if state.on_air:
        lines.append("ON AIR: what LiveCam sends is seen now.")
    audio = state.audio_text()
    if audio:
        lines.append(audio[0].upper() + audio[1:] + ".")
    return "\n".join(lines), bool(state.audio_problem)


class ObsBox(QGroupBox):
    """See the module docstring; ``added(str)``: an add-source ended (its line)."""

    added = Signal(str)
    _added = Signal(str, bool)

    def __init__(
        self, stream: StreamController, changes: NextStartChanges, parent: QWidget | None = None
    ) -> None:
        super().__init__("OBS Studio", parent)
        self.stream = stream
        self.changes = changes
        self.enabled = QCheckBox("Connect to OBS")
        self.enabled.setToolTip("OBS's WebSocket server: Tools > WebSocket Server Settings in OBS")
        self.host = QLineEdit()
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.password = QLineEdit()
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password.setPlaceholderText("WebSocket password (kept private)")
        self.password.setText(read_password())
        self.sync_audio = QCheckBox("Match the audio delay (lip sync)")
        self.sync_audio.setToolTip(
            "Delay OBS's microphone by LiveCam's measured latency; its own offset comes back "
            "when LiveCam stops or this is switched off"
        )
        self.add_button = QPushButton("Add LiveCam to OBS")
        self.add_button.setToolTip("Add LiveCam's virtual camera (or its window) to OBS's scene")
        self.add_button.clicked.connect(self.add_source)
        self.state = QLabel()
        self.state.setWordWrap(True)
        self.result = QLabel()
        self.result.setWordWrap(True)

        form = QFormLayout(self)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        form.addRow(restart_row(self.enabled))
        form.addRow("Host", restart_row(self.host))
        form.addRow("Port", restart_row(self.port))
        form.addRow("Password", self.password)
        form.addRow(self.sync_audio)
        form.addRow(self.state)
        form.addRow(self.add_button)
        form.addRow(self.result)

        self.show_config(stream.config)
        self.enabled.toggled.connect(lambda on: self._apply(enabled=on))
        self.host.editingFinished.connect(lambda: self._apply(host=self.host.text().strip()))
        self.port.editingFinished.connect(lambda: self._apply(port=self.port.value()))
        self.password.editingFinished.connect(lambda: save_password(self.password.text()))
        self.sync_audio.toggled.connect(self.set_sync_audio)
        self._added.connect(self._on_added)
        stream.stats.connect(lambda _snapshot: self.show_state())
        stream.running_changed.connect(lambda _running: self.show_state())
        stream.config_changed.connect(lambda c: self.show_config(self.changes.merged(c)))

    def show_config(self, config: Config) -> None:
        obs = config.obs
        for box, on in ((self.enabled, obs.enabled), (self.sync_audio, obs.sync_audio)):
            box.blockSignals(True)
            box.setChecked(on)
            box.blockSignals(False)
        self.host.setText(obs.host)
        self.port.setValue(obs.port)
        self.show_state()

    def link_state(self) -> ObsState | None:
        app = self.stream.app
        return app.obs.state if app is not None and app.obs is not None else None

    def show_state(self) -> None:
        text, problem = state_text(self.link_state(), self.enabled.isChecked())
        self.state.setText(text)
        self.state.setStyleSheet(ERROR_TEXT_STYLE if problem else "")

    def set_sync_audio(self, on: bool) -> None:
        """Live on the running link (no restart needed), and kept for the next start."""
        app = self.stream.app
        if app is not None and app.obs is not None:
            app.obs.set_sync_audio(on)
            self.changes.settings.save_config(self.stream.config.with_section("obs", sync_audio=on))
        else:
            self._apply(sync_audio=on)

    def _apply(self, **fields: Any) -> None:
        try:
            self.changes.apply("obs", **fields)
        except LivecamError as e:
            self.result.setStyleSheet(ERROR_TEXT_STYLE)
            self.result.setText(one_line(e.message))
            return
        self.show_state()

    def add_source(self) -> None:
        """``livecam obs add-source`` on a worker thread; ``added`` tells the outcome."""
        obs = self.changes.merged(self.stream.config).obs
        device = self.running_device() or self.stream.config.output.virtualcam_device
        self.add_button.setEnabled(False)
        self.result.setStyleSheet("")
        self.result.setText("Adding LiveCam to OBS…")

        def work() -> None:
            try:
                found, why = (device, "") if device else virtual_camera()
                session = connect(obs.host, obs.port, read_password(), obs.timeout_s)
                try:
                    text = add_livecam(session, found)
                finally:
                    session.close()
                self._added.emit(f"{why}\n{text}" if why else text, True)
            except LivecamError as e:
                fix = f"\nfix: {one_line(e.hint)}" if e.hint else ""
                self._added.emit(f"{one_line(e.message)}{fix}", False)
            except Exception as e:  # a library failing in its own way
                self._added.emit(f"could not add LiveCam to OBS: {one_line(repr(e))}", False)

        threading.Thread(target=work, name="panel-obs-add", daemon=True).start()

    def running_device(self) -> str | None:
        """The v4l2loopback device the running stream writes (busy: not opened again)."""
        app = self.stream.app
        for sink in app.sinks if app is not None else []:
            if getattr(sink, "backend", None) == "v4l2loopback":
                device = getattr(sink, "device", None)
                return str(device) if device else None
        return None

    def _on_added(self, text: str, ok: bool) -> None:
        self.add_button.setEnabled(True)
        self.result.setStyleSheet("" if ok else ERROR_TEXT_STYLE)
        self.result.setText(text)
        self.added.emit(text)
