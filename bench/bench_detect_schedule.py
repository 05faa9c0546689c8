"""Live against lossless: does dropping camera frames make every frame a detection frame?

    python bench/bench_detect_schedule.py [--runs 3] [--frames 300] [--size 640x480]
        [--preset lite] [--source synthetic|VIDEO]

One face through the whole pipeline (null sink), unpaced, in two modes run back to back
(alternating, so a loaded machine slows both alike):

* live: the source delivers as fast as it can and the pipeline drops what it cannot take
  (``buffer.lossless`` off, the default batch);
* lossless, batch 1: every frame processed, one at a time.

The tracker runs its detector every ``swap.detect.detect_every`` frames it processes; when that
was counted in camera frames (``seq``), a live run that drops frames ran the detector on
nearly every frame and delivered less than the lossless run. Prints each run's frames/s
out and drops, the median of each mode and their ratio (goal >= 0.9). Source: the
synthetic face-motion clip (assets/astronaut.png moving like a head) or a video file.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from pipeline_run import run_to_end

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def settings(
    source: str, size: tuple[int, int], preset: str, frames: int, lossless: bool
) -> dict[str, Any]:
    src: dict[str, Any] = {"spec": source, "size": list(size), "unpaced": True}
    if source == "synthetic":
        src["face_motion"] = str(ASSETS / "astronaut.png")
    else:
        src["loop"] = True
    return {
        "source": src,
        "buffer": {"lossless": lossless, **({"batch_limit": 1} if lossless else {})},
        "output": {"sinks": ["null"]},
        "pipeline": {"stages": ["swap"]},
        "swap": {"face": str(ASSETS / "grace_hopper.jpg"), "preset": preset},
        "run": {"frames": frames},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--size", default="640x480")
    parser.add_argument("--preset", default="lite")
    parser.add_argument("--source", default="synthetic")
    args = parser.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    fps: dict[str, list[float]] = {"live": [], "lossless": []}
    for run in range(args.runs):
        for mode in ("live", "lossless"):
            cfg = settings(args.source, (w, h), args.preset, args.frames, mode == "lossless")
            r = run_to_end(cfg)
            fps[mode].append(r["fps_out"])
            print(
                f"run {run + 1} {mode:8s}: {r['fps_out']:6.1f} frames/s out, "
                f"{r['dropped']:.0f} dropped, swap stage p50 {r.get('swap_p50', 0.0):.1f} ms"
            )
    live, lossless = statistics.median(fps["live"]), statistics.median(fps["lossless"])
    print(
        f"{args.preset} {args.size} {args.source}: live {live:.1f} frames/s, lossless "
        f"batch 1 {lossless:.1f} frames/s, ratio {live / lossless:.2f} (goal >= 0.9)"
    )


if __name__ == "__main__":
    main()
