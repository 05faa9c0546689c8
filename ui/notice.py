"""The panel's notices: the responsible-use notice (shown on the panel's first start,
acknowledged once, kept in ``panel.toml``; declining it closes the panel), and the colours
every error, warning and info line of the panel is written in.

Those colours are the dark palette's (``WINDOW``, the warning amber, a light red), chosen
for a WCAG 2 contrast ratio of at least ``MIN_CONTRAST`` (4.5:1, level AA for normal
text) against their background; ``contrast_ratio`` computes it (tests/ui check every style
of the panel with it).
"""

from __future__ import annotations

import logging

from PySide6.QtGui import QColor
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


# --- the colours of notices --------------------------------------------------------------
MIN_CONTRAST = 4.5
WINDOW = "#24242b"  # the palette's Window: the background of every panel and the status bar
ERROR_FG, ERROR_BG = "#ffb4b4", "#4a1d1d"
WARNING_FG, WARNING_BG = "#ffd27f", "#3a2f14"  # the palette's warning amber
INFO_FG, INFO_BG = "#d8d8e0", "#2a2a33"
ERROR_TEXT_FG = "#ff9a8c"  # a light red for an error line on the window's own background

_BOX = "padding: 6px; border-radius: 4px;"
ERROR_STYLE = f"color: {ERROR_FG}; background: {ERROR_BG}; {_BOX}"
WARNING_STYLE = f"color: {WARNING_FG}; background: {WARNING_BG}; {_BOX}"
INFO_STYLE = f"color: {INFO_FG}; background: {INFO_BG}; {_BOX}"
#: an error line in a panel (no box of its own: the window's background)
ERROR_TEXT_STYLE = f"color: {ERROR_TEXT_FG};"
#: a warning word in the status bar (a provider fell back, no virtual camera)
WARNING_TEXT_STYLE = f"color: {WARNING_FG}; font-weight: bold;"


def relative_luminance(colour: str) -> float:
    """WCAG 2's relative luminance of ``colour`` (``#rrggbb`` or a Qt colour name), 0..1."""
    qc = QColor(colour)
    if not qc.isValid():
        raise ValueError(f"not a colour: {colour!r}")

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(qc.redF()) + 0.7152 * linear(qc.greenF()) + 0.0722 * linear(qc.blueF())


def contrast_ratio(foreground: str, background: str) -> float:
    """WCAG 2's contrast ratio of two colours: 1 (the same) to 21 (black on white)."""
    a, b = sorted((relative_luminance(foreground), relative_luminance(background)))
    return (b + 0.05) / (a + 0.05)
