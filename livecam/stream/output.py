"""The output thread: sends finished frames to the sinks, paced to the output fps by timestamps."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, replace

from livecam.errors import as_livecam_error, one_line
from livecam.sinks.base import Sink
from livecam.stream.label import Label
from livecam.stream.ring import RingBuffer
from livecam.stream.watermark import Watermarker
from livecam.stream.worker import Worker
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, Frame, FramePacket

log = logging.getLogger(__name__)

#: longest single wait, so a stop request is seen within this time
WAIT_S = 0.1
#: the warning at start when ``output.watermark`` is off (one line)
WATERMARK_OFF = (
    "output.watermark is false: frames changed by the face swap go out WITHOUT the "
    "invisible AI mark; EU AI Act Article 50 requires AI-manipulated video to be marked "
    "in a machine-readable way and a deepfake to be disclosed"
)


@dataclass(frozen=True)
class TickPlan:
    """What to do at one tick: skip the ``skip`` oldest waiting frames, then send the oldest
    remaining one (``send_new``) or, when none waits, repeat the last frame sent."""

    skip: int
    send_new: bool


class OutputClock:
    """The output's tick schedule and the decision at each tick. Pure: driven by explicit
    ``perf_counter_ns`` timestamps, it never sleeps or reads a clock.

    Ticks fall on a fixed grid ``T0 + n * period`` that never drifts. ``anchor`` places
    ``T0`` half a period after the first frame arrived, so the frames of a source at the
    same rate arrive mid-way between ticks, where their jitter cannot make them miss one.
    A tick handled late by a whole period or more (a stalled thread) does not cause a
    burst: the missed ticks are counted in ``missed`` and the clock re-anchors on the next
    grid tick after now.

    At each tick exactly one frame is sent: the oldest waiting new frame, or a repeat. When
    more than ``max_waiting`` frames wait, the older ones are skipped so the added latency
    stays under ``max_waiting`` periods; a lossless clock never skips.
    """

    def __init__(self, fps: float, *, lossless: bool = False, max_waiting: int = 2) -> None:
        if not fps > 0:
            raise ValueError(f"output fps must be > 0, got {fps}")
        if max_waiting < 1:
            raise ValueError(f"max_waiting must be >= 1, got {max_waiting}")
        self.period_ns = 1e9 / fps
        self.lossless = lossless
        self.max_waiting = max_waiting
        self.missed = 0
        self._t0: int | None = None
        self._n = 0

    @property
    def started(self) -> bool:
        return self._t0 is not None

    def anchor(self, t_ns: int) -> None:
        """Start the grid: the first tick half a period after ``t_ns``."""
        self._t0 = t_ns + round(self.period_ns / 2)
        self._n = 0

    @property
    def next_tick_ns(self) -> int | None:
        """When the next tick is due; None before ``anchor``."""
        if self._t0 is None:
            return None
        return self._t0 + round(self._n * self.period_ns)

    def due(self, now_ns: int) -> bool:
        tick = self.next_tick_ns
        return tick is not None and now_ns >= tick

    def tick(self, now_ns: int, waiting: int) -> TickPlan:
        """Plan the tick that is due at ``now_ns`` with ``waiting`` new frames, and move on
        to the next tick. Raises ValueError when no tick is due."""
        if self._t0 is None or not self.due(now_ns):
            raise ValueError(f"no tick due at {now_ns} ns (next: {self.next_tick_ns})")
        skip = 0 if self.lossless else max(0, waiting - self.max_waiting)
        self._n += 1
        if now_ns >= self._t0 + round(self._n * self.period_ns):  # a period or more behind
            first_after = math.floor((now_ns - self._t0) / self.period_ns) + 1
            self.missed += first_after - self._n
            self._n = first_after
        return TickPlan(skip=skip, send_new=waiting - skip > 0)


class OutputWorker(Worker):
    """Sends finished frames to every sink.

    Paced runs (``repeat=True``): sinks that want a steady rate (virtual cameras, windows)
    get exactly one frame per tick of an ``OutputClock`` at ``fps``: the next new frame, or
    the last one again; the other sinks (recorder, null, image) get every new frame once,
    as soon as it is done, with its capture time. Unpaced runs (``repeat=False``,
    benchmarks): every sink gets each frame as soon as it is done, with no capture time
    (the run is not real time), no ticks and no repeats. ``lossless``: never skip a frame;
    the hand-off then holds the pipeline back instead.

    Telemetry: ``frame_out`` when a new frame reaches the steady sinks (or, with none, the
    others), ``repeat_out`` per repeat, ``skip_out`` per skipped frame.

    Sinks are opened by the app before this thread starts and closed by this thread. A
    sink that raises (anything), or that the user closed, is reported and dropped; the
    others go on. With no sink left the thread ends, and so does the stream. ``failure``
    says which sinks failed (turned off by an error, or a file that could not be
    finished) and whether that ended the stream.

    Unpaced runs give sinks the frame's timestamp in its file (``t_media_ns``) where the
    source has one, so a converted video keeps the file's timing.

    ``label``: drawn once on each new frame (a copy: the pipeline's array is never changed)
    before any sink gets it, so every sink and every repeat carries it, blank and frozen
    frames included.

    ``watermark``: embedded after the label in every new frame the swap changed
    (``faces_swapped`` > 0, or a freeze on such a frame; pass-through frames are left
    alone), so every sink and every repeat gets the marked frame. If it raises, that frame
    goes out unmarked, one warning is logged (the first time) and the stream goes on;
    ``frames_marked`` and ``mark_failures`` count.
    """

    def __init__(
        self,
        sinks: list[Sink],
        slot: RingBuffer[FramePacket],
        stop: threading.Event,
        telemetry: Telemetry,
        fps: float,
        repeat: bool = True,
        *,
        lossless: bool = False,
        label: Label | None = None,
        watermark: Watermarker | None = None,
    ) -> None:
        super().__init__("output", stop, telemetry)
        self.label = label
        self.watermark = watermark
        self.frames_marked = 0
        self.mark_failures = 0
        self._swapped_frame: Frame | None = None  # the last frame the swap changed
        self.sinks = list(sinks)
        self.slot = slot
        self.paced = repeat
        self.clock = OutputClock(fps, lossless=lossless)
        self.pending: deque[FramePacket] = deque()
        self.last: FramePacket | None = None
        self.failures: list[str] = []  # "sink NAME: what went wrong", one per failure
        self.ended_by_failure = False  # the last sink left failed, which ended the stream

    def loop(self) -> None:
        while not self.stop_event.is_set() and self.sinks:
            for packet in self._take():
                self._arrived(packet)
            if self.slot.closed and not self.pending and len(self.slot) == 0:
                break
            now = time.perf_counter_ns()
            if self.clock.due(now):
                self._tick(now)

    def _steady(self) -> list[Sink]:
        """The sinks paced to one frame per tick (none in an unpaced run)."""
        return [s for s in self.sinks if s.wants_repeats] if self.paced else []

    def _take(self) -> list[FramePacket]:
        """Wait for new frames until the next tick is due (at most ``WAIT_S``); take them."""
        wait_s = WAIT_S
        next_tick = self.clock.next_tick_ns
        if next_tick is not None:
            wait_s = min(wait_s, max(0, next_tick - time.perf_counter_ns()) / 1e9)
        room = self.slot.capacity
        if self.clock.lossless and self._steady():  # hold the pipeline back, never skip
            room = max(0, self.clock.max_waiting - len(self.pending))
        got = self.slot.get_batch(room, wait_s) if room else []
        if not got and (room == 0 or self.slot.closed):
            self.stop_event.wait(wait_s)  # get_batch did not wait
        return got

    def _arrived(self, packet: FramePacket) -> None:
        swapped = self._swapped(packet)
        packet = replace(packet, swapped=swapped)  # the sinks get it with the frame
        if self.label is not None:
            packet = replace(packet, frame=self.label.draw(packet.frame))
        if swapped and self.watermark is not None:
            packet = self._mark(packet, self.watermark)
        steady = self._steady()
        self._send(packet, [s for s in self.sinks if s not in steady])
        now = time.perf_counter_ns()
        if steady:
            if not self.clock.started:
                self.clock.anchor(now)
            self.pending.append(packet)
        else:
            self.last = packet
            self.telemetry.frame_out(packet, now)

    def _tick(self, now: int) -> None:
        steady = self._steady()
        if not steady:  # the steady sinks are gone: what waited already reached the others
            while self.pending:
                self.last = self.pending.popleft()
                self.telemetry.frame_out(self.last, now)
            return
        plan = self.clock.tick(now, len(self.pending))
        for _ in range(plan.skip):
            self.pending.popleft()
        if plan.skip:
            self.telemetry.skip_out(plan.skip)
        if plan.send_new:
            packet = self.pending.popleft()
            self._send(packet, steady)
            self.last = packet
            self.telemetry.frame_out(packet, time.perf_counter_ns())
        elif self.last is not None:
            self._send(self.last, steady)
            self.telemetry.repeat_out()

    @property
    def failure(self) -> str | None:
        """One line saying which outputs failed (and that this ended the stream when no
        output was left), or None when none failed."""
        if not self.failures:
            return None
        lead = "an output failed"
        if self.ended_by_failure:
            lead = "every output failed, so the stream stopped"
        return one_line(f"{lead}: {'; '.join(self.failures)}")

    def _swapped(self, packet: FramePacket) -> bool:
        """Whether the swap changed ``packet``'s pixels: it swapped a face, or the stream is
        frozen on a frame that did (a frozen packet carries that frame's array itself, and
        no face count: the stages did not run). Call before the label copies the frame."""
        swapped = bool(packet.faces_swapped) or packet.frame is self._swapped_frame
        self._swapped_frame = packet.frame if swapped else None
        return swapped

    def _mark(self, packet: FramePacket, watermark: Watermarker) -> FramePacket:
        """``packet`` with its frame marked; unmarked (and one warning) if that fails."""
        try:
            marked = replace(packet, frame=watermark.embed(packet.frame))
        except Exception as e:
            self.mark_failures += 1
            if self.mark_failures == 1:
                message = f"the invisible AI mark failed ({one_line(repr(e))}): frames go out "
                message += "unmarked while it fails"
                log.warning(message)
                self.telemetry.event(Event("warning", "watermark", message))
            return packet
        self.frames_marked += 1
        return marked

    def _send(self, packet: FramePacket, sinks: list[Sink]) -> None:
        t_frame = packet.t_capture_ns if self.paced else packet.t_media_ns
        for sink in sinks:
            try:
                sink.send(packet.frame, t_frame, packet.swapped)
            except Exception as e:
                error = as_livecam_error(e)
                message, hint = error.message, error.hint
                self.telemetry.event(
                    Event(
                        "error", f"sink {sink.name}", f"{message}; this output is turned off", hint
                    )
                )
                self.failures.append(f"sink {sink.name}: {message}")
                self._drop(sink)
                self.ended_by_failure = not self.sinks
                continue
            if sink.closed:
                self.telemetry.event(Event("info", f"sink {sink.name}", "closed by the user"))
                self._drop(sink)

    def _drop(self, sink: Sink) -> None:
        if sink in self.sinks:
            self.sinks.remove(sink)
        self._close(sink)

    def _close(self, sink: Sink) -> None:
        try:
            sink.close()
        except Exception as e:
            error = as_livecam_error(e)
            message, hint = error.message, error.hint
            self.telemetry.event(Event("error", f"sink {sink.name}", f"close: {message}", hint))
            self.failures.append(f"sink {sink.name}: {message}")

    #: closing a long recording (encoder flush, audio mux) may take longer than a stop
    finish_grace_s = 120.0

    def cleanup(self) -> None:
        self.slot.close()
        for sink in self.sinks:
            self._close(sink)
