"""The panel's main window: the live preview, Start/Stop, the master swap switch, the side
panels in tabs and a status bar (fps, latency, providers with fallbacks, virtual camera).

The window changes the stream only through its ``StreamController``. It loads the saved
config into it at start, saves the config on every change and at close, and remembers its
geometry. Closing it stops the stream (threads joined within ``CLOSE_TIMEOUT_S``).

Side panels plug in through ``PANELS``: one ``(tab title, module in ui.panels, class)``
row each; a module not written yet is a placeholder tab.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from PySide6.QtCore import QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QColor,
    QGuiApplication,
    QKeySequence,
    QPalette,
)
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from livecam.config.schema import Config
from livecam.config.specs import SourceSpec
from livecam.errors import (
    LivecamError,
    SourceError,
    StartupError,
    VirtualCameraUnavailable,
    as_livecam_error,
    one_line,
    panel_fix,
)
from livecam.sinks.virtualcam import probe_virtualcam, virtualcam_fix
from livecam.telemetry.snapshot import Snapshot, provider_label
from livecam.types import Event, Frame
from ui.keyboard import install_keyboard_help
from ui.notice import (
    ERROR_STYLE,
    ERROR_TEXT_STYLE,
    INFO_STYLE,
    WARNING_STYLE,
    WARNING_TEXT_STYLE,
)
from ui.preview_widget import PreviewWidget
from ui.settings import UiSettings
from ui.stream import CLOSE_TIMEOUT_S, NO_SOUND, LiveView, StreamController
from ui.wheel_guard import install_wheel_guard

log = logging.getLogger(__name__)

TITLE = "LiveCam"
NO_CAMERA_NOTE = "No camera found"  # how the Input tab's no-camera note begins
NO_FACE_TEXT = (
    "The swap needs a face photo: open one in the Source tab (Open photo…), then switch "
    "the swap on."
)
#: the status bar's line when a click on the preview is far from every face
NO_FACE_THERE = "No face there: click on a face box to swap that person (right-click: auto)"
DEFAULT_SIZE = QSize(1280, 760)  # the first window, shrunk to fit smaller screens
FRAME_MARGIN = QSize(16, 48)  # px the window manager adds around it (title bar, borders)
VIRTUALCAM = "virtualcam"


class PanelSpec(NamedTuple):
    """One side panel: its tab title, its module under ``ui.panels`` and its class."""

    title: str
    module: str
    cls: str


#: the side panels, in tab order; a module that does not exist yet gets a placeholder tab
PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("Source", "source_panel", "SourcePanel"),
    PanelSpec("Input", "input_panel", "InputPanel"),
    PanelSpec("Output", "output_panel", "OutputPanel"),
    PanelSpec("Processing", "processing_panel", "ProcessingPanel"),
    PanelSpec("Hotkeys", "hotkeys_panel", "HotkeysPanel"),
    PanelSpec("Stats", "stats_panel", "StatsPanel"),
)

FALLBACK_STYLE = WARNING_TEXT_STYLE  # the error/warning/info styles: ui.notice (contrast)
BUTTON_STYLE = "QPushButton { padding: 6px 18px; font-weight: bold; }"
SWAP_STYLE = BUTTON_STYLE + " QPushButton:checked { background: #2e7d4f; color: white; }"
#: blank and freeze while on, the badges and REC: white on red (contrast 5.6:1)
ALERT_STYLE = (
    "QPushButton { padding: 6px 10px; font-weight: bold; }"
    " QPushButton:checked { background: #c62828; color: white; }"
)
BADGE_STYLE = "color: white; background: #c62828; font-weight: bold; padding: 1px 6px;"


def error_text(error: LivecamError) -> str:
    """The error as the window shows it: one line, and the fix (in the panel's words,
    ``panel_fix``) on a second line."""
    fix = panel_fix(error)
    return f"{one_line(error.message)}\nfix: {one_line(fix)}" if fix else one_line(error.message)


def error_line(error: LivecamError) -> str:
    """The error on one line with its fix in brackets (a panel's or a dialog's label)."""
    fix = panel_fix(error)
    return f"{one_line(error.message)}{f' (fix: {one_line(fix)})' if fix else ''}"


def target_text(target: str) -> str:
    """The swap target line under the preview (``target``: ``auto`` or ``face #3``)."""
    if target == "auto":
        return "Swapping: auto, the main face (click a face in the preview to choose)"
    return f"Swapping: {target} (right-click the preview or Auto: back to the main face)"


def face_text(config: Config) -> str:
    """The source face in use, as the window names it under its buttons."""
    face = config.swap.face
    if not face or "swap" not in config.pipeline.stages:
        return "Face in use: none (choose one in the Source tab)"
    index = config.swap.face_index
    return f"Face in use: {Path(face).name}" + (f" #{index}" if index else "")


def startup_text(error: LivecamError) -> str:
    """A start-up error's text: each cause on its line with its fix."""
    causes = getattr(error, "causes", None) or [error]
    return "\n".join(f"Could not start: {error_text(c)}" for c in causes)


def providers_text(snapshot: Snapshot) -> tuple[str, bool]:
    """The status bar's provider text and whether any stage fell back."""
    labels = [provider_label(n, p) for n, p in snapshot.providers.items()]
    fallback = any(p.get("used") != p.get("requested") for p in snapshot.providers.values())
    return (" ".join(labels) if labels else "provider: CPU (no models)"), fallback


def remote_text(snapshot: Snapshot) -> tuple[str, str, bool]:
    """The status bar's remote swap text (empty: no remote swap), its whole line for the
    tooltip, and whether it is lost (the local swap stands in)."""
    reading = snapshot.remote
    if reading is None:
        return "", "", False
    line = reading.label()
    return line.partition(": ")[0], line, reading.lost is not None


def wants_virtualcam(config: Config) -> bool:
    """True when ``config``'s outputs include the virtual camera."""
    return any(s.strip().lower() == VIRTUALCAM for s in config.output.sinks)


def virtualcam_text(
    config: Config,
    running: bool,
    problem: LivecamError | None = None,
    checked: bool = True,
    preview_only: bool = False,
) -> str:
    """The virtual camera's state for the status bar: ``problem`` is why the last check
    found none (None: it works, or ``checked`` False: the check is still running);
    ``preview_only``: the running stream left it out because none works."""
    if not wants_virtualcam(config):
        return "virtual camera: off"
    if running and preview_only:
        return "virtual camera: NOT AVAILABLE, preview only"
    if running:
        return "virtual camera: on"
    if problem is not None:
        return "virtual camera: NOT AVAILABLE (Start runs the preview only)"
    if not checked:
        return "virtual camera: checking…"
    return "virtual camera: ready (starts with the stream)"


def no_virtualcam_text(problem: LivecamError) -> str:
    """The window's note while the stream runs in preview only for want of a virtual
    camera: what that means, and this OS's fix."""
    fix = panel_fix(problem) or virtualcam_fix()
    return (
        "No virtual camera: OBS, Zoom, Meet or Discord cannot see LiveCam; the stream runs "
        f"in the preview only.\nfix: {one_line(fix)}"
    )


def fit_rect(rect: QRect, free: QRect, centre: bool = False) -> QRect:
    """``rect`` (a window's client area) shrunk and moved so that it and the window
    manager's frame (``FRAME_MARGIN``) lie inside ``free``; ``centre``: centred in it."""
    width = max(1, min(rect.width(), free.width() - FRAME_MARGIN.width()))
    height = max(1, min(rect.height(), free.height() - FRAME_MARGIN.height()))
    side, bottom = FRAME_MARGIN.width() // 2, FRAME_MARGIN.width() // 2
    top = FRAME_MARGIN.height() - bottom  # the title bar
    lo_x, hi_x = free.left() + side, free.right() + 1 - side - width
    lo_y, hi_y = free.top() + top, free.bottom() + 1 - bottom - height
    if centre:
        x, y = (lo_x + hi_x) // 2, (lo_y + hi_y) // 2
    else:
        x, y = min(max(rect.x(), lo_x), hi_x), min(max(rect.y(), lo_y), hi_y)
    return QRect(x, y, width, height)


def apply_theme(app: QApplication) -> None:
    """The panel's look: Qt's Fusion style with a dark palette (easy on a streamer's eyes
    next to OBS, and the same on every OS)."""
    app.setStyle("Fusion")
    palette = QPalette()
    colours = {
        QPalette.ColorRole.Window: "#24242b",
        QPalette.ColorRole.WindowText: "#e4e4ea",
        QPalette.ColorRole.Base: "#1b1b20",
        QPalette.ColorRole.AlternateBase: "#2a2a33",
        QPalette.ColorRole.Text: "#e4e4ea",
        QPalette.ColorRole.Button: "#2f2f38",
        QPalette.ColorRole.ButtonText: "#e4e4ea",
        QPalette.ColorRole.Highlight: "#336fd6",  # white on it: contrast 4.8:1
        QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.ToolTipBase: "#2a2a33",
        QPalette.ColorRole.ToolTipText: "#e4e4ea",
        QPalette.ColorRole.PlaceholderText: "#8a8a96",
    }
    for role, colour in colours.items():
        palette.setColor(role, QColor(colour))
    # a control disabled because it has no effect (Processing tab) must look it
    for role, colour in (
        (QPalette.ColorRole.WindowText, "#7c7c88"),
        (QPalette.ColorRole.Text, "#7c7c88"),
        (QPalette.ColorRole.ButtonText, "#7c7c88"),
        (QPalette.ColorRole.Highlight, "#4a4a55"),
    ):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(colour))
    app.setPalette(palette)


def load_panel(spec: PanelSpec, stream: StreamController, settings: UiSettings) -> QWidget:
    """The panel of ``spec``, or a placeholder saying why it is not there."""
    name = f"ui.panels.{spec.module}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:  # the panel exists but something it needs is missing
            log.warning("the %s panel could not load: %s", spec.title, e)
            return _placeholder(f"The {spec.title} panel could not load: {e}")
        return _placeholder(f"The {spec.title} panel is not available in this version.")
    try:
        panel: QWidget = getattr(module, spec.cls)(stream, settings, None)
    except Exception as e:  # a broken panel must not take the window down
        log.warning("the %s panel failed to open", spec.title, exc_info=True)
        return _placeholder(f"The {spec.title} panel failed to open: {e!r}")
    return panel


def _placeholder(text: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName("placeholder")
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    return label


class MainWindow(QMainWindow):
    """The LiveCam window over ``stream``; see the module docstring.

    ``message`` shows the last error or notice (start-up errors, failed live changes,
    warnings from the stream); ``panels`` maps each tab title to its widget.

    The virtual camera is checked when the window opens, when its settings change and
    after each stop, on a worker thread (``virtualcam_checked(bool)`` when done; the
    status bar says what it found). When none works, Start runs the stream in the preview
    only (``StreamController.skip_sinks``) and the window shows the fix, instead of failing.
    """

    virtualcam_checked = Signal(bool)
    _vcam_probed = Signal(object, object)  # (settings checked, device text | LivecamError)

    def __init__(
        self,
        stream: StreamController,
        settings: UiSettings,
        panels: Sequence[PanelSpec] = PANELS,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.stream = stream
        self.settings = settings
        self.stuck_threads: list[str] = []  # threads that did not stop when the window closed
        self.closing = False  # the window is closing: nothing new is started
        self.setWindowTitle(TITLE)
        if not stream.running:
            stream.set_config(settings.config)

        self.preview = PreviewWidget()
        self.start_button = QPushButton("Start")
        self.start_button.setObjectName("start")
        self.start_button.setMinimumWidth(110)
        self.swap_button = QPushButton("Swap")
        self.swap_button.setObjectName("swap")
        self.swap_button.setCheckable(True)
        self.swap_button.setToolTip("Turn the face swap on or off (live)")
        self.swap_button.setStyleSheet(SWAP_STYLE)
        self.start_button.setStyleSheet(BUTTON_STYLE)
        self.blank_button = self._switch_button(
            "blank", "Blank", "Privacy: black frames instead of the camera (live)"
        )
        self.freeze_button = self._switch_button(
            "freeze", "Freeze", "Repeat the current frame (live)"
        )
        self.rec_label = QLabel()  # REC, the elapsed time and the file really written
        self.rec_label.setObjectName("rec")
        self.rec_label.setStyleSheet(BADGE_STYLE)
        self.rec_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.rec_label.hide()
        self.live_view = stream.live  # the switches as last shown (``_on_live``)
        self.auto_button = QPushButton("Auto")
        self.auto_button.setObjectName("target_auto")
        self.auto_button.setToolTip("Swap the main face again (select one)")
        self.target_label = QLabel(target_text("auto"))
        self.target_label.setObjectName("target")
        self.target_label.setWordWrap(True)  # wraps rather than widening the window
        self.face_label = QLabel(face_text(stream.config))  # whoever changed it (N/P keys)
        self.face_label.setObjectName("face_in_use")
        self.message = QLabel()
        self.message.setObjectName("message")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.hide()

        controls = QHBoxLayout()
        controls.addWidget(self.start_button)
        controls.addWidget(self.swap_button)
        controls.addWidget(self.blank_button)
        controls.addWidget(self.freeze_button)
        controls.addWidget(self.auto_button)
        controls.addWidget(self.target_label, 1)
        left = QWidget()
        column = QVBoxLayout(left)
        column.setContentsMargins(6, 6, 6, 6)
        column.addLayout(controls)
        column.addWidget(self.face_label)
        column.addWidget(self.rec_label)
        column.addWidget(self.message)
        column.addWidget(self.preview, 1)

        self.tabs = QTabWidget()
        self.tabs.setMinimumWidth(460)
        self.panels: dict[str, QWidget] = {}
        for spec in panels:
            widget = load_panel(spec, stream, settings)
            self.panels[spec.title] = widget
            scroll = QScrollArea()  # a tall panel scrolls instead of growing the window
            scroll.setWidgetResizable(True)  # and fits the tab's width: never sideways
            scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(widget)
            self.tabs.addTab(scroll, spec.title)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(self.tabs)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setChildrenCollapsible(False)
        self.splitter = splitter  # its position is saved at close (panel.toml)
        self.setCentralWidget(splitter)
        install_wheel_guard(self)  # the wheel scrolls a tab; it changes a value only when focused
        self.keyboard = install_keyboard_help(self)  # Enter presses buttons; a focus ring

        self.fps_label = QLabel("fps n/a")
        self.latency_label = QLabel("latency n/a")
        self.provider_label = QLabel("")
        self.vcam_label = QLabel("")
        self.remote_label = QLabel("")  # the remote swap: its server, or REMOTE LOST
        self.remote_label.hide()
        labels = (
            self.fps_label,
            self.latency_label,
            self.provider_label,
            self.remote_label,
            self.vcam_label,
        )
        for label in labels:
            label.setContentsMargins(8, 0, 8, 0)
            self.statusBar().addPermanentWidget(label)
        self.badge_label = QLabel()  # BLANK FROZEN SWAP OFF, as on the preview
        self.badge_label.setObjectName("badges")
        self.badge_label.setStyleSheet(BADGE_STYLE)
        self.badge_label.hide()
        self.statusBar().insertPermanentWidget(0, self.badge_label)

        quit_action = QAction("Quit", self)
        quit_action.setShortcut(QKeySequence("Ctrl+Q"))
        quit_action.triggered.connect(self.close)
        self.addAction(quit_action)

        self.start_button.clicked.connect(self.toggle_running)
        self.swap_button.clicked.connect(self.set_swap)
        self.blank_button.clicked.connect(self.set_blank)
        self.freeze_button.clicked.connect(self.set_freeze)
        stream.live_changed.connect(self._on_live)
        self.auto_button.clicked.connect(lambda: self.set_target(None))
        self.preview.picked.connect(lambda x, y: self.set_target((x, y)))
        self.preview.auto_requested.connect(lambda: self.set_target(None))
        stream.running_changed.connect(self._on_running)
        stream.config_changed.connect(self._on_config)
        stream.frame.connect(self._on_frame)
        stream.stats.connect(self._on_stats)
        stream.applied.connect(self._on_applied)
        stream.failed.connect(self._on_failed)
        stream.event_received.connect(self._on_event)
        stream.stopped.connect(self._on_stopped)
        stream.start_failed.connect(self._on_start_failed)
        self._restore_geometry()
        self.vcam_problem: LivecamError | None = None  # why no virtual camera works (None: it does)
        #: the input of the last failed start and its causes (while the window shows them)
        self.failed_start: tuple[str, list[LivecamError]] | None = None
        self._vcam_checked = False
        self._vcam_key: tuple[bool, str | None, str | None] | None = None
        self._vcam_probed.connect(self._on_vcam_probed)
        checked = getattr(self.panels.get("Output"), "checked", None)  # its Check button
        if checked is not None:
            checked.connect(lambda _ok: self.check_virtualcam(force=True))
        camera_missing = getattr(self.panels.get("Input"), "camera_missing", None)
        if camera_missing is not None:
            camera_missing.connect(self._on_camera_missing)
        self._on_running(stream.running)  # stopped: checks the virtual camera

    # --- actions -------------------------------------------------------------------------
    def toggle_running(self) -> None:
        """Start the stream (an error is shown in the window) or stop it."""
        if self.stream.running:
            self.stream.stop()
            return
        if self.stream.starting:
            return
        self.show_message("Starting…", error=False)
        self.start_button.setEnabled(False)
        self.stream.start_async()  # ends in running_changed(True) or start_failed

    def _on_start_failed(self, error: LivecamError) -> None:
        self.start_button.setEnabled(True)
        causes: list[LivecamError] = getattr(error, "causes", None) or [error]
        if (
            wants_virtualcam(self.stream.config)
            and VIRTUALCAM not in self.stream.skip_sinks
            and all(isinstance(c, VirtualCameraUnavailable) for c in causes)
        ):  # the virtual camera was the only problem (its check had not ended): preview only
            self._vcam_checked, self.vcam_problem = True, causes[0]
            self.stream.skip_sinks = frozenset({VIRTUALCAM})
            self.toggle_running()
            return
        self.failed_start = (self.stream.config.source.spec, causes)
        self.show_message(startup_text(error))

    def set_swap(self, on: bool) -> None:
        """The master swap switch: live through the control plane, else in the config. On
        with no face photo chosen: said in the panel's words, nothing changed."""
        if on and not self.stream.config.swap.face and not self.stream.config.swap.select.map:
            self.show_message(NO_FACE_TEXT)
            self._sync_swap()
            return
        self.stream.set_swap(on)

    def set_blank(self, on: bool) -> None:
        """Privacy: black frames instead of the camera, or the camera again (live only)."""
        self.stream.change(f"blank {'on' if on else 'off'}", lambda c: c.set_blank(on))

    def set_freeze(self, on: bool) -> None:
        """Repeat the current frame, or go live again (live only)."""
        self.stream.change(f"freeze {'on' if on else 'off'}", lambda c: c.set_freeze(on))

    def _switch_button(self, name: str, title: str, tip: str) -> QPushButton:
        button = QPushButton(title)  # checked (red) while on; the badges say it too
        button.setObjectName(name)
        button.setCheckable(True)
        button.setEnabled(False)  # live only: enabled while the stream runs
        button.setToolTip(tip)
        button.setStyleSheet(ALERT_STYLE)
        return button

    def set_target(self, point: tuple[float, float] | None) -> None:
        """Swap the person at ``point`` of the frame (a click on the preview) or the main
        face again (None); only while running (the choice lives with the stream). A click
        far from every face the preview numbers picks nobody, and the status bar says so."""
        if not self.stream.running:
            return
        controls = self.stream.controls
        seen = controls.state.faces_seen if controls is not None else ()
        if point is not None and not any(face.reaches(point) for face in seen):
            self.statusBar().showMessage(NO_FACE_THERE, 8000)
            return
        self.stream.set_target(point)

    def _sync_target(self) -> None:
        self.target_label.setText(target_text(self.stream.target_text))
        self.auto_button.setEnabled(self.stream.running)

    def show_message(self, text: str, error: bool = True) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(ERROR_STYLE if error else INFO_STYLE)
        self.message.show()

    def show_warning(self, text: str) -> None:
        """``text`` in the warning colours (something works less than it could)."""
        self.show_message(text, error=False)
        self.message.setStyleSheet(WARNING_STYLE)

    def clear_message(self) -> None:
        self.message.clear()
        self.message.hide()

    # --- stream signals ------------------------------------------------------------------
    def _on_running(self, running: bool) -> None:
        self.start_button.setText("Stop" if running else "Start")
        self.start_button.setEnabled(True)
        if running:
            self.failed_start = None
            self.clear_message()
            if self.preview_only and self.vcam_problem is not None:
                self.show_warning(no_virtualcam_text(self.vcam_problem))
        self._sync_swap()
        self._sync_target()
        self._show_virtualcam()
        if not running and not self.closing:
            self.check_virtualcam(force=True)  # a driver loaded meanwhile is found
            self.preview.clear()
            self.fps_label.setText("fps n/a")
            self.latency_label.setText("latency n/a")

    def _sync_swap(self) -> None:
        self._on_live(self.stream.live)

    def _on_live(self, view: LiveView) -> None:
        """Show the stream's switches as they are now, whoever changed them (a hotkey,
        ``--commands``, this window, the API): buttons, badges, target and REC."""
        self.live_view = view
        buttons = ((self.swap_button, view.swap), (self.blank_button, view.blank))
        for button, on in (*buttons, (self.freeze_button, view.frozen)):
            button.blockSignals(True)
            button.setChecked(on)
            button.blockSignals(False)
        self.swap_button.setText("Swap: on" if view.swap else "Swap: off")
        self.blank_button.setEnabled(view.running)
        self.freeze_button.setEnabled(view.running)
        self.preview.set_badges(view.badges)
        self.badge_label.setText("  ".join(view.badges))
        self.badge_label.setVisible(bool(view.badges))
        self.target_label.setText(target_text(view.target))
        self._show_recording()

    def _show_recording(self) -> None:
        view = self.live_view
        text = view.recording_text()
        self.rec_label.setText(f"\u25cf {text}" if text else "")
        tip = [f"recording to {p}" for p in view.recordings]
        self.rec_label.setToolTip("\n".join([*tip, NO_SOUND] if tip else []))
        self.rec_label.setVisible(bool(text))

    def _on_config(self, config: Config) -> None:
        self.settings.save_config(config)
        self.face_label.setText(face_text(config))
        self._sync_swap()
        self.check_virtualcam()  # only when its settings changed
        self._show_virtualcam()
        self._forget_camera_note(config)

    # --- the virtual camera --------------------------------------------------------------
    @property
    def preview_only(self) -> bool:
        """True while the stream runs without the configured virtual camera (none works)."""
        return (
            self.stream.running
            and wants_virtualcam(self.stream.config)
            and VIRTUALCAM in self.stream.skip_sinks
        )

    def check_virtualcam(self, force: bool = False) -> None:
        """Check the configured virtual camera on a worker thread (not while the stream
        runs or starts: it holds the device); ``virtualcam_checked`` tells the outcome.
        Without ``force`` only when its settings (on, backend, device) changed."""
        out = self.stream.config.output
        key = (wants_virtualcam(self.stream.config), out.virtualcam_backend, out.virtualcam_device)
        if self.stream.running or self.stream.starting or (key == self._vcam_key and not force):
            return
        self._vcam_key, self._vcam_checked = key, False
        if not key[0]:
            self._on_vcam_probed(key, None)
            return
        self._show_virtualcam()

        def work() -> None:
            try:
                found: str | LivecamError = probe_virtualcam(key[1], key[2])
            except Exception as e:  # VirtualCameraUnavailable, or a backend's own failure
                found = as_livecam_error(e, "virtual camera")
            try:
                self._vcam_probed.emit(key, found)
            except RuntimeError:  # the window was closed and deleted meanwhile
                log.debug("virtual camera checked after the window closed: %s", found)

        threading.Thread(target=work, name="panel-vcam-probe", daemon=True).start()

    def _on_vcam_probed(
        self, key: tuple[bool, str | None, str | None], found: str | LivecamError | None
    ) -> None:
        if key != self._vcam_key:  # its settings changed meanwhile: a newer check runs
            return
        self._vcam_checked = True
        self.vcam_problem = found if isinstance(found, LivecamError) else None
        if isinstance(found, LivecamError):
            self.vcam_label.setToolTip(f"{found.message}\nfix: {panel_fix(found)}")
        else:
            self.vcam_label.setToolTip(f"virtual camera: {found}" if found else "")
        self.stream.skip_sinks = frozenset({VIRTUALCAM}) if self.vcam_problem else frozenset()
        self._show_virtualcam()
        if key[0]:
            self.virtualcam_checked.emit(self.vcam_problem is None)

    def _show_virtualcam(self) -> None:
        config, running = self.stream.config, self.stream.running
        problem = self.vcam_problem if wants_virtualcam(config) else None
        self.vcam_label.setText(
            virtualcam_text(config, running, problem, self._vcam_checked, self.preview_only)
        )
        self.vcam_label.setStyleSheet(WARNING_TEXT_STYLE if problem is not None else "")

    def _on_camera_missing(self, text: str) -> None:
        if not self.stream.running and not self.stream.starting:
            self.show_warning(text)

    def _forget_camera_note(self, config: Config) -> None:
        """The no-camera note goes once the input is not a camera any more; a failed
        start's input causes (``cannot open camera 0``) go once another input is chosen
        (its other causes stay, the window saying nothing stale)."""
        note = self.message.text().startswith(NO_CAMERA_NOTE) and not self.message.isHidden()
        if note and SourceSpec.parse(config.source.spec).kind != "camera":
            self.clear_message()
        if self.failed_start is None or config.source.spec == self.failed_start[0]:
            return
        spec, causes = self.failed_start
        shown = not self.message.isHidden() and self.message.text() == startup_text(
            StartupError(causes)
        )
        left = [c for c in causes if not isinstance(c, SourceError)]
        self.failed_start = (config.source.spec, left) if left else None
        if shown:
            if left:
                self.show_message(startup_text(StartupError(left)))
            else:
                self.clear_message()

    def _on_applied(self, what: str) -> None:
        self._sync_swap()
        self._sync_target()
        self.statusBar().showMessage(f"{what}: applied", 4000)

    def _on_failed(self, what: str, error: LivecamError) -> None:
        self._sync_swap()
        self.show_message(f"{what}: {error_text(error)}")

    def _on_event(self, event: Event) -> None:
        if event.level in ("warning", "error"):
            fix = event.panel_hint or event.hint  # the panel's words where they differ
            hint = f" (fix: {one_line(fix)})" if fix else ""
            text = f"{event.origin}: {one_line(event.message)}{hint}"
            self.statusBar().showMessage(text, 10000)
            self.statusBar().setToolTip(text)  # the whole text where the bar cuts it

    def _on_stopped(self, reason: str) -> None:
        if reason:
            self.show_message(f"The stream stopped: {one_line(reason)}")
        elif self.stream.end_text:  # a clip played once: said, never a silent stop
            self.show_message(self.stream.end_text, error=False)
            self.statusBar().showMessage(self.stream.end_text, 10000)

    def _on_frame(self, frame: Frame) -> None:
        """Show the frame; while the pointer is over the preview, the faces a click can
        pick with it (numbered)."""
        if self.preview.choosing:
            controls = self.stream.controls
            self.preview.set_faces(controls.state.faces_seen if controls is not None else ())
        self.preview.show_frame(frame)

    def _on_stats(self, snapshot: Snapshot) -> None:
        self.fps_label.setText(f"fps {snapshot.fps_in:.1f} in / {snapshot.fps_out:.1f} out")
        self._sync_target()  # the picked person may have left
        self._show_recording()  # its elapsed time
        lat = snapshot.latency_ms
        self.latency_label.setText(f"latency p50 {lat.p50:.0f} ms" if lat else "latency n/a")
        text, fallback = providers_text(snapshot)
        self.provider_label.setText(text)
        self.provider_label.setStyleSheet(FALLBACK_STYLE if fallback else "")
        reasons = [f"{n}: {p['reason']}" for n, p in snapshot.providers.items() if "reason" in p]
        self.provider_label.setToolTip("\n".join(reasons))
        remote, line, lost = remote_text(snapshot)
        self.remote_label.setText(remote)
        self.remote_label.setToolTip(line)
        self.remote_label.setStyleSheet(ERROR_TEXT_STYLE if lost else "")
        self.remote_label.setVisible(bool(remote))

    # --- geometry and close --------------------------------------------------------------
    def _restore_geometry(self) -> None:
        """The saved geometry and splitter, else ``DEFAULT_SIZE``; either fitted into the
        screen's free area (a 1366x768 laptop with its taskbar and the title bar)."""
        geometry = self.settings.panel.geometry
        free = self.screen().availableGeometry()
        if len(geometry) == 4 and geometry[2] > 0 and geometry[3] > 0:
            saved = QRect(*geometry)
            there = QGuiApplication.screenAt(saved.center())  # the monitor it was on, if any
            self.setGeometry(fit_rect(saved, there.availableGeometry() if there else free))
        else:
            self.setGeometry(fit_rect(QRect(QPoint(0, 0), DEFAULT_SIZE), free, centre=True))
        sizes = self.settings.panel.splitter
        if len(sizes) == 2 and min(sizes) > 0:
            self.splitter.setSizes(sizes)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        """Save the geometry, take the window off the screen at once (Ctrl+Q answers
        within a frame, however loaded the machine), then stop the stream (threads joined
        within ``CLOSE_TIMEOUT_S``; a recording gets its finish) and save the config. No
        virtual-camera check follows this stop."""
        self.closing = True
        g = self.geometry()  # before the hide: the window's place on screen
        self.settings.panel.geometry = [g.x(), g.y(), g.width(), g.height()]
        self.settings.panel.splitter = list(self.splitter.sizes())
        self.hide()
        QGuiApplication.sync()  # the window system unmaps it now, not after the stop
        self.stuck_threads = self.stream.stop(CLOSE_TIMEOUT_S)
        if self.stuck_threads:
            log.warning("threads still running after the stop: %s", ", ".join(self.stuck_threads))
        try:
            self.settings.save_config(self.stream.config)
            self.settings.save_panel()
        except OSError as e:
            log.warning("settings not saved: %s", e)
        event.accept()
