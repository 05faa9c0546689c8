"""The Input panel: what the stream captures (a camera, a monitor, a screen region, a
video file or the synthetic test pattern), at which size and rate, mirrored or not.

Writes ``source.spec``, ``source.size``, ``source.fps``, ``source.loop`` (a video file's
Loop, on by default) and ``source.mirror``. The mirror applies live
(``Controls.set_mirror``: the capture thread flips from its next frame). The source
itself is opened at start, so the other changes made while running apply at the next
start (``next_start``: each says "applies at restart" beside it, and the panel offers
Restart now). Cameras and monitors are listed on a worker thread (opening each camera
takes a moment).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from livecam.config.schema import Config
from livecam.config.specs import SourceSpec
from livecam.errors import LivecamError, as_livecam_error
from livecam.sources import parse_screen_spec
from livecam.sources.camera import list_cameras
from livecam.sources.screen import list_monitors
from livecam.sources.synthetic.portraits import bundled_portrait
from ui.main_window import error_text
from ui.panels.next_start import NextStartChanges, restart_row
from ui.settings import UiSettings
from ui.stream import StreamController, with_swap

log = logging.getLogger(__name__)

KINDS = ("camera", "screen", "region", "video", "synthetic")
KIND_TITLES = ("Camera", "Monitor", "Screen region", "Video file", "Test pattern")
#: (title, size or None for the source's own)
SIZES: tuple[tuple[str, tuple[int, int] | None], ...] = (
    ("As the source gives", None),
    ("480p (640x480)", (640, 480)),
    ("720p (1280x720)", (1280, 720)),
    ("1080p (1920x1080)", (1920, 1080)),
)
RATES = (30.0, 60.0)
VIDEO_FILTER = "Videos (*.mp4 *.mkv *.mov *.avi *.webm *.gif);;All files (*)"
MAX_DESKTOP = 16384
MOVING_FACE = "with a moving face"
MOVING_FACE_TIP = (
    "A bundled portrait that moves like a head on a webcam: see a swap with no camera "
    "(the face swapped in is yours from the Source tab, else a bundled one)"
)
NO_CAMERA = (
    "No camera found (the input is {spec}). Connect a webcam and close other apps using it "
    "(on Linux, join the 'video' group), or try LiveCam without one: Input tab, "
    "“Use the test pattern with a moving face”."
)

NO_CAMERA_FOUND = (
    "No camera found. Connect a webcam and close other apps using it (on Linux, join the "
    "'video' group), then Refresh; a video file or the screen works as an input too, and so "
    "does the test pattern with a moving face."
)
NO_CAMERA_ITEM = "No camera found: connect one, then Refresh"


def spec_kind(spec: str) -> str:
    """Which of ``KINDS`` a source spec is (a device path or URL counts as a camera)."""
    parsed = SourceSpec.parse(spec)
    if parsed.kind == "screen":
        return "region" if parsed.region is not None else "screen"
    return {"synthetic": "synthetic", "file": "video"}.get(parsed.kind, "camera")


class InputPanel(QWidget):
    """Choose the input; see the module docstring. ``devices_listed`` fires when the
    camera and monitor lists are filled; ``message`` shows problems."""

    devices_listed = Signal()
    #: no camera was found while the input is a camera: what to tell the user
    camera_missing = Signal(str)
    _listed = Signal(object, object, object, object)  # cameras, camera error, monitors, error

    def __init__(
        self, stream: StreamController, settings: UiSettings, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.stream = stream
        self.settings = settings
        self.changes = NextStartChanges(stream, settings, self)
        self._loading = False

        self.kind = QComboBox()
        self.kind.addItems(KIND_TITLES)
        self.pages = QStackedWidget()
        self.camera = QComboBox()
        self.camera.setEditable(False)
        self.monitor = QComboBox()
        self.region = [QSpinBox() for _ in range(4)]
        for box, (lo, value) in zip(
            self.region, ((-MAX_DESKTOP, 0), (-MAX_DESKTOP, 0), (2, 640), (2, 480)), strict=True
        ):
            box.setRange(lo, MAX_DESKTOP)
            box.setValue(value)
        self.video = QLineEdit()
        self.video.setPlaceholderText("a video file")
        self.browse = QPushButton("Choose…")
        self.browse.clicked.connect(self.choose_video)
        self.loop = QCheckBox("Loop")  # source.loop: a clip is a camera that never ends
        self.loop.setObjectName("loop")
        self.loop.setToolTip(
            "Play the video again at its end (off: the stream stops at its end and says so); "
            "applies at restart"
        )
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("List the cameras and monitors again")
        self.refresh_button.clicked.connect(self.refresh_devices)
        self.pages.addWidget(_row(self.camera, self.refresh_button))
        self.pages.addWidget(_row(self.monitor))
        self.pages.addWidget(
            _row(
                *(
                    w
                    for pair in zip(("x", "y", "w", "h"), self.region)
                    for w in (QLabel(pair[0]), pair[1])
                )
            )
        )
        self.pages.addWidget(_row(self.video, self.browse, self.loop))
        self.moving_face = QCheckBox(MOVING_FACE)  # source.face_motion: a bundled portrait
        self.moving_face.setObjectName("moving_face")
        self.moving_face.setToolTip(MOVING_FACE_TIP)
        self.pages.addWidget(_row(QLabel("A moving test pattern"), self.moving_face))
        self.no_camera_offer = QPushButton("Use the test pattern with a moving face")
        self.no_camera_offer.setObjectName("no_camera_offer")
        self.no_camera_offer.setToolTip(MOVING_FACE_TIP)
        self.no_camera_offer.clicked.connect(self.use_moving_face)
        self.no_camera_offer.hide()  # shown when no camera is found and a camera is chosen
        self.camera.setPlaceholderText(NO_CAMERA_ITEM)  # an empty list says why
        self.cameras_found: bool | None = None  # None: not listed yet
        self.device_notes: dict[str, str] = {}  # kind -> what its listing found wrong

        self.resolution = QComboBox()
        self.resolution.addItems([title for title, _ in SIZES])
        self.fps = QComboBox()
        self.fps.addItems([f"{r:g} fps" for r in RATES])
        self.mirror = QCheckBox("Mirror (flip left-right, as a selfie view)")
        self.mirror.setToolTip("Applies live, from the next frame")
        self.message = QLabel()
        self.message.setWordWrap(True)

        form = QFormLayout()
        form.addRow("Input", restart_row(self.kind))
        form.addRow("", self.pages)
        form.addRow("Resolution", restart_row(self.resolution))
        form.addRow("Frame rate", restart_row(self.fps))
        form.addRow("", self.mirror)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(self.no_camera_offer)
        layout.addWidget(self.changes.bar)
        layout.addStretch(1)

        self.show_config(stream.config)
        self.kind.currentIndexChanged.connect(self._on_kind)
        self.camera.activated.connect(lambda _: self.apply_source())
        self.monitor.activated.connect(lambda _: self.apply_source())
        for box in self.region:
            box.editingFinished.connect(self.apply_source)
        self.video.editingFinished.connect(self.apply_source)
        self.resolution.activated.connect(lambda _: self.apply_format())
        self.fps.activated.connect(lambda _: self.apply_format())
        self.mirror.toggled.connect(self.set_mirror)
        self.loop.toggled.connect(lambda on: self._apply(loop=on))
        self.moving_face.toggled.connect(self.set_moving_face)
        self._listed.connect(self._on_listed)
        stream.config_changed.connect(lambda c: self.show_config(self.changes.merged(c)))
        self.refresh_devices()

    # --- showing the config --------------------------------------------------------------
    def show_config(self, config: Config) -> None:
        """Set the widgets from ``config.source``."""
        src = config.source
        kind = spec_kind(src.spec)
        self.kind.blockSignals(True)
        self.kind.setCurrentIndex(KINDS.index(kind))
        self.kind.blockSignals(False)
        self.pages.setCurrentIndex(KINDS.index(kind))
        if kind == "video":
            self.video.setText(src.spec)
        elif kind == "region":
            _, region = parse_screen_spec(src.spec)
            for box, value in zip(self.region, region or (), strict=False):
                box.setValue(value)
        sizes = [s for _, s in SIZES]
        if src.size in sizes:
            self.resolution.setCurrentIndex(sizes.index(src.size))
        else:  # a size of the user's own (config file or --size): shown, kept
            _select_text(self.resolution, f"{src.size[0]}x{src.size[1]}" if src.size else "?")
        if src.fps not in RATES:
            _select_text(self.fps, f"{src.fps:g} fps")
        else:
            self.fps.setCurrentIndex(RATES.index(src.fps))
        self.mirror.blockSignals(True)
        self.mirror.setChecked(src.mirror)
        self.moving_face.blockSignals(True)
        self.moving_face.setChecked(src.face_motion is not None)
        self.moving_face.blockSignals(False)
        self.mirror.blockSignals(False)
        self.loop.blockSignals(True)
        self.loop.setChecked(src.loop)
        self.loop.blockSignals(False)
        self._show_device_note()

    # --- devices -------------------------------------------------------------------------
    def refresh_devices(self) -> None:
        """List cameras and monitors on a worker thread (``devices_listed`` when done)."""
        self.refresh_button.setEnabled(False)

        def work() -> None:
            cams: list[dict[str, object]] = []
            mons: list[dict[str, int]] = []
            cam_error = mon_error = None
            try:
                cams = list_cameras()
            except Exception as e:
                cam_error = as_livecam_error(e, "listing cameras")
            try:
                mons = list_monitors()
            except Exception as e:
                mon_error = as_livecam_error(e, "listing monitors")
            self._listed.emit(cams, cam_error, mons, mon_error)

        threading.Thread(target=work, name="panel-device-list", daemon=True).start()

    def _on_listed(
        self,
        cams: list[dict[str, Any]],
        cam_error: LivecamError | None,
        mons: list[dict[str, int]],
        mon_error: LivecamError | None,
    ) -> None:
        self.refresh_button.setEnabled(True)
        spec = self.stream.config.source.spec.strip()
        self.camera.clear()
        for cam in cams:
            name = f" {cam['name']}" if cam.get("name") else ""
            title = f"{cam['index']}:{name} ({cam['width']}x{cam['height']})"
            self.camera.addItem(title, f"camera:{cam['index']}")
        if spec_kind(spec) == "camera" and self.camera.findData(_camera_spec(spec)) < 0:
            self.camera.addItem(f"{spec} (not found now)", _camera_spec(spec))
        self.camera.setCurrentIndex(max(0, self.camera.findData(_camera_spec(spec))))
        self.monitor.clear()
        for i, m in enumerate(mons, start=1):
            self.monitor.addItem(
                f"{i}: {m['width']}x{m['height']} at ({m['left']},{m['top']})", f"screen:{i}"
            )
        self.monitor.addItem("All monitors", "screen:0")
        self.monitor.setCurrentIndex(max(0, self.monitor.findData(_screen_spec(spec))))
        camera_note = "" if cams else NO_CAMERA_FOUND
        if cam_error is not None:
            camera_note = error_text(cam_error)
        monitor_note = error_text(mon_error) if mon_error is not None else ""
        old_notes = set(self.device_notes.values())
        self.device_notes = {"camera": camera_note, "screen": monitor_note, "region": monitor_note}
        self.cameras_found = bool(cams)
        self._show_device_note(before=old_notes)
        if not cams and spec_kind(spec) == "camera":
            self.camera_missing.emit(NO_CAMERA.format(spec=spec))
        self.devices_listed.emit()

    # --- applying ------------------------------------------------------------------------
    def chosen_kind(self) -> str:
        """Which of ``KINDS`` the Input list shows."""
        return KINDS[self.kind.currentIndex()]

    def _show_offer(self) -> None:
        """The moving-face offer while a camera is chosen and none was found."""
        self.no_camera_offer.setVisible(
            self.cameras_found is False and self.chosen_kind() == "camera"
        )

    def _show_device_note(self, before: Collection[str] = ()) -> None:
        """The chosen kind's listing problem (no camera found, no monitor listed) under
        the input, in place of another kind's (``before``: the notes of an older listing,
        replaced too); any other message stays. The offer follows the kind."""
        text = self.message.text()
        if not text or text in before or text in self.device_notes.values():
            self.message.setText(self.device_notes.get(self.chosen_kind(), ""))
        self._show_offer()

    def _on_kind(self, index: int) -> None:
        self.pages.setCurrentIndex(index)
        self.apply_source()
        self._show_device_note()

    def choose_video(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a video", "", VIDEO_FILTER)
        if path:
            self.video.setText(path)
            self.apply_source()

    def chosen_spec(self) -> str | None:
        """The source spec the widgets describe (None: not complete yet)."""
        kind = self.chosen_kind()
        if kind == "camera":
            data = self.camera.currentData()
            return str(data) if data else None
        if kind == "screen":
            data = self.monitor.currentData()
            return str(data) if data else "screen:1"
        if kind == "region":
            return "screen:" + ",".join(str(b.value()) for b in self.region)
        if kind == "video":
            text = self.video.text().strip()
            return str(Path(text).expanduser().absolute()) if text else None
        return "synthetic"

    def apply_source(self) -> None:
        """Put the chosen input into the config (or pending, while running)."""
        spec = self.chosen_spec()
        if spec is None or spec == self.changes.merged(self.stream.config).source.spec:
            return
        self._apply(spec=spec)

    def use_moving_face(self) -> None:
        """The no-camera offer: the test pattern with a moving face as the input, and,
        when no face to swap in is chosen yet, a bundled one with the swap on (so a new
        user without a camera sees a swap at the first Start)."""
        from livecam.sources.synthetic.portraits import ASSETS_PACKAGE, SOURCE_FACE

        self.kind.blockSignals(True)
        self.kind.setCurrentIndex(KINDS.index("synthetic"))
        self.kind.blockSignals(False)
        self.pages.setCurrentIndex(KINDS.index("synthetic"))
        self._show_offer()
        if not self.set_moving_face(True):
            return
        config = self.changes.merged(self.stream.config)
        if config.swap.face is None and not config.swap.select.map:
            try:
                face = bundled_portrait(SOURCE_FACE, ASSETS_PACKAGE)
                self.changes.apply("swap", face=str(face))
                self.changes.apply("pipeline", stages=with_swap(config, True).pipeline.stages)
            except LivecamError as e:
                self.message.setText(error_text(e))
                return
            self.message.setText(
                f"Input: the test pattern with a moving face. Swapping in the bundled face "
                f"{SOURCE_FACE}: choose your own in the Source tab. Press Start."
            )
        else:
            self.message.setText("Input: the test pattern with a moving face. Press Start.")

    def set_moving_face(self, on: bool) -> bool:
        """The test pattern with the bundled moving face (``on``) or the plain pattern;
        False when that could not be set (the message says why)."""
        from livecam.sources.synthetic.portraits import ASSETS_PACKAGE, TARGET

        try:
            portrait = str(bundled_portrait(TARGET, ASSETS_PACKAGE)) if on else None
            self.changes.apply("source", spec="synthetic", face_motion=portrait)
        except LivecamError as e:
            self.message.setText(error_text(e))
            return False
        self.moving_face.blockSignals(True)
        self.moving_face.setChecked(on)
        self.moving_face.blockSignals(False)
        self.message.clear()
        return True

    def set_mirror(self, on: bool) -> None:
        """Mirror the input or not: live while running (the capture thread flips from its
        next frame; the config follows once applied), else in the config."""
        if self.stream.running:
            self.stream.change(f"mirror {'on' if on else 'off'}", lambda c: c.set_mirror(on))
            return
        self._apply(mirror=on, **self._format())

    def apply_format(self) -> None:
        """Put the chosen size and frame rate into the config (next start)."""
        self._apply(**self._format())

    def _format(self) -> dict[str, Any]:
        """The size and frame rate the widgets show (a size or rate of the user's own,
        from the config file, is left as it is)."""
        index = self.resolution.currentIndex()
        fields: dict[str, Any] = {}
        if index < len(SIZES):
            fields["size"] = SIZES[index][1]
        if self.fps.currentIndex() < len(RATES):
            fields["fps"] = RATES[self.fps.currentIndex()]
        return fields

    def _apply(self, **fields: Any) -> None:
        try:
            self.changes.apply("source", **fields)
        except LivecamError as e:
            self.message.setText(error_text(e))
            return
        self.message.clear()


def _select_text(box: QComboBox, text: str) -> None:
    """Select the item ``text`` of ``box``, added first when missing."""
    if box.findText(text) < 0:
        box.addItem(text)
    box.setCurrentIndex(box.findText(text))


def _row(*widgets: QWidget) -> QWidget:
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    for w in widgets:
        row.addWidget(w)
    return box


def _camera_spec(spec: str) -> str:
    """``camera:N`` for ``N``/``camera``/``camera:N``; other camera specs as they are."""
    device = SourceSpec.parse(spec).device
    return f"camera:{device}" if isinstance(device, int) else spec.strip()


def _screen_spec(spec: str) -> str:
    return "screen:1" if spec.strip() == "screen" else spec.strip()
