"""A long-lived pipeline thread that checks one shared stop Event and never dies silently."""

from __future__ import annotations

import logging
import threading
from abc import abstractmethod

from livecam.telemetry import Telemetry
from livecam.types import Event

log = logging.getLogger(__name__)


class Worker(threading.Thread):
    """Runs ``loop`` until it returns or ``stop`` is set; reports a crash as an error event.

    ``finished`` is set when the thread is done for any reason, so the app can wait on it.
    """

    def __init__(self, name: str, stop: threading.Event, telemetry: Telemetry) -> None:
        super().__init__(name=f"livecam-{name}", daemon=True)
        self.stop_event = stop
        self.telemetry = telemetry
        self.finished = threading.Event()

    def run(self) -> None:
        try:
            self.loop()
        except Exception as e:  # the thread must report, never vanish
            log.exception("%s crashed", self.name)
            self.telemetry.event(Event("error", self.name, f"crashed: {e!r}"))
        finally:
            try:
                self.cleanup()
            finally:
                self.finished.set()

    @abstractmethod
    def loop(self) -> None:
        """The thread's work; return when done or when ``stop_event`` is set."""

    def cleanup(self) -> None:  # noqa: B027 - optional hook
        """Release what this thread owns (runs on this thread, after ``loop``)."""
