"""Ctrl-C and SIGTERM as one exception, with the conventional exit codes (130, 143).

Entry points install ``stop_signals`` so that a signal at any point of start-up (imports,
loading a photo or models) unwinds as ``StopSignal``: ``finally`` blocks close what was
opened and the process exits with ``128 + signal number``, never a traceback. Before the
stream starts, ``livecam run`` installs its own handler, which only records the signal and
wakes the main thread: the start acts on it at its next checkpoint (``App.start``), the
running stream at once.

A signal can also land inside a C extension's import (onnxruntime's pybind11 module calls
back into Python while it initialises): the extension turns the ``StopSignal`` into an
``ImportError`` ("initialization failed"). ``stop_behind`` finds the signal behind such an
error (in its chain of causes, or the signal recorded when it arrived), so the entry
points exit 130 / 143 all the same.
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
        _state.pending = self  # whatever becomes of this exception, the signal is known

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """The exit code for an interrupt: 128 + the signal's number (a bare KeyboardInterrupt
    is Ctrl-C: 130)."""
    return interrupt.exit_code if isinstance(interrupt, StopSignal) else 128 + signal.SIGINT


class _State:
    """The signal received while ``stop_signals`` is active (``pending``), how deep the
    ``stop_signals`` blocks nest, and whether the exit status is decided already."""

    pending: StopSignal | None = None
    depth = 0
    exiting = False
    deferring = 0  # inside ``deferred`` blocks: a signal is recorded, raised at their end


_state = _State()


def raise_stop_signal(signum: int, _frame: FrameType | None) -> None:
    """Signal handler: record the signal (``pending_stop``) and raise ``StopSignal`` in the
    main thread, except inside ``deferred`` (imports), where it is only recorded and
    raised when the block ends (once the exit status is decided, ``exiting``, a further
    signal changes nothing)."""
    if _state.exiting:
        return
    stop = StopSignal(signum)  # recorded, whatever becomes of the exception
    if _state.deferring or in_import(_frame):
        return
    raise stop


def in_import(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside an import (importlib, or a weakref callback of its
    module locks, where Python discards what a handler raises): a signal there is only
    recorded, and the entry points act on it (``pending_stop``) at their next step."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside, a signal is only recorded; it is raised when the block ends. For imports:
    raised inside importlib (a weakref callback discards it: the run went on for all its
    frames) or inside a C extension's initialisation (seen: a SIGSEGV), a signal is lost
    or fatal; at the end of the block it lands where nothing is half made."""
    _state.deferring += 1
    try:
        yield
    finally:
        _state.deferring -= 1
    if not _state.deferring and _state.pending is not None and not _state.exiting:
        raise _state.pending


def exiting() -> None:
    """The process is about to exit with a decided status: signals are ignored from now."""
    _state.exiting = True


def stop_behind(error: BaseException) -> StopSignal | None:
    """The ``StopSignal`` behind ``error``: ``error`` itself, one in its causes or
    contexts, or the signal received while it was raised (a C extension turns the
    exception raised inside its import into its own ``ImportError``); None when no signal
    arrived."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, StopSignal):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return _state.pending


def pending_stop() -> StopSignal | None:
    """The signal received since the outermost ``stop_signals`` began, or None."""
    return _state.pending


@contextlib.contextmanager
def stop_signals(restore: bool = True) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM raise ``StopSignal`` (main thread only; elsewhere
    Python cannot install handlers and this does nothing). The previous handlers come back
    on exit unless not ``restore`` (the entry point keeps its own to the end: a SIGTERM
    between restoring the default and exiting would kill the process with no status).
    The outermost block forgets the signal of an earlier run (``pending_stop``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _state.depth == 0:
        _state.pending, _state.exiting = None, False
    _state.depth += 1
    previous = {s: signal.signal(s, raise_stop_signal) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        _state.depth -= 1
        if restore:
            for s, handler in previous.items():
                signal.signal(s, handler)
