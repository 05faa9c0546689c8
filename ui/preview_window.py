"""The preview window of the ``window`` sink, run by the main (GUI) thread.

The output thread never waits on the GUI: it only stores the newest frame in the sink's
hand-off, which a QTimer polls here. ``run_preview`` runs the event loop until every window
is closed or ``done()`` says the stream ended or a stop was requested; the poll timers keep
the Python interpreter running so Ctrl-C / SIGTERM handlers are served within ~50 ms.

The window shows the output fps and the glass-to-glass latency in a corner (``i`` hides or
shows them). That text is drawn by OpenCV's built-in vector font, so the window needs no
system font (none under a bare Xvfb, where Qt warns about fonts). Every window and timer is
stopped and deleted on this GUI thread before ``run_preview`` returns, never later by the
garbage collector on a pipeline thread (Qt: "Timers cannot be stopped from another thread").
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence

import cv2
import numpy as np
from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import (
    QCloseEvent,
    QColor,
    QGuiApplication,
    QImage,
    QKeyEvent,
    QPainter,
    QPaintEvent,
)
from PySide6.QtWidgets import QApplication, QWidget

from livecam.sinks.preview import FrameHandoff, PreviewWindowSink
from livecam.telemetry.snapshot import Snapshot
from livecam.types import Frame

log = logging.getLogger(__name__)

CLOSE_KEYS = (Qt.Key.Key_Escape, Qt.Key.Key_Q)
INFO_KEY = Qt.Key.Key_I  # hides / shows the fps and latency
#: how often ``done()`` is asked (and Python signal handlers get to run)
DONE_POLL_MS = 50
#: how often the title's fps and the info text are refreshed
TITLE_MS = 500
INFO_MARGIN = 8  # px between the info box and the window's corner


def info_text(snapshot: Snapshot) -> str:
    """The preview's info line: output fps, latency p50/p99 and drops."""
    lat = snapshot.latency_ms
    latency = f"latency {lat.p50:.0f} ms (p99 {lat.p99:.0f})" if lat else "latency n/a"
    return f"{snapshot.fps_out:.1f} fps | {latency} | drops {snapshot.dropped}"


def render_text(text: str, scale: float = 0.5) -> Frame:
    """``text`` in white on a black box, as a BGR frame (OpenCV's Hershey font: no system
    font needed)."""
    font, thickness, pad = cv2.FONT_HERSHEY_SIMPLEX, 1, 6
    (w, h), baseline = cv2.getTextSize(text, font, scale, thickness)
    box = np.zeros((h + baseline + 2 * pad, w + 2 * pad, 3), np.uint8)
    cv2.putText(box, text, (pad, pad + h), font, scale, (255, 255, 255), thickness, cv2.LINE_AA)
    return box


def bgr_image(frame: Frame) -> QImage:
    """A QImage over ``frame``'s pixels (uint8 BGR, rows contiguous), not copied: keep
    ``frame`` alive while the image is used."""
    h, w = frame.shape[:2]
    return QImage(frame.data, w, h, frame.strides[0], QImage.Format.Format_BGR888)


def fit_rect(width: int, height: int, area: QRect) -> QRect:
    """The largest ``width`` x ``height`` rectangle with that aspect, centred in ``area``."""
    scale = min(area.width() / width, area.height() / height)
    w, h = max(1, round(width * scale)), max(1, round(height * scale))
    return QRect(area.x() + (area.width() - w) // 2, area.y() + (area.height() - h) // 2, w, h)


def initial_size(frame_size: tuple[int, int], available: QRect) -> tuple[int, int]:
    """The frame size, scaled down (aspect kept) to fit 90 % of the screen's free area."""
    w, h = frame_size if min(frame_size) > 0 else (640, 480)
    scale = min(1.0, 0.9 * available.width() / w, 0.9 * available.height() / h)
    return max(1, round(w * scale)), max(1, round(h * scale))


class PreviewWindow(QWidget):
    """Shows the newest frame of a hand-off, scaled with its aspect kept, on black.

    ``frames_shown`` counts distinct frames painted. Esc, q or the close button close the
    window and mark the hand-off closed by the user; ``close_quietly`` closes it without.
    With ``stats`` (telemetry readings), the title shows the fps and the top-left corner
    the fps, latency and drops; ``i`` toggles that corner (``show_info``).
    """

    closed_by_user = Signal()

    def __init__(
        self,
        handoff: FrameHandoff,
        title: str = "LiveCam",
        size: tuple[int, int] = (640, 480),
        poll_ms: int = 5,
        stats: Callable[[], Snapshot] | None = None,
    ) -> None:
        super().__init__()
        self.handoff = handoff
        self.title = title
        self.frames_shown = 0
        self.show_info = True
        self.info = ""  # the info text shown (empty until the first reading)
        self._stats = stats
        self._info_pixels: Frame | None = None  # keeps the array behind _info_image alive
        self._info_image: QImage | None = None
        self._number = 0  # number of the frame held, from the hand-off
        self._painted = 0  # number of the last frame painted
        self._frame: Frame | None = None  # keeps the array alive while _image points into it
        self._image: QImage | None = None
        self._quiet = False
        self.setWindowTitle(title)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.resize(*size)
        self._poll = QTimer(self)
        self._poll.timeout.connect(self.poll)
        self._poll.start(poll_ms)
        self._title_timer = QTimer(self)
        self._title_timer.timeout.connect(self.update_info)
        if stats is not None:
            self._title_timer.start(TITLE_MS)

    def poll(self) -> None:
        """Take the newest frame from the hand-off, if a new one arrived, and repaint."""
        got = self.handoff.newest(self._number)
        if got is not None:
            self._number, frame = got
            self._set_frame(frame)
            self.update()

    def _set_frame(self, frame: Frame) -> None:
        self._frame = np.ascontiguousarray(frame)
        self._image = bgr_image(self._frame)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        try:
            painter.fillRect(self.rect(), QColor(0, 0, 0))
            if self._image is None:
                return
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
            painter.drawImage(
                fit_rect(self._image.width(), self._image.height(), self.rect()), self._image
            )
            if self.show_info and self._info_image is not None:
                painter.setOpacity(0.75)
                painter.drawImage(QPoint(INFO_MARGIN, INFO_MARGIN), self._info_image)
        finally:
            painter.end()
        if self._number != self._painted:
            self._painted = self._number
            self.frames_shown += 1

    def update_info(self) -> None:
        """Read ``stats`` once: the title's fps and the corner's text."""
        if self._stats is None:
            return
        snapshot = self._stats()
        self.setWindowTitle(f"{self.title} - {snapshot.fps_out:.1f} fps")
        text = info_text(snapshot)
        if text != self.info:
            self.info = text
            self._info_pixels = render_text(text)
            self._info_image = bgr_image(self._info_pixels)
            if self.show_info:
                self.update()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        if event.key() in CLOSE_KEYS:
            self.close()
        elif event.key() == INFO_KEY:
            self.show_info = not self.show_info
            self.update()
        else:
            super().keyPressEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        self._poll.stop()
        self._title_timer.stop()
        if not self._quiet and not self.handoff.user_closed.is_set():
            log.info("preview window closed by the user")
            self.handoff.user_closed.set()
            self.closed_by_user.emit()
        event.accept()

    def close_quietly(self) -> None:
        """Close without marking the hand-off closed by the user (the stream ended)."""
        self._quiet = True
        self.close()


def run_preview(
    sinks: Sequence[PreviewWindowSink],
    done: Callable[[], bool],
    *,
    tick: Callable[[], None] | None = None,
    tick_s: float = 1.0,
    stats: Callable[[], Snapshot] | None = None,
) -> int:
    """Show one window per sink on this (the main) thread; return when every window was
    closed or ``done()`` is True. ``tick`` runs every ``tick_s`` (the CLI's status line);
    ``stats`` feeds the title and the fps/latency corner. Returns the number of frames the
    windows showed; every window and timer is deleted (on this thread) before it returns."""
    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "livecam"])
    loop = QEventLoop()
    windows = []
    for sink in sinks:
        poll_ms = max(2, min(20, int(500 / sink.fps))) if sink.fps > 0 else 5
        size = initial_size(sink.size, QGuiApplication.primaryScreen().availableGeometry())
        window = PreviewWindow(sink.handoff, sink.title, size, poll_ms, stats)
        windows.append(window)

    def check() -> None:
        if done() or all(w.handoff.user_closed.is_set() for w in windows):
            loop.quit()

    for window in windows:
        window.closed_by_user.connect(check)
        window.show()
    timers = [_timer(DONE_POLL_MS, check)]
    if tick is not None:
        timers.append(_timer(max(1, int(tick_s * 1000)), tick))
    try:
        if windows and not done():
            loop.exec()
    finally:
        shown = sum(w.frames_shown for w in windows)
        for t in timers:
            t.stop()
            t.deleteLater()
        for window in windows:
            window.close_quietly()
            window.deleteLater()
        # delete them now, here: deleteLater alone waits for an event loop that may never
        # run again, and a window kept alive by its signal connections would be destroyed
        # by the garbage collector on whichever thread runs it
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        app.processEvents()
    log.info("preview window showed %d frames", shown)
    return shown


def _timer(interval_ms: int, action: Callable[[], None]) -> QTimer:
    timer = QTimer()
    timer.timeout.connect(action)
    timer.start(interval_ms)
    return timer
