"""The Remote box of the Processing tab: swap on another machine's GPU (``livecam.remote``).

* **Server** (``remote.url``, ``grpc://HOST:PORT`` or ``grpcs://`` for TLS; empty: swap on
  this machine), **Token** (``remote.token``) and **TLS CA** (``remote.ca_cert``: the root
  certificate of a server with a self-signed certificate): applied at the next start, like
  the other start-time settings; a malformed URL or a missing certificate file is one red
  line and nothing changes.
* The state, from the running stream's figures: where the swap runs, the round trip and
  the server's batch, or "REMOTE LOST, local swap: <reason>" in red while the local swap
  stands in.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QFormLayout, QGroupBox, QLabel, QLineEdit, QWidget

from livecam.config.schema import Config
from livecam.errors import LivecamError, one_line
from livecam.telemetry.snapshot import Snapshot
from ui.notice import ERROR_TEXT_STYLE
from ui.panels.next_start import NextStartChanges, restart_row
from ui.settings import UiSettings
from ui.stream import StreamController

OFF_TEXT = "Off: the swap runs on this machine."


def state_text(snapshot: Snapshot | None, url: str | None) -> tuple[str, bool]:
    """The box's state line, and whether it is a problem to show in red."""
    if not url:
        return OFF_TEXT, False
    reading = snapshot.remote if snapshot is not None else None
    if reading is None:
        return f"Swaps on {url} when the stream starts (the local swap stands in).", False
    return reading.label(), reading.lost is not None


class RemoteBox(QGroupBox):
    """See the module docstring."""

    def __init__(
        self, stream: StreamController, settings: UiSettings, parent: QWidget | None = None
    ) -> None:
        super().__init__("Remote GPU", parent)
        self.stream = stream
        self.changes = NextStartChanges(stream, settings, self)
        self.url = QLineEdit()
        self.url.setPlaceholderText("grpc://HOST:8001 (empty: this machine)")
        self.url.setToolTip("A `livecam serve` (NVIDIA Triton) server; see docs/remote.md")
        self.token = QLineEdit()
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.token.setPlaceholderText("the server's token (livecam serve --token)")
        self.ca = QLineEdit()
        self.ca.setPlaceholderText("CA certificate PEM (a self-signed grpcs:// server)")
        self.ca.setToolTip("livecam run --remote-ca: turns TLS on with this root certificate")
        self.state = QLabel()
        self.state.setWordWrap(True)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(ERROR_TEXT_STYLE)
        form = QFormLayout(self)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        form.addRow("Server", restart_row(self.url))
        form.addRow("Token", restart_row(self.token))
        form.addRow("TLS CA", restart_row(self.ca))
        form.addRow(self.state)
        form.addRow(self.problem)
        form.addRow(self.changes.bar)
        self._snapshot: Snapshot | None = None
        self.show_config(stream.config)
        self.url.editingFinished.connect(lambda: self._apply(url=self.url.text().strip() or None))
        self.token.editingFinished.connect(
            lambda: self._apply(token=self.token.text().strip() or None)
        )
        self.ca.editingFinished.connect(lambda: self._apply(ca_cert=self.ca.text().strip() or None))
        stream.stats.connect(self.show_stats)
        stream.config_changed.connect(lambda c: self.show_config(self.changes.merged(c)))

    def show_config(self, config: Config) -> None:
        self.url.setText(config.remote.url or "")
        self.token.setText(config.remote.token or "")
        self.ca.setText(config.remote.ca_cert or "")
        self.show_state()

    def show_stats(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self.show_state()

    def show_state(self) -> None:
        url = self.changes.merged(self.stream.config).remote.url
        text, problem = state_text(self._snapshot if self.stream.running else None, url)
        self.state.setText(text)
        self.state.setStyleSheet(ERROR_TEXT_STYLE if problem else "")

    def _apply(self, **fields: Any) -> None:
        try:
            self.changes.apply("remote", **fields)
        except LivecamError as e:
            self.problem.setText(f"{one_line(e.message)}\nfix: {one_line(e.hint)}")
            return
        self.problem.setText("")
        self.show_state()
