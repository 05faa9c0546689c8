"""The Output panel: where the finished frames go.

* **Virtual camera** on/off, its device and pyvirtualcam backend
  (``output.virtualcam_device`` / ``virtualcam_backend``). **Check** (and switching it on)
  opens a tiny virtual camera on a worker thread, as ``livecam doctor`` does: when none can
  start, the panel shows the reason and the fix for this OS.
* **Recording** to a file (a save dialog: the chosen file type gives the name its
  suffix); an existing file is never replaced unless "Replace an existing file" is on
  (``output.overwrite``): the recorder writes to a new timestamped name instead. The
  chosen file is kept (``panel.toml``) while recording is off, until the user clears it.
* **Preview only**: no virtual camera; only the panel shows the frames (and the
  recording, when on: the two are independent choices). Neither: ``output.sinks =
  ["null"]``.
* **Output rate**: 30 or 60 fps, or the input's (``output.fps``). The output size is the
  input's (``source.size``, chosen in the Input panel; sources fit it without stretching).
* **Label**: text such as "AI-modified" written into every output frame (virtual camera,
  recording and preview alike) in a corner (``output.label``, ``label_position``).
* **Marking**: the state of both marks, visible label on/off and the invisible AI mark
  on/off (``output.watermark``: shown, not switched: it is turned off in the config file
  only, and then the line says so in red, naming EU AI Act Article 50). **Verify a file**
  runs ``livecam verify`` on a video or image (a worker thread) and shows its report.

**OBS Studio**: the OBS box (``ui.panels.obs_box``).

Sinks are opened at start: a change made while running applies at the next start
(``next_start``), and each setting says "applies at restart" beside it.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)
from pyvirtualcam.camera import BACKENDS

from livecam.config.schema import Config, field_choices, sink_file
from livecam.errors import LivecamError, one_line
from livecam.sinks.recording.video import VIDEO_CODECS
from livecam.stream.verify import report_text, verify
from livecam.telemetry.doctor import Check, check_virtualcam
from ui.main_window import error_text
from ui.notice import ERROR_TEXT_STYLE
from ui.panels.next_start import NextStartChanges, restart_row
from ui.panels.obs_box import ObsBox
from ui.settings import UiSettings
from ui.stream import StreamController

log = logging.getLogger(__name__)

VIRTUALCAM = "virtualcam"  # the panel ignores "auto" and "window" (ui.stream): its preview
ANY_BACKEND = "Any (try each)"
RATES: tuple[tuple[str, float | None], ...] = (
    ("As the input", None),
    ("30 fps", 30.0),
    ("60 fps", 60.0),
)
#: the save dialog's file types: (name, suffix), the default first
RECORD_TYPES = (
    ("MP4 video", ".mp4"),
    ("AVI video (no sound)", ".avi"),
    ("Matroska video", ".mkv"),
    ("QuickTime video", ".mov"),
)
RECORD_FILTER = ";;".join(f"{name} (*{suffix})" for name, suffix in RECORD_TYPES)
VERIFY_FILTER = (
    "Videos and images (*.mp4 *.mov *.mkv *.avi *.webm *.png *.jpg *.jpeg);;All files (*)"
)
ERROR_STYLE = ERROR_TEXT_STYLE  # readable on the dark window (ui.notice: contrast >= 4.5)
DEFAULT_LABEL = "AI-modified"
MARK_ON = (
    "Invisible AI mark: on. Every swapped frame carries LiveCam's machine-readable mark "
    "(EU AI Act Art. 50); recordings and stills are signed (C2PA). Check a file with "
    "`livecam verify FILE`."
)
MARK_OFF = (
    "Invisible AI mark: OFF (output.watermark = false in the config file): swapped frames "
    "are not marked as AI-modified, as EU AI Act Article 50 requires."
)


def marking_text(config: Config) -> tuple[str, bool]:
    """Both marks' states as the panel shows them, and whether that is a warning."""
    out = config.output
    label = f'on ("{out.label}", {out.label_position})' if out.label is not None else "off"
    mark = MARK_ON if out.watermark else MARK_OFF
    return f"Visible label: {label}.\n{mark}", not out.watermark


def recording_name(path: str, chosen_filter: str) -> str:
    """``path`` as a recording's name: with the suffix of the file type chosen in the
    save dialog when it has no video suffix of its own (the dialog takes ``panel_avi``
    with "AVI video" chosen)."""
    if Path(path).suffix.lower() in VIDEO_CODECS:
        return path
    suffix = next((s for name, s in RECORD_TYPES if chosen_filter.startswith(name)), ".mp4")
    return path + suffix


def recording_problem(path: str) -> str | None:
    """Why ``path`` cannot be recorded to (no video suffix), or None."""
    if Path(path).suffix.lower() in VIDEO_CODECS:
        return None
    kinds = ", ".join(VIDEO_CODECS)
    return f"{Path(path).name} is not a video file name: end it in one of {kinds}"


def sinks_for(virtualcam: bool, record: str | None) -> tuple[str, ...]:
    """The sinks of the chosen outputs (``null`` when neither: preview only)."""
    sinks = ([VIRTUALCAM] if virtualcam else []) + ([record] if record else [])
    return tuple(sinks) or ("null",)


def check_text(check: Check) -> str:
    """A doctor check as the panel shows it: the state, and the fix when it fails."""
    if check.ok:
        return f"Virtual camera available: {check.detail}"
    text = f"No virtual camera: {one_line(check.detail)}"
    return f"{text}\nfix: {one_line(check.fix)}" if check.fix else text


class OutputPanel(QWidget):
    """Choose the outputs; see the module docstring. ``checked(bool)``: a virtual-camera
    check ended (its text in ``vcam_status``); ``message`` shows other problems."""

    checked = Signal(bool)
    _check_done = Signal(object)
    #: a verification ended, with `livecam verify`'s exit status (0 marked, 1 not, 2 bad input)
    verified = Signal(int)
    _verify_done = Signal(object)

    def __init__(
        self, stream: StreamController, settings: UiSettings, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.stream = stream
        self.settings = settings
        self.changes = NextStartChanges(stream, settings, self)

        self.virtualcam = QCheckBox("Virtual camera (for Zoom, Meet, OBS, …)")
        self.device = QLineEdit()
        self.device.setPlaceholderText("default device (e.g. /dev/video10)")
        self.backend = QComboBox()
        self.backend.addItem(ANY_BACKEND, None)
        for name in sorted(BACKENDS):
            self.backend.addItem(name, name)
        self.check_button = QPushButton("Check")
        self.check_button.setToolTip("Try to open a virtual camera now, as `livecam doctor` does")
        self.check_button.clicked.connect(self.check_virtualcam)
        self.vcam_status = QLabel()
        self.vcam_status.setWordWrap(True)
        self.record = QCheckBox("Record to a file")
        self.record_path = QLineEdit()
        self.record_path.setPlaceholderText("recording.mp4")
        self.record_browse = QPushButton("Choose…")
        self.record_browse.clicked.connect(self.choose_recording)
        self.overwrite = QCheckBox("Replace an existing file")
        self.overwrite.setToolTip("Off: the recording gets a new name with the time instead")
        self.preview_only = QCheckBox("Preview only (no virtual camera)")
        self.rate = QComboBox()
        self.rate.addItems([title for title, _ in RATES])
        self.label_on = QCheckBox("Label the output frames")
        self.label_on.setToolTip("The virtual camera, recordings and the preview carry it")
        self.label_text = QLineEdit()
        self.label_text.setPlaceholderText(DEFAULT_LABEL)
        self.label_position = QComboBox()
        self.label_position.addItems(list(field_choices("output.label_position")))
        self.size_note = QLabel()
        self.size_note.setWordWrap(True)
        self.marking = QLabel()
        self.marking.setWordWrap(True)
        self.verify_button = QPushButton("Verify a file…")
        self.verify_button.setToolTip(
            "Look for the invisible AI mark and the signed provenance in a video or image, "
            "as `livecam verify` does"
        )
        self.verify_button.clicked.connect(self.choose_verify)
        self.verify_report = QLabel()
        self.verify_report.setWordWrap(True)
        self.verify_report.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message = QLabel()
        self.message.setWordWrap(True)

        form = QFormLayout()  # a long row puts its field under its label: never sideways
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        form.addRow(restart_row(self.virtualcam))
        device_row = restart_row(self.device, self.backend, actions=(self.check_button,))
        form.addRow("Device / backend", device_row)
        form.addRow(self.vcam_status)
        form.addRow(restart_row(self.record))
        form.addRow("File", restart_row(self.record_path, actions=(self.record_browse,)))
        form.addRow(restart_row(self.overwrite))
        form.addRow(restart_row(self.preview_only))
        form.addRow("Output rate", restart_row(self.rate))
        form.addRow(restart_row(self.label_on))
        form.addRow("Label text / corner", restart_row(self.label_text, self.label_position))
        form.addRow(self.marking)
        form.addRow(self.verify_button)
        form.addRow(self.verify_report)
        form.addRow(self.size_note)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        self.obs_box = ObsBox(stream, self.changes, self)  # OBS Studio (livecam.obs)
        layout.addWidget(self.obs_box)
        layout.addWidget(self.message)
        layout.addWidget(self.changes.bar)
        layout.addStretch(1)

        self.show_config(stream.config)
        self.virtualcam.toggled.connect(self._on_virtualcam)
        self.device.editingFinished.connect(self.apply_virtualcam)
        self.backend.activated.connect(lambda _: self.apply_virtualcam())
        self.record.toggled.connect(self._on_record)
        self.record_path.editingFinished.connect(self.apply_sinks)
        self.overwrite.toggled.connect(lambda on: self._apply(overwrite=on))
        self.preview_only.toggled.connect(self._on_preview_only)
        self.rate.activated.connect(lambda i: self._apply(fps=RATES[i][1]))
        self.label_on.toggled.connect(lambda _: self.apply_label())
        self.label_text.editingFinished.connect(self.apply_label)
        self.label_position.activated.connect(lambda _: self.apply_label())
        self._check_done.connect(self._on_checked)
        self._verify_done.connect(self._on_verified)
        stream.config_changed.connect(lambda c: self.show_config(self.changes.merged(c)))

    # --- showing the config --------------------------------------------------------------
    def show_config(self, config: Config) -> None:
        """Set the widgets from ``config.output`` (signals blocked)."""
        out = config.output
        names = [s.strip().lower() for s in out.sinks]
        files = [s for s in out.sinks if sink_file(s) is not None]
        widgets = (self.virtualcam, self.record, self.overwrite, self.preview_only, self.label_on)
        for w in widgets:
            w.blockSignals(True)
        self.virtualcam.setChecked(VIRTUALCAM in names)
        self.device.setText(out.virtualcam_device or "")
        index = self.backend.findData(out.virtualcam_backend)
        if index < 0 and out.virtualcam_backend:  # not registered here: shown, kept
            self.backend.addItem(
                f"{out.virtualcam_backend} (not available)", out.virtualcam_backend
            )
            index = self.backend.count() - 1
        self.backend.setCurrentIndex(max(index, 0))
        self.record.setChecked(bool(files))
        if files:
            self.record_path.setText(files[0])
        elif not self.record_path.text():  # kept while recording is off
            self.record_path.setText(self.settings.panel.record_file)
        self.overwrite.setChecked(out.overwrite)
        self.preview_only.setChecked(VIRTUALCAM not in names)
        self.label_on.setChecked(out.label is not None)
        if out.label is not None:
            self.label_text.setText(out.label)
        self.label_position.setCurrentText(out.label_position)
        text, warn = marking_text(config)
        self.marking.setText(text)
        self.marking.setStyleSheet(ERROR_STYLE if warn else "")
        for w in widgets:
            w.blockSignals(False)
        rates = [r for _, r in RATES]
        if out.fps not in rates and self.rate.findText(f"{out.fps:g} fps") < 0:
            self.rate.addItem(f"{out.fps:g} fps")
        self.rate.setCurrentIndex(
            rates.index(out.fps) if out.fps in rates else self.rate.findText(f"{out.fps:g} fps")
        )
        self._show_size(config)

    def _show_size(self, config: Config) -> None:
        size = config.source.size
        where = f"{size[0]}x{size[1]}" if size else "the input's own size"
        self.size_note.setText(
            f"Output size: {where} (set in the Input panel; fitted without stretching). "
            "Meeting apps expect 1280x720 at 30 fps."
        )

    # --- virtual camera ------------------------------------------------------------------
    def check_virtualcam(self) -> None:
        """Open a tiny virtual camera on a worker thread; ``checked`` tells the outcome."""
        backend, device = self.backend.currentData(), self.device.text().strip() or None
        self.check_button.setEnabled(False)
        self.vcam_status.setStyleSheet("")
        self.vcam_status.setText("Checking the virtual camera…")

        def work() -> None:
            try:
                check = check_virtualcam(backend, device)
            except Exception as e:  # a backend library failing in its own way
                check = Check("virtual camera", False, f"the check failed: {e}")
            self._check_done.emit(check)

        threading.Thread(target=work, name="panel-vcam-check", daemon=True).start()

    def _on_checked(self, check: Check) -> None:
        self.check_button.setEnabled(True)
        self.vcam_status.setStyleSheet("" if check.ok else ERROR_STYLE)
        self.vcam_status.setText(check_text(check))
        self.checked.emit(bool(check.ok))

    def _on_virtualcam(self, on: bool) -> None:
        self.apply_sinks()
        if on and not self.stream.running:  # running: the device is busy with the stream
            self.check_virtualcam()

    def apply_virtualcam(self) -> None:
        """Put the device and backend into the config."""
        self._apply(
            virtualcam_device=self.device.text().strip() or None,
            virtualcam_backend=self.backend.currentData(),
        )

    # --- verify a file -------------------------------------------------------------------
    def choose_verify(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Verify a video or image", "", VERIFY_FILTER)
        if path:
            self.verify_file(path)

    def verify_file(self, path: str) -> None:
        """Verify ``path`` on a worker thread; ``verified`` tells the outcome."""
        self.verify_button.setEnabled(False)
        self.verify_report.setStyleSheet("")
        self.verify_report.setText(f"Verifying {Path(path).name}…")

        def work() -> None:
            try:
                found = verify(path)
                result = (0 if found.marked else 1, report_text(found))
            except LivecamError as e:
                result = (2, error_text(e))
            except Exception as e:  # a decoder failing in its own way
                result = (2, f"could not verify {path}: {one_line(repr(e))}")
            self._verify_done.emit(result)

        threading.Thread(target=work, name="panel-verify", daemon=True).start()

    def _on_verified(self, result: tuple[int, str]) -> None:
        code, text = result
        self.verify_button.setEnabled(True)
        self.verify_report.setStyleSheet(ERROR_STYLE if code == 2 else "")
        self.verify_report.setText(text)
        self.verified.emit(code)

    # --- recording and preview only ------------------------------------------------------
    def choose_recording(self) -> bool:
        """The save dialog; True when a file was chosen (then recording is on)."""
        start = self.record_path.text().strip() or "recording.mp4"
        path, chosen = QFileDialog.getSaveFileName(self, "Record to", start, RECORD_FILTER)
        if not path:
            return False
        self.record_path.setText(recording_name(path, chosen))
        self.record.blockSignals(True)
        self.record.setChecked(True)
        self.record.blockSignals(False)
        self.apply_sinks()
        return True

    def _on_record(self, on: bool) -> None:
        if on and not self.record_path.text().strip() and not self.choose_recording():
            self.record.blockSignals(True)  # no file chosen: not recording
            self.record.setChecked(False)
            self.record.blockSignals(False)
            return
        self.apply_sinks()

    def _on_preview_only(self, on: bool) -> None:
        """Preview only is the virtual camera off (the recording stays as chosen)."""
        self.virtualcam.setChecked(not on)  # toggled applies (and checks the camera)

    def apply_sinks(self) -> None:
        """Put the chosen outputs into ``output.sinks``; the chosen file is kept."""
        text = self.record_path.text().strip()
        if text != self.settings.panel.record_file:
            self.settings.panel.record_file = text
            self.settings.save_panel()
        problem = recording_problem(text) if self.record.isChecked() and text else None
        record = None
        if self.record.isChecked() and text and problem is None:
            record = str(Path(text).expanduser().absolute())
        self.preview_only.blockSignals(True)
        self.preview_only.setChecked(not self.virtualcam.isChecked())
        self.preview_only.blockSignals(False)
        self._apply(sinks=sinks_for(self.virtualcam.isChecked(), record))
        if problem is not None:
            self.message.setStyleSheet(ERROR_STYLE)
            self.message.setText(problem)

    def apply_label(self) -> None:
        """Put the label (or none) into the config."""
        text = self.label_text.text().strip() or DEFAULT_LABEL
        self._apply(
            label=text if self.label_on.isChecked() else None,
            label_position=self.label_position.currentText(),
        )

    def _apply(self, **fields: Any) -> None:
        try:
            self.changes.apply("output", **fields)
        except LivecamError as e:
            self.message.setStyleSheet(ERROR_STYLE)
            self.message.setText(error_text(e))
            return
        self.message.setStyleSheet("")
        self.message.clear()
