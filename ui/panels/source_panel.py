"""The Source panel: the photo whose face is swapped in.

Open a photo (button or drag-and-drop) or click one of the recent faces; its faces are
found on a worker thread (``photo_faces``), shown boxed and numbered largest first, and
the largest is used at once; click another box (or pick its number) to use that one.
Running: the face changes live through the control plane (the preview keeps going);
stopped: ``swap.face`` / ``swap.face_index`` (and the swap stage) go into the config and
the settings. A photo that cannot be read or holds no face is a message here; the stream
is not touched. A face changed elsewhere (the next/previous face hotkeys, ``--commands``,
the API) is shown here too, within a frame poll (``follow``), without applying anything.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import (
    QDragEnterEvent,
    QDropEvent,
    QIcon,
    QImageReader,
    QMouseEvent,
    QPixmap,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from livecam.config.schema import Config
from livecam.errors import LivecamError, as_livecam_error
from livecam.types import Frame
from livecam.userfiles.images import IMAGE_EXTENSIONS
from ui.main_window import error_text
from ui.notice import ERROR_TEXT_STYLE
from ui.panels.photo_faces import PhotoFaceFinder, PhotoFaces, thumbnail
from ui.preview_window import bgr_image
from ui.settings import UiSettings
from ui.stream import StreamController, with_swap

log = logging.getLogger(__name__)

ICON_SIDE = 64
CELL = QSize(ICON_SIDE + 24, ICON_SIDE + 24)  # a recent face: its icon and name below it
GALLERY_MARGIN = 6  # px under the last row of recent faces
PHOTO_FILTER = "Images (" + " ".join(f"*{e}" for e in sorted(IMAGE_EXTENSIONS)) + ");;All files (*)"
ERROR_STYLE = ERROR_TEXT_STYLE  # readable on the dark window (ui.notice: contrast >= 4.5)
CHANGE_PREFIX = "face "  # what the panel's live changes are called (``stream.change``)


def to_pixmap(frame: Frame) -> QPixmap:
    """A QPixmap of a uint8 BGR frame (copied)."""
    return QPixmap.fromImage(bgr_image(frame).copy())


def with_face(config: Config, path: str, index: int | None) -> Config:
    """``config`` swapping in face ``index`` of photo ``path`` (the swap stage added)."""
    new = config.with_section("swap", face=path, face_index=index)
    return new if "swap" in new.pipeline.stages else with_swap(new, True)


def _icon(path: str) -> QIcon | None:
    """A small icon of a photo, decoded at reduced size (JPEG: fast, a few ms)."""
    reader = QImageReader(path)
    reader.setAutoTransform(True)
    size = reader.size()
    if size.isValid():
        reader.setScaledSize(size.scaled(ICON_SIDE, ICON_SIDE, Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    return None if image.isNull() else QIcon(QPixmap.fromImage(image))


class FaceThumbnail(QLabel):
    """The boxed photo; a click on a face box picks that face (``clicked_face(int)``)."""

    clicked_face = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumSize(QSize(200, 150))
        self.faces: PhotoFaces | None = None
        self._scale = 1.0

    def show_faces(self, faces: PhotoFaces, chosen: int | None) -> None:
        image = thumbnail(faces, chosen)
        self.faces = faces
        self._scale = image.shape[1] / faces.image.shape[1]
        self.setPixmap(to_pixmap(image))

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        pixmap = self.pixmap()
        if self.faces is None or pixmap.isNull():
            return
        x0 = (self.width() - pixmap.width()) / 2  # the pixmap is centred
        y0 = (self.height() - pixmap.height()) / 2
        pos = event.position()
        index = self.faces.face_at((pos.x() - x0) / self._scale, (pos.y() - y0) / self._scale)
        if index is not None:
            self.clicked_face.emit(index)


class FaceGallery(QListWidget):
    """The recent faces as a grid of equal cells (``CELL``: the icon and its name, elided
    in the middle), as many a row as the tab's width holds, and as tall as its rows: every
    face shows at once, nothing scrolls, in a narrow tab too (1366x768)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setViewMode(QListWidget.ViewMode.IconMode)
        self.setIconSize(QSize(ICON_SIDE, ICON_SIDE))
        self.setGridSize(CELL)
        self.setUniformItemSizes(True)
        self.setWrapping(True)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.setMovement(QListWidget.Movement.Static)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.fit_rows()

    def per_row(self) -> int:
        """How many cells a row of the current width holds."""
        return max(1, (self.viewport().width() - 2 * self.spacing()) // CELL.width())

    def fit_rows(self) -> None:
        """As tall as the rows the faces need (one empty row when there is none)."""
        rows = max(1, -(-self.count() // self.per_row()))
        self.setFixedHeight(rows * CELL.height() + 2 * self.frameWidth() + GALLERY_MARGIN)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.fit_rows()


class SourcePanel(QWidget):
    """Choose the source face; see the module docstring.

    ``analysed(bool)``: a photo's analysis ended (True: faces shown; False: an error
    message shown). ``faces``: the shown photo's faces; ``face_index``: the chosen one;
    ``message``: the label holding errors and notes.
    """

    analysed = Signal(bool)
    _found = Signal(int, object, object)  # (request, PhotoFaces | None, LivecamError | None)

    def __init__(
        self, stream: StreamController, settings: UiSettings, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.stream = stream
        self.settings = settings
        self.finder = PhotoFaceFinder(stream.resources)
        self.faces: PhotoFaces | None = None
        self.face_index: int | None = None
        self._request = 0
        #: (request, photo, face) of a photo found to be shown only (``follow``)
        self._follow: tuple[int, Path, int] | None = None
        self._asking = False  # the panel's own live face change is on its way
        self.setAcceptDrops(True)

        self.open_button = QPushButton("Open photo…")
        self.open_button.clicked.connect(self.choose_file)
        self.path_label = QLabel("No photo chosen: open one or drop it here.")
        self.path_label.setWordWrap(True)
        self.thumb = FaceThumbnail()
        self.thumb.clicked_face.connect(self.pick_face)
        self.picker = QComboBox()
        self.picker.setToolTip("Which face of the photo is swapped in (0 = the largest)")
        self.picker.activated.connect(lambda i: self.pick_face(i))
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.gallery = FaceGallery()
        self.gallery.setToolTip("Recent faces: click one to use it")
        self.gallery.itemClicked.connect(
            lambda item: self.load(item.data(Qt.ItemDataRole.UserRole))
        )

        top = QHBoxLayout()
        top.addWidget(self.open_button)
        top.addWidget(QLabel("Face:"))
        top.addWidget(self.picker)
        top.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.path_label)
        layout.addWidget(self.thumb, 1)
        layout.addWidget(self.message)
        layout.addWidget(QLabel("Recent faces"))
        layout.addWidget(self.gallery)

        self._found.connect(self._on_found)
        stream.applied.connect(self._on_applied)
        stream.failed.connect(self._on_failed)
        stream.config_changed.connect(self.follow)
        self.refresh_gallery()
        face = stream.config.swap.face
        if face:  # show the saved face (found on a worker thread; nothing is applied)
            self.path_label.setText(f"In use: {face}")
            self.load(face, show_only=stream.config.swap.face_index or 0)

    # --- choosing a photo ----------------------------------------------------------------
    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a face photo", "", PHOTO_FILTER)
        if path:
            self.load(path)

    def load(self, path: str | Path, show_only: int | None = None) -> None:
        """Find the faces of ``path`` on a worker thread; ``analysed`` tells when done.
        The largest face is then used; with ``show_only``, that face is shown as the one
        in use and nothing is applied (``follow``)."""
        self._request += 1
        request = self._request
        shown = Path(path).expanduser().absolute()
        self._follow = None if show_only is None else (request, shown, show_only)
        self.message.setText(f"Looking for faces in {Path(path).name}…")
        self.message.setStyleSheet("")

        def work() -> None:
            try:
                found: tuple[PhotoFaces | None, LivecamError | None] = (
                    self.finder.find(path),
                    None,
                )
            except Exception as e:  # unreadable, no face, a detector problem: one message
                found = (None, as_livecam_error(e, f"reading {path}"))
            with contextlib.suppress(RuntimeError):  # the panel was closed meanwhile
                self._found.emit(request, *found)

        threading.Thread(target=work, name="panel-face-finder", daemon=True).start()

    def _on_found(self, request: int, faces: PhotoFaces | None, error: LivecamError | None) -> None:
        if request != self._request:  # a newer photo was chosen meanwhile
            return
        if faces is None:
            assert error is not None
            self.show_error(error)
            self.analysed.emit(False)
            return
        self.faces = faces
        self.path_label.setText(str(faces.path))
        self.picker.clear()
        self.picker.addItems([str(i) for i in range(len(faces.boxes))])
        follow, self._follow = self._follow, None
        following = follow is not None and follow[0] == request
        if not following:  # the user's pick leads the recent faces; a hotkey's keeps the ring
            self.settings.add_recent_face(faces.path)
        self.refresh_gallery()
        n = len(faces.boxes)
        self.message.setStyleSheet("")
        self.message.setText("1 face found." if n == 1 else f"{n} faces found.")
        if follow is not None and following:
            self._show_face(min(follow[2], n - 1))
            self.message.setText(f"Now swapping in {faces.path.name} #{self.face_index}.")
        else:
            self.pick_face(0)
        self.analysed.emit(True)

    def follow(self, config: Config) -> None:
        """Show the face ``config`` swaps in when it is not the one shown (changed outside
        the panel: a hotkey, ``--commands``, the API); nothing is applied."""
        face = config.swap.face
        if not face or self._asking:  # the panel's own change is still on its way
            return
        path = Path(face).expanduser().absolute()
        index = config.swap.face_index or 0
        if self.faces is not None and self.faces.path.absolute() == path:
            if index != self.face_index and index < len(self.faces.boxes):
                self._show_face(index)
            return
        if self._follow is not None and self._follow[1:] == (path, index):
            return  # already finding its faces
        self.path_label.setText(f"In use: {path}")
        self.load(path, show_only=index)

    # --- choosing a face -----------------------------------------------------------------
    def pick_face(self, index: int) -> None:
        """Use face ``index`` of the shown photo (live while running, else in the config)."""
        faces = self.faces
        if faces is None or not 0 <= index < len(faces.boxes):
            return
        self._show_face(index)
        if len(faces.boxes) > 1:
            self.message.setStyleSheet("")
            which = "the largest (0)" if index == 0 else f"face {index}"
            self.message.setText(
                f"{len(faces.boxes)} faces found: {which} is used; click a box to use another."
            )
        path = str(faces.path.absolute())
        config_index = index if len(faces.boxes) > 1 else None
        if self.stream.running:
            self._asking = True
            self.stream.change(
                f"{CHANGE_PREFIX}{faces.path.name} #{index}",
                lambda c: c.set_face(path, config_index),
            )
            return
        config = with_face(self.stream.config, path, config_index)
        self.stream.set_config(config)
        self.settings.save_config(config)

    def _show_face(self, index: int) -> None:
        """Show face ``index`` of the shown photo as the one in use (nothing applied)."""
        if self.faces is None:
            return
        self.face_index = index
        self.picker.setCurrentIndex(index)
        self.thumb.show_faces(self.faces, index)

    def _on_applied(self, what: str) -> None:
        if what.startswith(CHANGE_PREFIX):
            self._asking = False
            self.settings.save_config(self.stream.config)
            self.message.setStyleSheet("")
            self.message.setText(f"Now swapping in {what.removeprefix(CHANGE_PREFIX)}.")

    def _on_failed(self, what: str, error: LivecamError) -> None:
        if what.startswith(CHANGE_PREFIX):
            self._asking = False
            self.show_error(error)

    def show_error(self, error: LivecamError) -> None:
        self.message.setStyleSheet(ERROR_STYLE)
        self.message.setText(error_text(error))

    # --- recent faces --------------------------------------------------------------------
    def refresh_gallery(self) -> None:
        """Show the recent faces (newest first; the order next/previous face walk), the one
        in use selected; missing files are left out."""
        self.gallery.clear()
        in_use = self.faces.path.absolute() if self.faces is not None else None
        for path in self.settings.panel.recent_faces:
            if not Path(path).is_file():
                continue
            item = QListWidgetItem(Path(path).name)
            item.setData(Qt.ItemDataRole.UserRole, path)
            item.setToolTip(path)
            icon = _icon(path)
            if icon is not None:
                item.setIcon(icon)
            self.gallery.addItem(item)
            if in_use is not None and Path(path).absolute() == in_use:
                self.gallery.setCurrentItem(item)
        self.gallery.fit_rows()

    # --- drag and drop -------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.load(urls[0].toLocalFile())
            event.acceptProposedAction()
