"""The loader thread: does the slow work a live change needs, off the inference thread.

Analysing a new source photo, loading and warming models, closing replaced stages: each
is a job run here one after the other, so the stream never stalls for a change.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from livecam.stream.worker import Worker
from livecam.telemetry.hub import Telemetry
from livecam.types import Event

Job = Callable[[], None]


class LoaderWorker(Worker):
    """Runs submitted jobs in order. A job that raises is reported as an event; the next
    one still runs. Jobs should report their own outcome (see ``controls.Change``)."""

    def __init__(self, stop: threading.Event, telemetry: Telemetry) -> None:
        super().__init__("loader", stop, telemetry)
        self._jobs: queue.Queue[tuple[str, Job, Job | None]] = queue.Queue()

    def submit(self, what: str, job: Job, on_cancel: Job | None = None) -> None:
        """Queue ``job`` (``what`` names it in error events). At stop, a job still queued
        runs ``on_cancel`` instead when given (a pending rebuild is dropped), else runs
        itself (closing a replaced stage is never skipped)."""
        self._jobs.put((what, job, on_cancel))

    @property
    def pending(self) -> int:
        return self._jobs.qsize()

    def loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                what, job, _ = self._jobs.get(timeout=0.1)
            except queue.Empty:
                continue
            try:
                job()
            except Exception as e:  # a job must never end the loader
                self.telemetry.event(Event("error", "loader", f"{what} failed: {e!r}"))

    def cleanup(self) -> None:
        """Finish what is still queued: cancel pending builds, run pending closes."""
        while True:
            try:
                what, job, on_cancel = self._jobs.get_nowait()
            except queue.Empty:
                return
            try:
                (on_cancel or job)()
            except Exception as e:
                self.telemetry.event(Event("warning", "loader", f"{what} at stop: {e!r}"))
