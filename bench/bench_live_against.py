"""`livecam bench` of this checkout and another, alternately: frames/s out and the track and
swap stages' p50 per run, their medians, and the median of the paired fps ratios.

    python bench/bench_live_against.py --against /path/to/checkout [--rounds 6]
        [--faces 1] [--size 720p] [--fps 60] [--frames 600] [-- MORE BENCH ARGS]

Each run is a child process (``python -m livecam bench --preset lite ... --json``) with
``PYTHONPATH`` set to its checkout; the order alternates A B, B A, ... so that a machine
slowing down or speeding up over the minutes weighs on both alike. The machine's speed
drifts: compare the two checkouts within one run of this script, not figures of two runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def bench_once(checkout: Path, args: argparse.Namespace, extra: list[str]) -> dict[str, Any]:
    """One `livecam bench` of ``checkout``: its JSON figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        cmd = [sys.executable, "-m", "livecam", "bench", "--preset", args.preset]
        cmd += ["--size", args.size, "--fps", str(args.fps), "--frames", str(args.frames)]
        cmd += ["--faces", str(args.faces), "--json", str(out), *extra]
        env = dict(os.environ, PYTHONPATH=str(checkout))
        done = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
        if done.returncode != 0 or not out.exists():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            sys.exit(f"{checkout}: livecam bench failed: {last}")
        figures: dict[str, Any] = json.loads(out.read_text())
        return figures


def stage_p50(figures: dict[str, Any], name: str) -> float:
    stage = figures["stages_ms"].get(name)
    return float(stage["p50"]) if stage else float("nan")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--against", type=Path, required=True, help="the other checkout (run first)")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--preset", default="lite")
    p.add_argument("--faces", type=int, choices=(1, 2, 4), default=1)
    p.add_argument("--size", default="720p")
    p.add_argument("--fps", type=float, default=60.0)
    p.add_argument("--frames", type=int, default=600)
    args = p.parse_args(argv)
    if not (args.against / "livecam").is_dir():
        sys.exit(f"--against {args.against}: not a LiveCam checkout (no livecam/ in it)")
    checkouts = [args.against.resolve(), REPO]
    runs: dict[Path, list[dict[str, Any]]] = {c: [] for c in checkouts}
    for r in range(args.rounds):
        for c in checkouts if r % 2 == 0 else checkouts[::-1]:
            fig = bench_once(c, args, extra)
            runs[c].append(fig)
            print(
                f"round {r + 1} {c}: fps out {fig['fps_out']:.1f}, track p50 "
                f"{stage_p50(fig, 'track'):.1f} ms, swap p50 {stage_p50(fig, 'swap'):.1f} ms",
                flush=True,
            )
    print(f"\nmedians over {args.rounds} runs ({args.faces} face(s), {args.size}, {args.fps} fps)")
    for c in checkouts:
        figs = runs[c]
        fps = statistics.median(f["fps_out"] for f in figs)
        track = statistics.median(stage_p50(f, "track") for f in figs)
        swap = statistics.median(stage_p50(f, "swap") for f in figs)
        print(
            f"{str(c):>40}: fps out {fps:5.1f}  track p50 {track:5.1f} ms  swap p50 {swap:5.1f} ms"
        )
    ratios = [
        b["fps_out"] / a["fps_out"] for a, b in zip(*runs.values(), strict=True) if a["fps_out"]
    ]
    ratio = statistics.median(ratios)
    print(f"fps out, this checkout / the other, paired by round: median {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
