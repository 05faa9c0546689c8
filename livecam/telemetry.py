"""Telemetry: frame rates, per-stage timings, glass-to-glass latency, drops, memory, GPU."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import psutil

from livecam.types import Event, FramePacket

EventListener = Callable[[Event], None]


class GpuReader(Protocol):
    """Anything that returns a GPU reading (with vram_used_mb, vram_total_mb) or None."""

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
    """A consistent reading of every meter at one moment."""

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
    providers: dict[str, str] = field(default_factory=dict)

    def status_line(self) -> str:
        """One short line for the terminal."""
        lat = f"{self.latency_ms.p50:.1f}/{self.latency_ms.p99:.1f}" if self.latency_ms else "n/a"
        stages = " ".join(f"{n}={p.p50:.1f}" for n, p in self.stages_ms.items())
        if self.gpu:
            used, total = self.gpu.get("vram_used_mb", 0), self.gpu.get("vram_total_mb", 0)
            gpu = f"VRAM {used:.0f}/{total:.0f}MB"
        else:
            gpu = "GPU n/a"
        return (
            f"in {self.fps_in:5.1f} fps | out {self.fps_out:5.1f} fps | latency p50/p99 {lat} ms | "
            f"drops {self.dropped} | {stages} | RSS {self.rss_mb:.0f}MB | {gpu}"
        )

    def to_summary(self) -> dict[str, Any]:
        """The JSON summary written by ``--stats-json``."""
        return {
            "elapsed_s": round(self.elapsed_s, 3),
            "frames_in": self.frames_in,
            "frames_out": self.frames_out,
            "repeats": self.repeats,
            "dropped": self.dropped,
            "fps_in": round(self.fps_in, 2),
            "fps_out": round(self.fps_out, 2),
            "latency_ms": _pct_dict(self.latency_ms),
            "stages_ms": {n: _pct_dict(p) for n, p in self.stages_ms.items()},
            "rss_mb": round(self.rss_mb, 1),
            "gpu": self.gpu if self.gpu else "n/a",
            "providers": self.providers,
            "events": self.events,
        }


def _pct_dict(p: Percentiles | None) -> dict[str, float | None]:
    return {"p50": p.p50, "p99": p.p99} if p else {"p50": None, "p99": None}


class _RateMeter:
    """Counts events and reports the rate over the whole run or a recent window."""

    def __init__(self) -> None:
        self.count = 0
        self.first_ns = 0
        self.last_ns = 0
        self.recent: deque[int] = deque(maxlen=120)

    def tick(self, t_ns: int) -> None:
        if self.count == 0:
            self.first_ns = t_ns
        self.count += 1
        self.last_ns = t_ns
        self.recent.append(t_ns)

    def rate(self, recent: bool) -> float:
        stamps = (self.recent[0], self.recent[-1], len(self.recent)) if self.recent else None
        if recent and stamps:
            first, last, n = stamps
        else:
            first, last, n = self.first_ns, self.last_ns, self.count
        if n < 2 or last <= first:
            return 0.0
        return (n - 1) * 1e9 / (last - first)


class Telemetry:
    """Thread-safe meters fed by the capture, inference and output threads."""

    #: an identical event (same origin and message) is passed on at most once per this period
    EVENT_REPEAT_S = 5.0

    def __init__(self, window: int = 1000, gpu_reader: GpuReader | None = None) -> None:
        self._lock = threading.Lock()
        self._start_ns = time.perf_counter_ns()
        self._in = _RateMeter()
        self._out = _RateMeter()
        self._repeats = 0
        self._latency: deque[float] = deque(maxlen=window)
        self._stages: dict[str, deque[float]] = {}
        self._window = window
        self._events: deque[Event] = deque(maxlen=200)
        self._event_count = 0
        self._listeners: list[EventListener] = []
        self._last_passed: dict[tuple[str, str], int] = {}
        self._drop_counters: list[Callable[[], int]] = []
        self._gpu_reader = gpu_reader
        self._process = psutil.Process()
        self.providers: dict[str, str] = {}

    # --- feeding -------------------------------------------------------------------------
    def frame_in(self, t_ns: int) -> None:
        with self._lock:
            self._in.tick(t_ns)

    def stage_ms(self, name: str, ms: float) -> None:
        with self._lock:
            self._stages.setdefault(name, deque(maxlen=self._window)).append(ms)

    def frame_out(self, packet: FramePacket, t_sent_ns: int) -> None:
        """A new (not repeated) frame reached the sinks."""
        with self._lock:
            self._out.tick(t_sent_ns)
            self._latency.append((t_sent_ns - packet.t_capture_ns) / 1e6)

    def repeat_out(self) -> None:
        with self._lock:
            self._repeats += 1

    def count_drops_from(self, counter: Callable[[], int]) -> None:
        """Register a callable returning a drop count (e.g. a ring buffer's)."""
        self._drop_counters.append(counter)

    # --- events --------------------------------------------------------------------------
    def add_listener(self, listener: EventListener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def event(self, event: Event) -> None:
        """Record an event and pass it to every listener (CLI printer, UI bridge).

        A failure repeating every frame is counted each time but passed on only once per
        ``EVENT_REPEAT_S`` so it cannot flood the terminal or the panel.
        """
        key = (event.origin, event.message)
        with self._lock:
            self._event_count += 1
            last = self._last_passed.get(key)
            if last is not None and event.t_ns - last < self.EVENT_REPEAT_S * 1e9:
                return
            self._last_passed[key] = event.t_ns
            self._events.append(event)
            listeners = list(self._listeners)
        for listener in listeners:
            listener(event)

    def recent_events(self) -> list[Event]:
        with self._lock:
            return list(self._events)

    # --- reading -------------------------------------------------------------------------
    def snapshot(self, recent: bool = False) -> Snapshot:
        """Read every meter. ``recent``: rates over the last ~120 frames, else the whole run."""
        with self._lock:
            latency = list(self._latency)
            stages = {n: list(v) for n, v in self._stages.items()}
            fps_in, fps_out = self._in.rate(recent), self._out.rate(recent)
            frames_in, frames_out, repeats = self._in.count, self._out.count, self._repeats
            events = self._event_count
        reading = self._gpu_reader.snapshot() if self._gpu_reader is not None else None
        gpu = dataclasses.asdict(reading) if reading is not None else None
        stage_pcts = {n: p for n, v in stages.items() if (p := Percentiles.of(v)) is not None}
        return Snapshot(
            elapsed_s=(time.perf_counter_ns() - self._start_ns) / 1e9,
            frames_in=frames_in,
            frames_out=frames_out,
            repeats=repeats,
            dropped=sum(c() for c in self._drop_counters),
            fps_in=fps_in,
            fps_out=fps_out,
            latency_ms=Percentiles.of(latency),
            stages_ms=stage_pcts,
            rss_mb=self._process.memory_info().rss / 2**20,
            gpu=gpu,
            events=events,
            providers=dict(self.providers),
        )
