"""Ctrl-C and SIGTERM as one exception, with the conventional exit codes (130, 143).

Entry points install ``stop_signals`` so that a signal at any point of start-up (imports,
loading a photo or models) unwinds as ``StopSignal``: ``finally`` blocks close what was
opened and the process exits with ``128 + signal number``, never a traceback. Once the
stream runs, the CLI installs its own handler that only asks the threads to stop.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: the signals that stop LiveCam
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignal(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM arrived; ``exit_code`` is ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """The exit code for an interrupt: 128 + the signal's number (a bare KeyboardInterrupt
    is Ctrl-C: 130)."""
    return interrupt.exit_code if isinstance(interrupt, StopSignal) else 128 + signal.SIGINT


def raise_stop_signal(signum: int, _frame: FrameType | None) -> None:
    """Signal handler: raise ``StopSignal`` in the main thread."""
    raise StopSignal(signum)


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM raise ``StopSignal`` (main thread only; elsewhere
    Python cannot install handlers and this does nothing). The previous handlers come back
    on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, raise_stop_signal) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
