"""A long-lived pipeline thread that checks one shared stop Event and never dies silently."""

from __future__ import annotations

import logging
import threading
from abc import abstractmethod

from livecam.telemetry.hub import Telemetry
from livecam.types import Event

log = logging.getLogger(__name__)


class Worker(threading.Thread):
    """Runs ``loop`` until it returns or ``stop`` is set; reports a crash as an error event.

    ``finished`` is set when the thread is done for any reason, so the app can wait on it;
    ``cleaning_up`` once ``loop`` has returned; ``crash`` says why it died, if it did.
    ``finish_grace_s``: how much longer than the stop deadline the app waits for this
    thread's cleanup (the output thread finishing a recording), so no file is cut off.
    """

    finish_grace_s: float = 0.0

    def __init__(self, name: str, stop: threading.Event, telemetry: Telemetry) -> None:
        super().__init__(name=f"livecam-{name}", daemon=True)
        self.stop_event = stop
        self.telemetry = telemetry
        self.finished = threading.Event()
        self.cleaning_up = threading.Event()
        self.crash: str | None = None

    def run(self) -> None:
        try:
            self.loop()
        except Exception as e:  # the thread must report, never vanish
            self._crashed("crashed", e)
        finally:
            self.cleaning_up.set()
            try:
                self.cleanup()
            except Exception as e:
                self._crashed("crashed while closing", e)
            finally:
                self.finished.set()

    def _crashed(self, what: str, error: Exception) -> None:
        log.debug("%s %s", self.name, what, exc_info=True)
        self.crash = f"{self.name} {what}: {error!r}"
        self.telemetry.event(Event("error", self.name, f"{what}: {error!r}"))

    @abstractmethod
    def loop(self) -> None:
        """The thread's work; return when done or when ``stop_event`` is set."""

    def cleanup(self) -> None:  # noqa: B027 - optional hook
        """Release what this thread owns (runs on this thread, after ``loop``)."""
