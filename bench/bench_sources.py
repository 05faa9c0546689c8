"""Frames per second of the synthetic sources at 1280x720 (median of 5 runs).

Usage: python bench/bench_sources.py [--frames N] [--portrait PATH]

Measures ``read()`` alone (no pacing): the test pattern, the same with a pixel time stamp,
and, with --portrait (default: the shared test portrait when present), the face-motion mode.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from livecam.config.schema import SourceConfig
from livecam.sources.synthetic.pattern import SyntheticSource

SIZE = (1280, 720)
RUNS = 5


def frames_per_second(cfg: SourceConfig, frames: int) -> list[float]:
    src = SyntheticSource(cfg)
    src.open()
    for _ in range(10):  # warm-up
        src.read()
    rates = []
    for _ in range(RUNS):
        start = time.perf_counter()
        for _ in range(frames):
            src.read()
        rates.append(frames / (time.perf_counter() - start))
    src.close()
    return rates


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    default_portrait = here.parent / "shared/testdata/faces/obama_official_portrait_2012.jpg"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=500)
    parser.add_argument("--portrait", type=Path, default=default_portrait)
    args = parser.parse_args()
    cases = {
        "synthetic pattern": SourceConfig(spec="synthetic", size=SIZE),
        "synthetic pattern + stamp": SourceConfig(spec="synthetic", size=SIZE, stamp=True),
    }
    if args.portrait.is_file():
        cases["synthetic face motion"] = SourceConfig(
            spec="synthetic", size=SIZE, face_motion=str(args.portrait)
        )
    print(f"{SIZE[0]}x{SIZE[1]}, {args.frames} frames per run, median of {RUNS} runs")
    for name, cfg in cases.items():
        rates = frames_per_second(cfg, args.frames)
        spread = f"min {min(rates):.0f}, max {max(rates):.0f}"
        print(f"{name:28s} {statistics.median(rates):8.0f} frames/s  ({spread})")


if __name__ == "__main__":
    main()
