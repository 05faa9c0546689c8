"""Shared by the pipeline benchmarks: run one configuration to the end, read its figures."""

from __future__ import annotations

from typing import Any

from livecam.app import App
from livecam.config.schema import Config


def run_to_end(settings: dict[str, Any]) -> dict[str, float]:
    """Run the pipeline described by ``settings`` (a Config dict with run.frames set) and
    return frames/s out, latency p50/p99 (ms), drops and per-stage p50 (ms)."""
    app = App(Config.from_dict(settings))
    app.start()
    app.wait()
    app.stop()
    s = app.snapshot()
    assert s.latency_ms is not None, "no frame reached the sink"
    figures = {
        "fps_out": s.fps_out,
        "p50": s.latency_ms.p50,
        "p99": s.latency_ms.p99,
        "dropped": float(s.dropped),
        "frames_out": float(s.frames_out),
    }
    figures.update({f"{name}_p50": p.p50 for name, p in s.stages_ms.items()})
    return figures
