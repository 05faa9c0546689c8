"""``run_panel``: the desktop panel's entry (``livecam`` with no arguments, ``livecam panel``).

Shows the responsible-use notice on the first start, then the main window over a
``StreamController`` loaded with the user's saved config, until the window closes.
Ctrl-C or SIGTERM in the terminal close the window (the stream stops cleanly) and the
exit status is 128 + the signal's number.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Sequence
from types import FrameType

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from ui.main_window import MainWindow, apply_theme
from ui.notice import acknowledge
from ui.settings import UiSettings
from ui.stream import StreamController, limit_malloc_arenas

log = logging.getLogger(__name__)

SIGNAL_POLL_MS = 100  # lets Python run its signal handlers while Qt's loop runs
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_panel(argv: Sequence[str] = ()) -> int:
    """Run the panel until its window closes; the exit status (0, or 128 + a signal)."""
    limit_malloc_arenas()  # before any stream thread: Stop/Start does not grow the memory
    app = QApplication.instance() or QApplication(["livecam", *argv])
    assert isinstance(app, QApplication)
    app.setApplicationName("LiveCam")
    apply_theme(app)
    settings = UiSettings()
    if not acknowledge(settings):
        return 0
    stream = StreamController(settings.config)
    window = MainWindow(stream, settings)
    received: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        window.close()

    previous = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS}
    wake = QTimer()
    wake.timeout.connect(lambda: None)
    wake.start(SIGNAL_POLL_MS)
    try:
        window.show()
        app.exec()
    finally:
        wake.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
        stream.stop()
        window.deleteLater()
    return 128 + received[0] if received else 0
