"""Getting the model files a preset needs from the panel: which files, their sizes and
licences (a non-commercial licence must be accepted with a checkbox, and the acceptance is
recorded by the model store), then the download on a worker thread with a progress bar
and a Cancel button. The GUI thread never waits on the network.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from livecam.config.schema import SwapConfig
from livecam.errors import LivecamError, as_livecam_error
from livecam.models.download import Cancelled
from livecam.models.manifest import ModelEntry
from livecam.models.presets import AUTO, resolve_preset
from livecam.models.store import ModelStore
from ui.main_window import error_line

log = logging.getLogger(__name__)


def models_to_get(store: ModelStore, cfg: SwapConfig) -> list[ModelEntry]:
    """The models ``cfg`` needs that are missing here or whose licence is not accepted
    (empty: it can run as it is). ``auto`` never needs any: it picks a preset present."""
    if cfg.preset == AUTO:
        return []
    row = resolve_preset(cfg.preset, store, cfg)
    entries = [store.entry(name) for name in dict.fromkeys(row.model_names(cfg, store.manifest))]
    return [e for e in entries if store.locate(e.name) is None or not store.licence_accepted(e)]


def _size_text(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size else "unknown"


def download_text(entries: Sequence[ModelEntry], digits: int = 1) -> str:
    """What downloading ``entries`` costs: ``469.1 MB``, or the known part and how many
    files have no size in the manifest (``196.3 MB + 2 files of unknown size``): a file of
    unknown size is never counted as 0. The preset list and the download dialog both say it."""
    known = sum(e.size for e in entries)
    unknown = sum(1 for e in entries if not e.size)
    text = f"{known / 1e6:.{digits}f} MB" if known or not unknown else ""
    if unknown:
        files = f"{unknown} file{'s' if unknown > 1 else ''} of unknown size"
        text = f"{text} + {files}" if text else files
    return text


#: the dialog's width: what the table needs, never more than the screen gives (1366x768 up)
DIALOG_WIDTH = 820
SCREEN_MARGIN = 40  # px left to the window manager's frame and a taskbar
TABLE_MAX_HEIGHT = 300


class ModelDownloadDialog(QDialog):
    """Lists ``entries`` and downloads the missing ones with ``store`` on a worker thread.

    Ends with ``accept()`` when every file is here and every licence accepted; ``reject()``
    on Cancel (a running download stops at its next chunk, the partial file is kept for a
    later resume). A failure stays open with its one-line message (``error``) and a retry.
    """

    _progress = Signal(int, int)  # (bytes done of every file, bytes of every file)
    _done = Signal(object)  # LivecamError | None (worker thread -> GUI thread, queued)

    def __init__(
        self, store: ModelStore, entries: Sequence[ModelEntry], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Download models")
        self.store = store
        self.entries = list(entries)
        self.error: str | None = None
        self._cancel = threading.Event()
        self._worker: threading.Thread | None = None

        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("These model files are needed:"))
        self.table = QTableWidget(len(self.entries), 4, self)
        self.table.setHorizontalHeaderLabels(["Model", "File", "Size", "Licence"])
        for i, e in enumerate(self.entries):
            here = store.locate(e.name) is not None
            cells = [e.name, e.file, "present" if here else _size_text(e.size), e.licence]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                if j == 3 and e.licence_url:
                    item.setToolTip(e.licence_url)
                self.table.setItem(i, j, item)
        # the licence column takes what is left and wraps: the dialog never outgrows the
        # screen (a licence line is longer than a 1920 px screen)
        self.table.setWordWrap(True)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.table.horizontalHeader()
        for column in range(3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        header.sectionResized.connect(lambda *_: self._fit_rows())
        self.table.verticalHeader().hide()
        layout.addWidget(self.table, 1)
        self.total_label = QLabel(f"Download: {download_text(self._missing())}")
        layout.addWidget(self.total_label)

        restricted = [e for e in self.entries if not store.licence_accepted(e)]
        # a checkbox's text never wraps: a short one, and the licences on a wrapped label
        self.accept_box = QCheckBox("I accept the licences below that forbid commercial use")
        self.accept_list = QLabel(", ".join(f"{e.name} ({e.licence})" for e in restricted))
        self.accept_list.setWordWrap(True)
        self.accept_list.setContentsMargins(24, 0, 0, 0)
        for widget in (self.accept_box, self.accept_list):
            widget.setVisible(bool(restricted))
            layout.addWidget(widget)
        self.accept_box.toggled.connect(self._update_buttons)
        self._needs_acceptance = bool(restricted)

        self.progress = QProgressBar(self)
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        layout.addWidget(self.progress)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)

        self.buttons = QDialogButtonBox(self)
        self.download_button = QPushButton("Download")
        self.buttons.addButton(self.download_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.cancel_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.download_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.reject)
        layout.addWidget(self.buttons)

        self._progress.connect(self._on_progress)
        self._done.connect(self._on_done)
        self._update_buttons()
        self._fit_screen()

    def _fit_screen(self) -> None:
        """Fit the screen's free area (at most ``DIALOG_WIDTH`` wide): Download and Cancel
        always on screen; a long table scrolls vertically."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        free = screen.availableGeometry() if screen is not None else None
        width = DIALOG_WIDTH if free is None else min(DIALOG_WIDTH, free.width() - SCREEN_MARGIN)
        self.setMaximumWidth(width if free is None else free.width() - SCREEN_MARGIN)
        if free is not None:
            self.setMaximumHeight(free.height() - SCREEN_MARGIN)
        self.resize(width, min(self.sizeHint().height(), self.maximumHeight()))

    def _fit_rows(self) -> None:
        """Rows as tall as their wrapped licence; the table shows them all up to
        ``TABLE_MAX_HEIGHT`` (then it scrolls)."""
        self.table.resizeRowsToContents()
        rows = sum(self.table.rowHeight(i) for i in range(self.table.rowCount()))
        frame = 2 * self.table.frameWidth() + self.table.horizontalHeader().height()
        self.table.setMinimumHeight(min(rows + frame, TABLE_MAX_HEIGHT))

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self._fit_rows()  # the columns have their real widths only now
        self.resize(self.width(), min(self.sizeHint().height(), self.maximumHeight()))

    @property
    def running(self) -> bool:
        return self._worker is not None

    def _missing(self) -> list[ModelEntry]:
        return [e for e in self.entries if self.store.locate(e.name) is None]

    def _bytes_needed(self) -> int:
        return sum(e.size for e in self._missing())

    def _update_buttons(self) -> None:
        accepted = not self._needs_acceptance or self.accept_box.isChecked()
        self.download_button.setEnabled(accepted and not self.running)
        self.accept_box.setEnabled(not self.running)

    def start(self) -> None:
        """Record the licence acceptance and download the missing files (worker thread)."""
        if self.running:
            return
        if self._needs_acceptance and not self.accept_box.isChecked():
            self.status.setText("Accept the licences first (the checkbox above).")
            return
        self.error = None
        self.status.setText("Downloading…")
        self._cancel.clear()
        self._worker = threading.Thread(
            target=self._download, args=(self._missing(),), name="model-download", daemon=True
        )
        self._update_buttons()
        self._worker.start()

    def _download(self, missing: list[ModelEntry]) -> None:  # worker thread
        error: LivecamError | None = None
        try:
            self.store.check_licences(self.entries, accept=self._needs_acceptance)
            total = sum(e.size for e in missing)
            done = 0
            for entry in missing:

                def progress(got: int, size: int | None, base: int = done) -> None:
                    if self._cancel.is_set():
                        raise Cancelled
                    self._progress.emit(base + got, max(total, base + (size or got)))

                path = self.store.fetch(entry, progress=False, on_progress=progress)
                done += path.stat().st_size
        except Cancelled:
            error = LivecamError("the download was cancelled", "download again to resume")
        except Exception as e:  # a network or disk failure: its one line, shown
            failed = as_livecam_error(e, "model download")
            left = [m for m in missing if self.store.locate(m.name) is None]
            if left:  # how to get every file still missing by hand, and where to put it
                failed = LivecamError(failed.message, self.store.by_hand_hint(left))
            error = failed
        self._done.emit(error)

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setValue(round(1000 * done / total) if total else 0)
        self.status.setText(f"Downloading… {done / 1e6:.1f} of {total / 1e6:.1f} MB")

    def _on_done(self, error: LivecamError | None) -> None:
        self._worker = None
        self._update_buttons()
        if self._cancel.is_set():
            super().reject()
            return
        if error is not None:
            self.error = error.message
            self.status.setText(f"Download failed: {error_line(error)}")
            self.download_button.setText("Retry")
            return
        self.progress.setValue(1000)
        self.status.setText("Done.")
        self.accept()

    def reject(self) -> None:
        """Cancel: stop a running download at its next chunk, then close."""
        if self.running:
            self._cancel.set()
            self.status.setText("Cancelling…")
            self.cancel_button.setEnabled(False)
            return  # closes in _on_done, once the worker has stopped
        super().reject()
