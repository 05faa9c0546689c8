"""Pass-through pipeline throughput and added latency on synthetic frames (no hardware).

    python bench/bench_pipeline.py [--size 1280x720] [--frames 1500] [--runs 5]

Prints frames/s and glass-to-glass latency p50/p99 (capture stamp to sink) for each run
and their medians. Target on a 2-core machine: >= 120 frames/s, p50 <= 5 ms, null sink.
"""

from __future__ import annotations

import argparse
import statistics

from pipeline_run import run_to_end


def one_run(size: tuple[int, int], frames: int, stages: tuple[str, ...]) -> dict[str, float]:
    return run_to_end(
        {
            "source": {"spec": "synthetic", "size": list(size), "unpaced": True},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": list(stages)},
            "run": {"frames": frames},
        }
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--size", default="1280x720")
    p.add_argument("--frames", type=int, default=1500)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    one_run((w, h), 100, ("passthrough",))  # warm caches and imports
    results = []
    for i in range(args.runs):
        r = one_run((w, h), args.frames, ("passthrough",))
        results.append(r)
        print(
            f"run {i + 1}: {r['fps_out']:7.1f} frames/s out, latency p50 {r['p50']:.2f} ms "
            f"p99 {r['p99']:.2f} ms, {r['frames_out']:.0f} out, {r['dropped']:.0f} dropped"
        )
    med = {k: statistics.median(r[k] for r in results) for k in ("fps_out", "p50", "p99")}
    print(
        f"median of {args.runs} runs at {w}x{h}, pass-through, null sink, unpaced: "
        f"{med['fps_out']:.1f} frames/s, added latency p50 {med['p50']:.2f} ms, "
        f"p99 {med['p99']:.2f} ms"
    )


if __name__ == "__main__":
    main()
