"""The main window's live preview: the newest output frame, scaled with its aspect kept.

Frames arrive on the GUI thread (``StreamController.frame``); ``show_frame`` only keeps a
reference and schedules a repaint, so a slow paint never holds up the pipeline: Qt merges
pending repaints and the newest frame wins.

A left click on the picture says which person to swap (``picked(x, y)``: the point in the
frame, normalised to 0..1, letterboxing left out); a right click asks for auto again
(``auto_requested``).

While the pointer is over the picture (``choosing``), the faces a click can pick are
numbered as the window names them ("face #3"): a thin box and its number on each
(``set_faces``, the swap stage's newest tracked faces), on the preview only.

``set_badges`` shows warnings over the picture's top left corner (``BLANK``, ``FROZEN``,
``SWAP OFF``: the stream's live switches, ``LiveView.badges``), white on red, so a blanked
preview never looks like a dead camera. They are drawn on the preview only, never into the
output frames.
"""

from __future__ import annotations

import logging

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QImage, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from livecam.types import Frame, SeenFace
from ui.preview_window import bgr_image, fit_rect

log = logging.getLogger(__name__)

IDLE_TEXT = "Stopped: press Start"
BACKGROUND = QColor(16, 16, 20)
IDLE_COLOUR = QColor(150, 150, 160)
BADGE_COLOUR = QColor(198, 40, 40)  # white on this red: contrast 5.6:1
BADGE_TEXT = QColor(255, 255, 255)
BADGE_MARGIN = 10  # from the picture's corner, and between badges
FACE_COLOUR = QColor("#8ab4f8")  # a pickable face's box and number (black on it: 9.6:1)
FACE_TEXT = QColor(0, 0, 0)


class PreviewWidget(QWidget):
    """Paints the newest BGR frame given to ``show_frame`` (none: a short idle text).

    ``frames_received`` counts frames given, ``frames_painted`` distinct frames painted.
    """

    picked = Signal(float, float)  # a left click on the frame: normalised x, y
    auto_requested = Signal()  # a right click

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.frames_received = 0
        self.frames_painted = 0
        self.idle_text = IDLE_TEXT
        self.badges: tuple[str, ...] = ()  # shown over the picture (``set_badges``)
        self.badge_rects: list[QRect] = []  # where the last paint drew them
        self._frame: Frame | None = None  # keeps the array alive while _image points into it
        self._image: QImage | None = None
        self._painted_number = 0
        self.choosing = False  # the pointer is over the preview: the faces are numbered
        self.faces: tuple[SeenFace, ...] = ()  # what ``set_faces`` gave (numbered when choosing)
        self.face_labels: list[tuple[str, QRect]] = []  # the numbers the last paint drew
        self.setMouseTracking(True)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(320, 180)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(960, 540)

    @property
    def frame(self) -> Frame | None:
        """The frame shown now (None when cleared)."""
        return self._frame

    def show_frame(self, frame: np.ndarray) -> None:
        """Show ``frame`` (uint8 BGR, H x W x 3) at the next repaint."""
        self._frame = np.ascontiguousarray(frame)
        self._image = bgr_image(self._frame)
        self.frames_received += 1
        self.update()

    def set_badges(self, badges: tuple[str, ...]) -> None:
        """Show ``badges`` (e.g. ``("BLANK", "SWAP OFF")``; empty: none) from the next paint."""
        if badges != self.badges:
            self.badges = tuple(badges)
            self.update()

    def set_faces(self, faces: tuple[SeenFace, ...]) -> None:
        """The faces a click can pick now (numbered while ``choosing``)."""
        if faces != self.faces:
            self.faces = tuple(faces)
            if self.choosing:
                self.update()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if not self.choosing:
            self.choosing = True
            self.update()
        super().mouseMoveEvent(event)

    def leaveEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        self.choosing = False
        self.update()
        super().leaveEvent(event)

    def clear(self, text: str = IDLE_TEXT) -> None:
        """Drop the frame and show ``text`` instead (the stream stopped)."""
        self._frame = None
        self._image = None
        self.idle_text = text
        self.update()

    def frame_point(self, pos: QPointF) -> tuple[float, float] | None:
        """The frame point (normalised x, y) shown at widget position ``pos``; None outside
        the picture (on the letterbox bars) or with no frame shown."""
        if self._image is None:
            return None
        rect = fit_rect(self._image.width(), self._image.height(), self.rect())
        x = (pos.x() - rect.x()) / rect.width()
        y = (pos.y() - rect.y()) / rect.height()
        return (x, y) if 0 <= x <= 1 and 0 <= y <= 1 else None

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.MouseButton.RightButton:
            self.auto_requested.emit()
            return
        if event.button() == Qt.MouseButton.LeftButton:
            point = self.frame_point(event.position())
            if point is not None:
                self.picked.emit(*point)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        try:
            painter.fillRect(self.rect(), BACKGROUND)
            if self._image is None:
                painter.setPen(IDLE_COLOUR)
                font = painter.font()
                font.setPointSize(14)
                painter.setFont(font)
                painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.idle_text)
                self._paint_badges(painter, self.rect())
                return
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
            target = fit_rect(self._image.width(), self._image.height(), self.rect())
            painter.drawImage(target, self._image)
            self._paint_faces(painter, target)
            self._paint_badges(painter, target)
        finally:
            painter.end()
        if self.frames_received != self._painted_number:
            self._painted_number = self.frames_received
            self.frames_painted += 1

    def _paint_faces(self, painter: QPainter, area: QRect) -> None:
        """While choosing: each face's box and its number over ``area`` (the picture)."""
        self.face_labels = []
        if not self.choosing or not self.faces:
            return
        metrics = _bold_font(painter, 12)
        for face in self.faces:
            x1, y1, x2, y2 = face.box
            box = QRect(
                area.x() + round(x1 * area.width()),
                area.y() + round(y1 * area.height()),
                round((x2 - x1) * area.width()),
                round((y2 - y1) * area.height()),
            )
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.setPen(QPen(FACE_COLOUR, 2))
            painter.drawRect(box)
            text = f"#{face.track_id}"
            label = QRect(
                box.x(), box.y(), metrics.horizontalAdvance(text) + 12, metrics.height() + 6
            )
            _label(painter, label, text, FACE_COLOUR, FACE_TEXT, radius=0)
            self.face_labels.append((text, label))

    def _paint_badges(self, painter: QPainter, area: QRect) -> None:
        """The badges left to right over ``area``'s top left corner."""
        self.badge_rects = []
        if not self.badges:
            return
        metrics = _bold_font(painter, 13)
        x, y = area.x() + BADGE_MARGIN, area.y() + BADGE_MARGIN
        for text in self.badges:
            rect = QRect(x, y, metrics.horizontalAdvance(text) + 20, metrics.height() + 10)
            _label(painter, rect, text, BADGE_COLOUR, BADGE_TEXT, radius=5)
            self.badge_rects.append(rect)
            x = rect.right() + 1 + BADGE_MARGIN


def _bold_font(painter: QPainter, points: int) -> QFontMetrics:
    """Set ``painter``'s font bold at ``points``; its metrics."""
    font = painter.font()
    font.setPointSize(points)
    font.setBold(True)
    painter.setFont(font)
    return QFontMetrics(font)


def _label(
    painter: QPainter, rect: QRect, text: str, fill: QColor, ink: QColor, radius: int
) -> None:
    """``text`` centred in ``ink`` on a ``fill`` box (corners rounded by ``radius``)."""
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(fill)
    painter.drawRoundedRect(rect, radius, radius)
    painter.setPen(ink)
    painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
