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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np
import psutil

from livecam.face.track.feedback import NoFaceWatch
from livecam.types import Event, FramePacket

log = logging.getLogger(__name__)

EventListener = Callable[[Event], None]


@dataclass(frozen=True)
class FrameReport:
    """One new output frame: when it was captured and sent, and what each stage cost it.

    ``stages_ms`` is read-only (one report is shared by every subscriber);
    ``dict(report.stages_ms)`` gives a plain dict.
    """

    seq: int
    t_capture_ns: int
    t_sent_ns: int
    latency_ms: float
    stages_ms: Mapping[str, float]

    @staticmethod
    def of(packet: FramePacket, t_sent_ns: int) -> FrameReport:
        stages: dict[str, float] = {}
        for timing in packet.timings:
            stages[timing.name] = stages.get(timing.name, 0.0) + timing.ms
        return FrameReport(
            seq=packet.seq,
            t_capture_ns=packet.t_capture_ns,
            t_sent_ns=t_sent_ns,
            latency_ms=(t_sent_ns - packet.t_capture_ns) / 1e6,
            stages_ms=MappingProxyType(stages),
        )


FrameListener = Callable[[FrameReport], None]


class GpuReader(Protocol):
    """Anything that returns a GPU reading (a dataclass such as ``GpuSnapshot``) or None."""

    def snapshot(self) -> Any | None: ...


@dataclass(frozen=True)
class Percentiles:
    p50: float
    p99: float

    @staticmethod
    def of(values: list[float]) -> Percentiles | None:
        if not values:
            return None
        p50, p99 = np.percentile(np.asarray(values, dtype=np.float64), [50, 99])
        return Percentiles(round(float(p50), 3), round(float(p99), 3))


@dataclass(frozen=True)
class Snapshot:
    """A consistent reading of every meter at one moment.

    ``frames_processed``: frames the inference thread finished; ``skipped``: finished
    frames the output thread did not send because newer ones were due; ``dropped``:
    frames dropped by the hand-off buffers. ``providers``: per stage, the execution
    provider ``requested`` and the one actually ``used``.

    Faces, over the sent frames the swap stage worked on (``frames_searched``): faces
    found and swapped in all of them, ``frames_swapped`` those with at least one swapped
    face, and ``faces_now`` (found, swapped) in the last sent frame (None when the swap
    stage did not work on it: swap off, blank, freeze, or no frame yet). ``faces_reused``:
    swapped faces that got their track's previous swapped face again (``swap.reuse``);
    ``reuse_hit_rate`` is their share of the swapped faces.
    """

    elapsed_s: float
    frames_in: int
    frames_out: int
    repeats: int
    dropped: int
    fps_in: float
    fps_out: float
    latency_ms: Percentiles | None
    stages_ms: dict[str, Percentiles]
    rss_mb: float
    gpu: dict[str, Any] | None
    events: int
    providers: dict[str, dict[str, str]] = field(default_factory=dict)
    frames_processed: int = 0
    fps_processed: float = 0.0
    skipped: int = 0
    frames_searched: int = 0
    faces_detected: int = 0
    faces_swapped: int = 0
    frames_swapped: int = 0
    faces_now: tuple[int, int] | None = None
    faces_reused: int = 0

    @property
    def reuse_hit_rate(self) -> float:
        """Share of the swapped faces that reused their track's last swap (0 when none)."""
        return self.faces_reused / self.faces_swapped if self.faces_swapped else 0.0

    def status_line(self) -> str:
        """One short line for the terminal."""
        lat = f"{self.latency_ms.p50:.1f}/{self.latency_ms.p99:.1f}" if self.latency_ms else "n/a"
        parts = [
            f"in {self.fps_in:5.1f} | proc {self.fps_processed:5.1f} | out {self.fps_out:5.1f} fps",
            f"latency p50/p99 {lat} ms",
            f"drops {self.dropped} skips {self.skipped}",
        ]
        if self.faces_now is not None:
            share = self.frames_swapped / max(self.frames_searched, 1)
            parts.append(
                f"faces found {self.faces_now[0]} swapped {self.faces_now[1]}, "
                f"{share:.0%} of frames swapped"
                + (f", {self.reuse_hit_rate:.0%} reused" if self.faces_reused else "")
            )
        if self.stages_ms:
            parts.append(" ".join(f"{n}={p.p50:.1f}" for n, p in self.stages_ms.items()))
        if self.providers:
            parts.append(" ".join(provider_label(n, p) for n, p in self.providers.items()))
        parts.append(f"RSS {self.rss_mb:.0f}MB")
        parts.append(vram_label(self.gpu))
        return " | ".join(parts)

    def to_summary(self) -> dict[str, Any]:
        """The JSON summary written by ``--stats-json``."""
        return {
            "elapsed_s": round(self.elapsed_s, 3),
            "frames_in": self.frames_in,
            "frames_processed": self.frames_processed,
            "frames_out": self.frames_out,
            "repeats": self.repeats,
            "skipped": self.skipped,
            "dropped": self.dropped,
            "fps_in": round(self.fps_in, 2),
            "fps_processed": round(self.fps_processed, 2),
            "fps_out": round(self.fps_out, 2),
            "latency_ms": _pct_dict(self.latency_ms),
            "stages_ms": {n: _pct_dict(p) for n, p in self.stages_ms.items()},
            "rss_mb": round(self.rss_mb, 1),
            "gpu": self.gpu if self.gpu else "n/a",
            "providers": self.providers,
            "events": self.events,
            "frames_searched": self.frames_searched,
            "faces_detected": self.faces_detected,
            "faces_swapped": self.faces_swapped,
            "frames_swapped": self.frames_swapped,
            "faces_reused": self.faces_reused,
            "reuse_hit_rate": round(self.reuse_hit_rate, 4),
        }


def provider_label(stage: str, provider: Mapping[str, str]) -> str:
    """``stage=CUDA``, or a loud ``stage=CPU (FALLBACK, wanted CUDA)``."""
    used, requested = provider.get("used", "?"), provider.get("requested", "?")
    if used == requested:
        return f"{stage}={used}"
    return f"{stage}={used} (FALLBACK, wanted {requested})"


def vram_label(gpu: Mapping[str, Any] | None) -> str:
    """VRAM in use, labelled with its scope: this process, or the whole GPU."""
    if not gpu:
        return "GPU n/a"
    total = gpu.get("vram_total_mb", 0)
    if gpu.get("vram_scope") == "process" and gpu.get("vram_process_mb") is not None:
        return f"VRAM {gpu['vram_process_mb']:.0f}/{total:.0f}MB (this process)"
    return f"VRAM {gpu.get('vram_used_mb', 0):.0f}/{total:.0f}MB (whole GPU)"


def _pct_dict(p: Percentiles | None) -> dict[str, float | None]:
    return {"p50": p.p50, "p99": p.p99} if p else {"p50": None, "p99": None}


class _RateMeter:
    """Counts frames; reports the rate over the whole run or over a window ending now."""

    def __init__(self, window_ns: int) -> None:
        self.count = 0
        self.first_ns = 0
        self.first_n = 0
        self.last_ns = 0
        self.window_ns = window_ns
        self._recent: deque[tuple[int, int]] = deque()  # (t_ns, n) within the window

    def tick(self, t_ns: int, n: int = 1) -> None:
        if self.count == 0:
            self.first_ns, self.first_n = t_ns, n
        self.count += n
        self.last_ns = t_ns
        self._recent.append((t_ns, n))
        self._prune(t_ns)

    def _prune(self, now_ns: int) -> None:
        while self._recent and self._recent[0][0] <= now_ns - self.window_ns:
            self._recent.popleft()

    def run_rate(self) -> float:
        """Frames per second between the first and the last frame of the run."""
        if self.count < 2 or self.last_ns <= self.first_ns:
            return 0.0
        return (self.count - self.first_n) * 1e9 / (self.last_ns - self.first_ns)

    def recent_rate(self, now_ns: int) -> float:
        """Frames per second over the window ending at ``now_ns``: 0 once frames stop.

        Until one window has passed since the first frame, the frames after the first
        over the time since it.
        """
        elapsed = now_ns - self.first_ns
        if self.count == 0 or elapsed <= 0:
            return 0.0
        if elapsed < self.window_ns:
            return (self.count - self.first_n) * 1e9 / elapsed
        self._prune(now_ns)
        return sum(n for _, n in self._recent) * 1e9 / self.window_ns


@dataclass
class _FaceCounts:
    """Face counters over the sent frames the swap stage worked on."""

    frames: int = 0
    found: int = 0
    swapped: int = 0
    frames_swapped: int = 0
    reused: int = 0
    now: tuple[int, int] | None = None

    def add(self, found: int, swapped: int, reused: int = 0) -> None:
        self.frames += 1
        self.found += found
        self.swapped += swapped
        self.reused += reused
        self.frames_swapped += swapped > 0
        self.now = (found, swapped)


@dataclass(eq=False)
class Subscription:
    """A subscriber's callbacks; ``unsubscribe`` stops them (safe to call twice)."""

    _telemetry: Telemetry
    on_event: EventListener | None
    on_frame: FrameListener | None

    def unsubscribe(self) -> None:
        self._telemetry._remove(self)

    @property
    def active(self) -> bool:
        return self._telemetry._has(self)


class Telemetry:
    """Thread-safe meters fed by the capture, inference and output threads.

    Sent frames that the swap stage worked on feed the face counters and a ``NoFaceWatch``
    (warns after ``no_face_after_s`` seconds without a swapped face, then every
    ``no_face_repeat_s``).
    """

    #: an identical event (same origin and message) is passed on at most once per this period
    EVENT_REPEAT_S = 5.0
    #: ``snapshot(recent=True)`` rates are computed over this window ending now
    RECENT_WINDOW_S = 2.0

    def __init__(
        self,
        window: int = 1000,
        gpu_reader: GpuReader | None = None,
        no_face_after_s: float = 5.0,
        no_face_repeat_s: float = 30.0,
    ) -> None:
        self._lock = threading.Lock()
        self._start_ns = time.perf_counter_ns()
        window_ns = int(self.RECENT_WINDOW_S * 1e9)
        self._in = _RateMeter(window_ns)
        self._processed = _RateMeter(window_ns)
        self._out = _RateMeter(window_ns)
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
        self._faces = _FaceCounts()
        self._no_face: NoFaceWatch | None = NoFaceWatch(no_face_after_s, no_face_repeat_s)

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
        """A new (not repeated) frame reached the sinks; frame subscribers get its report.

        A frame the swap stage worked on (``faces_swapped`` set) is counted for the faces
        and watched for a stretch without a swap (a warning event with the likely cause).
        """
        notice = None
        with self._lock:
            self._out.tick(t_sent_ns)
            self._latency.append((t_sent_ns - packet.t_capture_ns) / 1e6)
            listeners = [s for s in self._subscriptions if s.on_frame is not None]
            if packet.faces_swapped is not None:
                self._faces.add(len(packet.faces), packet.faces_swapped, packet.faces_reused)
                notice = self._watch(packet)
            else:  # swap off, blank or frozen: no faces to show now
                self._faces.now = None
        if notice is not None:
            self.event(notice)
        if listeners:
            report = FrameReport.of(packet, t_sent_ns)
            for sub in listeners:
                assert sub.on_frame is not None
                self._call(sub, sub.on_frame, report)

    def _watch(self, packet: FramePacket) -> Event | None:
        """The no-face watch's event for this packet, if any (under the lock). A watch that
        raises is reported and switched off: the output thread goes on."""
        if self._no_face is None:
            return None
        try:
            return self._no_face.observe(
                packet.t_capture_ns, packet.frame, packet.faces, packet.faces_swapped or 0
            )
        except Exception as e:
            self._no_face = None
            log.warning("the no-face watch raised %r; switched off", e)
            return Event("warning", "telemetry", f"the no-face watch raised {e!r}; it is off")

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
        self, on_event: EventListener | None = None, on_frame: FrameListener | None = None
    ) -> Subscription:
        """Call ``on_event`` for each event and ``on_frame`` for each new output frame.

        Callbacks run on the emitting pipeline thread: keep them short (queue the work).
        One that raises is reported once as a warning event and unsubscribed.
        """
        sub = Subscription(self, on_event, on_frame)
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
        )
