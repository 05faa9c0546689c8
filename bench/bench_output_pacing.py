"""Output pacing: does the virtual camera get exactly the configured fps, evenly spaced?

    python bench/bench_output_pacing.py [--seconds 5] [--size 640x360] [--runs 3]

A synthetic source feeds the pipeline (pass-through) and the output thread sends to the
real ``pyvirtualcam.Camera`` driving the tests' recording backend, which stamps each frame
as it arrives. Two cases: source 30 fps -> output 30 fps, and source 20 fps -> output 30
fps (every third send must be a repeat). Prints, per case, the median over runs of:
sends/s, the gap between sends (min/p50/p99/max ms), repeats and skips per second.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from recording_backend import register_recording_backend, unregister  # noqa: E402

from livecam.app import App  # noqa: E402
from livecam.config.schema import Config  # noqa: E402


def one_run(
    size: tuple[int, int], src_fps: float, out_fps: float, seconds: float
) -> dict[str, float]:
    store = register_recording_backend()
    try:
        cfg = Config.from_dict(
            {
                "source": {"spec": "synthetic", "size": list(size), "fps": src_fps},
                "output": {
                    "sinks": ["virtualcam"],
                    "virtualcam_backend": store.name,
                    "fps": out_fps,
                },
            }
        )
        app = App(cfg)
        app.start()
        time.sleep(1.0)  # settle: skip start-up
        with store.lock:
            first = len(store.frames)
        time.sleep(seconds)
        with store.lock:
            got = store.frames[first:]
        app.stop()
    finally:
        unregister(store.name)
    t_ms = np.array([f.t_ns for f in got], np.float64) / 1e6
    gaps = np.diff(t_ms)
    span_s = (t_ms[-1] - t_ms[0]) / 1e3
    repeats = sum(1 for a, b in zip(got, got[1:]) if np.array_equal(a.frame, b.frame))
    snap = app.snapshot()
    return {
        "sends_per_s": (len(got) - 1) / span_s,
        "gap_min": float(gaps.min()),
        "gap_p50": float(np.percentile(gaps, 50)),
        "gap_p99": float(np.percentile(gaps, 99)),
        "gap_max": float(gaps.max()),
        "repeats_per_s": repeats / span_s,
        "skipped": float(snap.skipped),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--size", default="640x360")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    for src_fps, out_fps in ((30.0, 30.0), (20.0, 30.0)):
        runs = [one_run((w, h), src_fps, out_fps, args.seconds) for _ in range(args.runs)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"source {src_fps:g} fps -> output {out_fps:g} fps ({w}x{h}, median of {args.runs} "
            f"runs of {args.seconds:g} s): {med['sends_per_s']:.1f} sends/s, gap min "
            f"{med['gap_min']:.1f} ms p50 {med['gap_p50']:.1f} ms p99 {med['gap_p99']:.1f} ms "
            f"max {med['gap_max']:.1f} ms, "
            f"{med['repeats_per_s']:.1f} repeats/s, {med['skipped']:.0f} skipped"
        )


if __name__ == "__main__":
    main()
