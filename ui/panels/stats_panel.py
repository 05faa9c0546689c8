"""The Stats panel: fps, latency, per-stage times, drops, swap strength (the live swap
check), the remote swap (where it runs as the server says, round trip, bytes per frame,
the server's batch; or REMOTE LOST in red), CPU, memory, GPU, and a rolling graph of fps
and latency over the last minute (pyqtgraph), fed by ``stream.stats``."""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

import psutil
import pyqtgraph as pg
from PySide6.QtWidgets import QFormLayout, QLabel, QVBoxLayout, QWidget

from livecam.telemetry.snapshot import Snapshot, vram_label
from ui.notice import ERROR_TEXT_STYLE
from ui.settings import UiSettings
from ui.stream import StreamController

log = logging.getLogger(__name__)

HISTORY_S = 60.0  # the graph's time span
FIELDS = ("fps", "latency", "stages", "dropped", "swap", "remote", "cpu", "rss", "gpu")
LABELS = {
    "fps": "fps in / out",
    "latency": "latency p50 / p99",
    "stages": "per stage (p50)",
    "dropped": "dropped / skipped",
    "swap": "swap strength",
    "remote": "remote GPU",
    "cpu": "CPU (this process)",
    "rss": "memory (RSS)",
    "gpu": "GPU",
}


def readings(snapshot: Snapshot, cpu_percent: float) -> dict[str, str]:
    """The panel's text for each of ``FIELDS``, from one snapshot."""
    lat = snapshot.latency_ms
    stages = "\n".join(f"{n}: {p.p50:.1f} ms" for n, p in snapshot.stages_ms.items())
    gpu = snapshot.gpu
    gpu_text = "n/a (no NVIDIA GPU)"
    if gpu:
        gpu_text = f"{vram_label(gpu)}, {gpu.get('util_percent', 0):.0f} % busy"
    return {
        "fps": f"{snapshot.fps_in:.1f} / {snapshot.fps_out:.1f}",
        "latency": f"{lat.p50:.0f} / {lat.p99:.0f} ms" if lat else "n/a",
        "stages": stages or "n/a",
        "dropped": f"{snapshot.dropped} / {snapshot.skipped}",
        "swap": swap_text(snapshot),
        "remote": snapshot.remote.details() if snapshot.remote else "n/a (none reported)",
        "cpu": f"{cpu_percent:.0f} % of one core",
        "rss": f"{snapshot.rss_mb:.0f} MB",
        "gpu": gpu_text,
    }


def swap_text(snapshot: Snapshot) -> str:
    """The swap check's newest reading: strength 0-100 (how far the output moved from the
    camera's identity toward the source's) and the cosine pair; n/a before the first."""
    check = snapshot.swap_check
    if check is None:
        return "n/a (no swapped face checked yet)"
    pair = f"cos to source {check.cos_source:.2f}, to camera {check.cos_camera:.2f}"
    return f"{check.label().removeprefix('swap ')}\n{pair}"


class StatsPanel(QWidget):
    """Shows the newest ``stream.stats`` reading; ``values`` holds the text shown per field
    and ``history`` the (time, fps in, fps out, latency p50, latency p99) points in the
    graph."""

    def __init__(
        self, stream: StreamController, settings: UiSettings, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.stream = stream
        self.settings = settings
        self.values: dict[str, str] = {}
        self.history: deque[tuple[float, float, float, float, float]] = deque()
        self.updates = 0
        self._process = psutil.Process()
        self._process.cpu_percent(None)  # the first call only starts the measurement
        self._labels: dict[str, QLabel] = {}
        form = QFormLayout()
        for name in FIELDS:
            label = QLabel("n/a")
            label.setObjectName(f"stats_{name}")
            self._labels[name] = label
            form.addRow(LABELS[name], label)
        self._fps_plot, self._fps_curves = self._plot(
            "fps", [("in", "#4c9be8"), ("out", "#5cc97b")]
        )
        self._lat_plot, self._lat_curves = self._plot(
            "latency ms", [("p50", "#e8a24c"), ("p99", "#d0607a")]
        )
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self._fps_plot)
        layout.addWidget(self._lat_plot)
        stream.stats.connect(self.show_snapshot)

    def _plot(self, title: str, curves: list[tuple[str, str]]) -> tuple[pg.PlotWidget, list[Any]]:
        plot = pg.PlotWidget()
        plot.setBackground("#1b1b20")
        plot.setMinimumHeight(110)
        plot.setMouseEnabled(x=False, y=False)
        plot.hideButtons()
        plot.setLabel("left", title)
        plot.setLabel("bottom", "seconds ago")
        plot.setXRange(-HISTORY_S, 0, padding=0)
        plot.showGrid(x=True, y=True, alpha=0.2)
        plot.addLegend(offset=(4, 4))
        items = [
            plot.plot([], [], pen=pg.mkPen(colour, width=2), name=name) for name, colour in curves
        ]
        return plot, items

    def show_snapshot(self, snapshot: Snapshot) -> None:
        """Show one reading and add it to the graph (drops points older than a minute)."""
        self.values = readings(snapshot, self._process.cpu_percent(None))
        for name, text in self.values.items():
            self._labels[name].setText(text)
        lost = snapshot.remote is not None and snapshot.remote.lost is not None
        self._labels["remote"].setStyleSheet(ERROR_TEXT_STYLE if lost else "")
        now = time.monotonic()
        lat = snapshot.latency_ms
        p50, p99 = (lat.p50, lat.p99) if lat else (float("nan"), float("nan"))
        self.history.append((now, snapshot.fps_in, snapshot.fps_out, p50, p99))
        while self.history and now - self.history[0][0] > HISTORY_S:
            self.history.popleft()
        ago = [t - now for t, *_ in self.history]
        self._fps_curves[0].setData(ago, [p[1] for p in self.history])
        self._fps_curves[1].setData(ago, [p[2] for p in self.history])
        self._lat_curves[0].setData(ago, [p[3] for p in self.history], connect="finite")
        self._lat_curves[1].setData(ago, [p[4] for p in self.history], connect="finite")
        fps_top = max(max(p[1], p[2]) for p in self.history)
        self._fps_plot.setYRange(0, max(fps_top * 1.2, 10.0), padding=0)
        lat_top = max((p[4] for p in self.history if p[4] == p[4]), default=0.0)  # NaN skipped
        self._lat_plot.setYRange(0, max(lat_top * 1.2, 10.0), padding=0)
        self.updates += 1
