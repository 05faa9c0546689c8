"""What `livecam bench` measures beside telemetry: glass-to-glass latency from the pixel
time stamps (a sink that decodes them), per-frame stage times, peak memory, and the
invisible mark's cost per frame."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import psutil

from livecam.sinks.base import Sink
from livecam.sources.synthetic.stamp import read_stamp
from livecam.stream.watermark import Watermarker, new_session_payload
from livecam.telemetry.gpu import NvmlReader
from livecam.telemetry.snapshot import FrameReport
from livecam.types import Frame

log = logging.getLogger(__name__)


class StampSink(Sink):
    """A null sink that reads the capture time the synthetic source wrote into each
    frame's pixels (``livecam.sources.synthetic.stamp``): latency = now - stamp, both
    ``time.perf_counter_ns``. Frames whose stamp does not decode (a face pasted over it)
    are counted in ``missed``."""

    name = "stamps"
    wants_repeats = False

    def __init__(self) -> None:
        self.latencies_ms: list[float] = []
        self.missed = 0
        self._lock = threading.Lock()

    def open(self, width: int, height: int, fps: float) -> None:
        """Nothing to open."""

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        now = time.perf_counter_ns()
        stamp = read_stamp(frame)
        with self._lock:
            if stamp is None or stamp > now:
                self.missed += 1
            else:
                self.latencies_ms.append((now - stamp) / 1e6)

    def percentiles(self) -> tuple[float, float] | None:
        """(p50, p99) of the decoded latencies in ms, or None when none decoded."""
        with self._lock:
            values = list(self.latencies_ms)
        if not values:
            return None
        p50, p99 = np.percentile(np.asarray(values), [50, 99])
        return round(float(p50), 3), round(float(p99), 3)


@dataclass
class StageTimes:
    """Every output frame's stage times (a telemetry frame subscriber)."""

    per_stage: dict[str, list[float]] = field(default_factory=dict)
    totals: list[float] = field(default_factory=list)

    def __call__(self, report: FrameReport) -> None:
        for name, ms in report.stages_ms.items():
            self.per_stage.setdefault(name, []).append(ms)
        self.totals.append(sum(report.stages_ms.values()))

    def mean_total_ms(self) -> float | None:
        """Mean processing time per output frame (all stages), or None."""
        return float(np.mean(self.totals)) if self.totals else None


class PeakSampler:
    """Samples this process's RSS (psutil) and VRAM (NVML: this process's when NVML lists
    it, else the whole GPU's) every ``interval_s`` on a thread, between ``start`` and
    ``stop``; ``peak_vram_mb`` is None without NVML."""

    def __init__(self, interval_s: float = 0.05, gpu: int = 0) -> None:
        self.interval_s = interval_s
        self.peak_rss_mb = 0.0
        self.peak_vram_mb: float | None = None
        self.vram_scope: str | None = None
        self._gpu_index = gpu
        self._process = psutil.Process()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: NvmlReader | None = None

    def start(self) -> None:
        self._nvml = NvmlReader(self._gpu_index)
        if not self._nvml.available:
            log.debug("no VRAM readings: %s", self._nvml.error)
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="bench-memory", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self) -> None:
        """Take one reading now."""
        self.peak_rss_mb = max(self.peak_rss_mb, self._process.memory_info().rss / 2**20)
        reading = self._nvml.snapshot() if self._nvml is not None else None
        if reading is None:
            return
        if reading.vram_scope == "process" and reading.vram_process_mb is not None:
            value, self.vram_scope = reading.vram_process_mb, "process"
        else:
            value, self.vram_scope = reading.vram_used_mb, "device"
        self.peak_vram_mb = max(self.peak_vram_mb or 0.0, value)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        self.sample()
        if self._nvml is not None:
            self._nvml.close()
            self._nvml = None


def watermark_ms(frames: list[Frame], repeats: int = 5) -> dict[str, float | int]:
    """The invisible mark's cost per frame (``Watermarker.embed``, as the output thread
    calls it on every swapped frame): p50 and p99 in ms over ``repeats`` passes of
    ``frames``, the pattern built for their size first (the output thread builds it once
    per size). Timed after the live run, so the pipeline's threads do not share the CPU."""
    height, width = frames[0].shape[:2]
    marker = Watermarker(new_session_payload())
    marker.prepare(width, height)
    times = []
    for _ in range(repeats):
        for frame in frames:
            t0 = time.perf_counter_ns()
            marker.embed(frame)
            times.append((time.perf_counter_ns() - t0) / 1e6)
    p50, p99 = np.percentile(np.asarray(times), [50, 99])
    return {"p50": round(float(p50), 3), "p99": round(float(p99), 3), "frames": len(times)}
