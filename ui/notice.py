"""The responsible-use notice: shown on the panel's first start, acknowledged once (kept in
``panel.toml``); declining it closes the panel."""

from __future__ import annotations

import logging

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from ui.settings import UiSettings

log = logging.getLogger(__name__)

TITLE = "LiveCam: use it responsibly"
NOTICE_TEXT = (
    "<p><b>Before you start</b></p>"
    "<ul>"
    "<li>Use only faces you have the consent of the person to use.</li>"
    "<li>Tell your audience that your video is modified by AI "
    "(the Output tab can put an &quot;AI-modified&quot; label on the video).</li>"
    "<li>Never use LiveCam to deceive, impersonate or harass anyone.</li>"
    "</ul>"
)
ACCEPT = "I understand"
DECLINE = "Quit"


class NoticeDialog(QDialog):
    """The notice with an accept and a decline button (``exec`` returns Accepted or not)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(TITLE)
        text = QLabel(NOTICE_TEXT)
        text.setWordWrap(True)
        text.setMinimumWidth(420)
        self.buttons = QDialogButtonBox()
        self.accept_button = self.buttons.addButton(ACCEPT, QDialogButtonBox.ButtonRole.AcceptRole)
        self.decline_button = self.buttons.addButton(
            DECLINE, QDialogButtonBox.ButtonRole.RejectRole
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.buttons)


def acknowledge(settings: UiSettings, dialog: NoticeDialog | None = None) -> bool:
    """True when the notice was acknowledged, now or before (then it is not shown again);
    a new acknowledgement is saved. False: the user declined (close the panel)."""
    if settings.panel.notice_acknowledged:
        return True
    dialog = dialog if dialog is not None else NoticeDialog()
    if dialog.exec() != QDialog.DialogCode.Accepted:
        log.info("responsible-use notice declined: closing")
        return False
    settings.panel.notice_acknowledged = True
    settings.save_panel()
    return True
