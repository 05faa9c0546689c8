"""Telemetry: frame rates, per-stage timings, glass-to-glass latency, drops, memory, GPU.

Fed by the pipeline threads; read with ``snapshot`` or followed with ``subscribe``
(events and per-frame reports). Subscribers run on the thread that emits, guarded: one
that raises is reported once and unsubscribed, and the emitting thread goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from livecam.telemetry.gpu import GpuReader
from livecam.telemetry.meters import FaceCounts, Percentiles, RateMeter
from livecam.telemetry.snapshot import FrameReport, Snapshot
from livecam.types import Event, FramePacket, RemoteReading, SwapReading

log = logging.getLogger(__name__)

EventListener = Callable[[Event], None]
FrameListener = Callable[[FrameReport], None]
PacketListener = Callable[[FramePacket], None]


@dataclass(eq=False)
class Subscription:
    """A subscriber's callbacks; ``unsubscribe`` stops them (safe to call twice)."""

    _telemetry: Telemetry
    on_event: EventListener | None
    on_frame: FrameListener | None
    on_packet: PacketListener | None = None

    def unsubscribe(self) -> None:
        self._telemetry._remove(self)

    @property
    def active(self) -> bool:
        return self._telemetry._has(self)


class Telemetry:
    """Thread-safe meters fed by the capture, inference and output threads.

    Sent frames that the swap stage worked on feed the face counters; a watch that needs
    the sent frames themselves (the app's no-face watch) subscribes with ``on_packet``.
    """

    #: an identical event (same origin and message) is passed on at most once per this period
    EVENT_REPEAT_S = 5.0
    #: ``snapshot(recent=True)`` rates are computed over this window ending now
    RECENT_WINDOW_S = 2.0

    def __init__(
        self,
        window: int = 1000,
        gpu_reader: GpuReader | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._start_ns = time.perf_counter_ns()
        window_ns = int(self.RECENT_WINDOW_S * 1e9)
        self._in = RateMeter(window_ns)
        self._processed = RateMeter(window_ns)
        self._out = RateMeter(window_ns)
        self._repeats = 0
        self._skipped = 0
        self._latency: deque[float] = deque(maxlen=window)
        self._stages: dict[str, deque[float]] = {}
        self._window = window
        self._events: deque[Event] = deque(maxlen=200)
        self._event_count = 0
        self._subscriptions: list[Subscription] = []
        self._last_passed: dict[tuple[str, str], int] = {}
        self._drop_counters: list[Callable[[], int]] = []
        self._providers: dict[str, dict[str, str]] = {}
        self._gpu_reader = gpu_reader
        self._process = psutil.Process()
        self._faces = FaceCounts()
        self._swap_check: SwapReading | None = None
        self._remote: RemoteReading | None = None

    # --- feeding -------------------------------------------------------------------------
    def frame_in(self, t_ns: int) -> None:
        with self._lock:
            self._in.tick(t_ns)

    def processed(self, n: int = 1) -> None:
        """The inference thread finished ``n`` frames (call once per batch)."""
        now = time.perf_counter_ns()
        with self._lock:
            self._processed.tick(now, n)

    def stage_ms(self, name: str, ms: float) -> None:
        """One frame's time in stage ``name`` (call once per frame)."""
        with self._lock:
            self._stages.setdefault(name, deque(maxlen=self._window)).append(ms)

    def frame_out(self, packet: FramePacket, t_sent_ns: int) -> None:
        """A new (not repeated) frame reached the sinks: packet subscribers get the packet,
        then frame subscribers its report. A frame the swap stage worked on
        (``faces_swapped`` set) is counted for the faces; a stand-in (blank, frozen) is
        left out of the latency window (it went out at once, unprocessed)."""
        with self._lock:
            self._out.tick(t_sent_ns)
            if not packet.stand_in:  # a blank or frozen picture: no pipeline latency
                self._latency.append((t_sent_ns - packet.t_capture_ns) / 1e6)
            listeners = [s for s in self._subscriptions if s.on_frame is not None]
            watchers = [s for s in self._subscriptions if s.on_packet is not None]
            if packet.faces_swapped is not None:
                self._faces.add(len(packet.faces), packet.faces_swapped, packet.faces_reused)
            else:  # swap off, blank or frozen: no faces to show now
                self._faces.now = None
        for sub in watchers:
            assert sub.on_packet is not None
            self._call(sub, sub.on_packet, packet)
        if listeners:
            report = FrameReport.of(packet, t_sent_ns)
            for sub in listeners:
                assert sub.on_frame is not None
                self._call(sub, sub.on_frame, report)

    def swap_check(self, reading: SwapReading | None) -> None:
        """The swap check's newest reading (its thread; None: a new stage, none yet)."""
        with self._lock:
            self._swap_check = reading

    def remote(self, reading: RemoteReading | None) -> None:
        """The remote swap's newest figures (its monitor thread, about once a second)."""
        with self._lock:
            self._remote = reading

    def swap_reading(self) -> SwapReading | None:
        """The swap check's newest reading."""
        with self._lock:
            return self._swap_check

    def repeat_out(self) -> None:
        with self._lock:
            self._repeats += 1

    def skip_out(self, n: int = 1) -> None:
        """The output thread skipped ``n`` finished frames because newer ones were due."""
        with self._lock:
            self._skipped += n

    def count_drops_from(self, counter: Callable[[], int]) -> None:
        """Register a callable returning a drop count (e.g. a ring buffer's)."""
        with self._lock:
            self._drop_counters.append(counter)

    def set_provider(
        self, stage: str, requested: str, used: str, reason: str | None = None
    ) -> None:
        """Record the execution provider ``stage`` asked for, the one it really got and
        why not the one asked for (``reason``, e.g. a CUDA library that failed to load).

        A fallback (``used != requested``) is also a warning event, so the panel and the
        terminal say it at once, not only in the status line.
        """
        entry = {"requested": requested, "used": used}
        if reason and used != requested:
            entry["reason"] = reason
        with self._lock:
            self._providers[stage] = entry
        if used != requested:
            why = f": {reason}" if reason else ""
            self.event(
                Event(
                    "warning",
                    f"stage {stage}",
                    f"runs on {used}, not the requested {requested} (provider fallback){why}",
                    "`livecam doctor` says what to install" if reason else "",
                )
            )

    # --- subscribing ---------------------------------------------------------------------
    def subscribe(
        self,
        on_event: EventListener | None = None,
        on_frame: FrameListener | None = None,
        on_packet: PacketListener | None = None,
    ) -> Subscription:
        """Call ``on_event`` for each event, and for each new output frame ``on_packet`` with
        its packet (pixels, faces; the output thread's: read it, never change it), then
        ``on_frame`` with its report.

        Callbacks run on the emitting pipeline thread: keep them short (queue the work).
        One that raises is reported once as a warning event and unsubscribed.
        """
        sub = Subscription(self, on_event, on_frame, on_packet)
        with self._lock:
            self._subscriptions.append(sub)
        return sub

    def add_listener(self, listener: EventListener) -> Subscription:
        """Subscribe ``listener`` to events (shorthand for ``subscribe(on_event=...)``)."""
        return self.subscribe(on_event=listener)

    def _remove(self, sub: Subscription) -> bool:
        with self._lock:
            if sub in self._subscriptions:
                self._subscriptions.remove(sub)
                return True
            return False

    def _has(self, sub: Subscription) -> bool:
        with self._lock:
            return sub in self._subscriptions

    def _call(self, sub: Subscription, callback: Callable[[Any], None], arg: object) -> None:
        """Run one subscriber callback; on any exception unsubscribe it and report it once."""
        try:
            callback(arg)
        except Exception as e:
            if not self._remove(sub):
                return  # already unsubscribed and reported (it raised on another thread too)
            name = getattr(callback, "__qualname__", None) or repr(callback)
            log.warning("telemetry listener %s raised %r; unsubscribed", name, e)
            self.event(
                Event(
                    "warning",
                    "telemetry",
                    f"listener {name} raised {e!r}; it was unsubscribed",
                    "fix the listener; the stream goes on without it",
                )
            )

    # --- events --------------------------------------------------------------------------
    def event(self, event: Event) -> None:
        """Record an event and pass it to every event subscriber (CLI printer, UI bridge).

        A warning or error repeating every frame is counted each time but passed on only
        once per ``EVENT_REPEAT_S`` so it cannot flood the terminal or the panel; info
        events (a command applied twice) always pass.
        """
        key = (event.origin, event.message)
        with self._lock:
            self._event_count += 1
            last = self._last_passed.get(key)
            repeated = last is not None and event.t_ns - last < self.EVENT_REPEAT_S * 1e9
            if repeated and event.level != "info":  # info (a command applied) always passes
                return
            self._last_passed[key] = event.t_ns
            self._events.append(event)
            listeners = [s for s in self._subscriptions if s.on_event is not None]
        for sub in listeners:
            assert sub.on_event is not None
            self._call(sub, sub.on_event, event)

    def recent_events(self) -> list[Event]:
        with self._lock:
            return list(self._events)

    # --- reading -------------------------------------------------------------------------
    def snapshot(self, recent: bool = False) -> Snapshot:
        """Read every meter. Rates: with ``recent``, over the last ``RECENT_WINDOW_S`` up to
        now (0 once frames stop); else between the first and last frame of the run."""
        now = time.perf_counter_ns()
        with self._lock:
            latency = list(self._latency)
            stages = {n: list(v) for n, v in self._stages.items()}
            meters = (self._in, self._processed, self._out)
            if recent:
                fps_in, fps_proc, fps_out = (m.recent_rate(now) for m in meters)
            else:
                fps_in, fps_proc, fps_out = (m.run_rate() for m in meters)
            frames_in, processed = self._in.count, self._processed.count
            frames_out, repeats, skipped = self._out.count, self._repeats, self._skipped
            events = self._event_count
            faces = dataclasses.replace(self._faces)
            providers = {s: dict(p) for s, p in self._providers.items()}
            drop_counters = list(self._drop_counters)
            swap_check = self._swap_check
            remote = self._remote
        reading = self._gpu_reader.snapshot() if self._gpu_reader is not None else None
        gpu = dataclasses.asdict(reading) if reading is not None else None
        stage_pcts = {n: p for n, v in stages.items() if (p := Percentiles.of(v)) is not None}
        return Snapshot(
            elapsed_s=(now - self._start_ns) / 1e9,
            frames_in=frames_in,
            frames_out=frames_out,
            repeats=repeats,
            dropped=sum(c() for c in drop_counters),
            fps_in=fps_in,
            fps_out=fps_out,
            latency_ms=Percentiles.of(latency),
            stages_ms=stage_pcts,
            rss_mb=self._process.memory_info().rss / 2**20,
            gpu=gpu,
            events=events,
            providers=providers,
            frames_processed=processed,
            fps_processed=fps_proc,
            skipped=skipped,
            frames_searched=faces.frames,
            faces_detected=faces.found,
            faces_swapped=faces.swapped,
            frames_swapped=faces.frames_swapped,
            faces_now=faces.now,
            faces_reused=faces.reused,
            swap_check=swap_check,
            remote=remote,
        )
