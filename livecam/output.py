"""The output thread: sends finished frames to every sink at a steady rate."""

from __future__ import annotations

import threading
import time

from livecam.buffer import RingBuffer
from livecam.sinks.base import Sink
from livecam.telemetry import Telemetry
from livecam.types import Event, FramePacket
from livecam.worker import Worker


class OutputWorker(Worker):
    """Sends each new frame at once; when none arrived within one period, re-sends the last
    frame to sinks that need a steady rate (virtual cameras, windows).

    Sinks are opened by the app before this thread starts and closed by this thread. A
    sink that raises, or that the user closed, is reported and dropped; the others go on.
    With no sink left the thread ends, and so does the stream.
    """

    def __init__(
        self,
        sinks: list[Sink],
        slot: RingBuffer[FramePacket],
        stop: threading.Event,
        telemetry: Telemetry,
        fps: float,
        repeat: bool = True,
    ) -> None:
        super().__init__("output", stop, telemetry)
        self.sinks = list(sinks)
        self.slot = slot
        self.period_s = 1.0 / fps
        self.repeat = repeat
        self.last: FramePacket | None = None

    def loop(self) -> None:
        while not self.stop_event.is_set() and self.sinks:
            got = self.slot.get_batch(1, timeout=self.period_s)
            if got:
                self.last = got[0]
                self._send(got[0], repeat=False)
                self.telemetry.frame_out(got[0], time.perf_counter_ns())
            elif self.slot.closed:
                break
            elif self.repeat and self.last is not None:
                self._send(self.last, repeat=True)
                self.telemetry.repeat_out()

    def _send(self, packet: FramePacket, repeat: bool) -> None:
        for sink in list(self.sinks):
            if repeat and not sink.wants_repeats:
                continue
            try:
                sink.send(packet.frame)
            except Exception as e:
                self.telemetry.event(
                    Event("error", f"sink {sink.name}", f"{e}; this output is turned off")
                )
                self.sinks.remove(sink)
                self._close(sink)
                continue
            if sink.closed:
                self.telemetry.event(Event("info", f"sink {sink.name}", "closed by the user"))
                self.sinks.remove(sink)
                self._close(sink)

    def _close(self, sink: Sink) -> None:
        try:
            sink.close()
        except Exception as e:
            self.telemetry.event(Event("warning", f"sink {sink.name}", f"close: {e!r}"))

    def cleanup(self) -> None:
        self.slot.close()
        for sink in self.sinks:
            self._close(sink)
