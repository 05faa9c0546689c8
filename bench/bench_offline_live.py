"""A preset, live: one face through the whole pipeline (CPU only).

    python bench/bench_offline_live.py [--runs 5] [--frames 300] [--size 640x480]
        [--preset lite|standard|...]   (lite, the default, is bundled: nothing to set)

Source: the synthetic face-motion clip (assets/astronaut.png moving like a head on a
webcam, fitted to --size: her face is ~13 % of the width at 640x480, ~10 % at 16:9 sizes),
swap source assets/grace_hopper.jpg, null sink. Two modes, each run several times:

* paced 30 fps and 60 fps (a webcam): output frames/s and glass-to-glass latency p50/p99;
* unpaced and lossless (every frame processed, batches of up to 4): the throughput
  ceiling in frames/s (its latency is queueing, not a live figure).

Targets on a 2-core machine: >= 30 frames/s out (stretch 60), latency p50 <= 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from pipeline_run import run_to_end

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def one_run(
    frames: int,
    unpaced: bool,
    fps: float,
    size: tuple[int, int] = (640, 480),
    preset: str = "lite",
) -> dict[str, float]:
    """One pipeline run; unpaced runs are lossless so every frame is swapped."""
    return run_to_end(
        {
            "source": {
                "spec": "synthetic",
                "face_motion": str(ASSETS / "astronaut.png"),
                "size": list(size),
                "fps": fps,
                "unpaced": unpaced,
            },
            "buffer": {"lossless": unpaced},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg"), "preset": preset},
            "run": {"frames": frames},
        }
    )


def report(label: str, runs: list[dict[str, float]]) -> None:
    for i, r in enumerate(runs):
        print(
            f"  {label} run {i + 1}: {r['fps_out']:6.1f} frames/s out, latency p50 "
            f"{r['p50']:6.1f} ms p99 {r['p99']:6.1f} ms, swap stage p50 {r['swap_p50']:.1f} ms, "
            f"{r['frames_out']:.0f} out, {r['dropped']:.0f} dropped"
        )
    med = {k: statistics.median(r[k] for r in runs) for k in ("fps_out", "p50", "p99", "swap_p50")}
    print(
        f"{label}: median of {len(runs)} runs: {med['fps_out']:.1f} frames/s out, latency p50 "
        f"{med['p50']:.1f} ms, p99 {med['p99']:.1f} ms, swap stage p50 {med['swap_p50']:.1f} ms"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--size", default="640x480", help="frame size WxH")
    p.add_argument("--preset", default="lite", help="swap preset (default lite)")
    args = p.parse_args()
    w, h = (int(v) for v in args.size.lower().split("x"))
    one_run(30, True, 30, (w, h), args.preset)  # warm up imports and model loading
    for fps in (30, 60):
        runs = [one_run(args.frames, False, fps, (w, h), args.preset) for _ in range(args.runs)]
        report(f"{args.preset} {w}x{h} paced {fps} fps", runs)
    runs = [one_run(args.frames, True, 30, (w, h), args.preset) for _ in range(args.runs)]
    report(f"{args.preset} {w}x{h} unpaced lossless", runs)


if __name__ == "__main__":
    main()
