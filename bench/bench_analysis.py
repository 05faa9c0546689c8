"""Benchmark the lite preset's face analysis parts at 640x480 (YuNet live detector, slim-160
landmarks, MobileFaceNet embedding), and the per-frame cost of FaceTracker on a face-motion
clip. Prints medians of several runs. Frames are timed at 30 fps capture times.

    python bench/bench_analysis.py [--face PORTRAIT] [--frames 120] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from timing import default_face, median_ms

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from livecam.config.schema import SourceConfig, SwapConfig  # noqa: E402
from livecam.face.build import build_parts  # noqa: E402
from livecam.face.source.analysis import FaceAnalyzer  # noqa: E402
from livecam.face.track.tracking import FaceTracker  # noqa: E402
from livecam.models.presets import PRESETS  # noqa: E402
from livecam.sources.synthetic.pattern import SyntheticSource  # noqa: E402
from livecam.types import FaceWork, Frame, FrameContext  # noqa: E402


def clip(face: Path, frames: int) -> list[Frame]:
    src = SyntheticSource(SourceConfig(spec="synthetic", size=(640, 480), face_motion=str(face)))
    src.open()
    out = [src.render(i) for i in range(frames)]
    src.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--face", type=Path, default=None)
    ap.add_argument("--frames", type=int, default=120)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--detect-every", type=int, default=3)
    args = ap.parse_args()
    face = args.face or default_face()
    frames = clip(face, args.frames)
    parts = build_parts(PRESETS["lite"], SwapConfig.of(detect_size=400))
    analyzer = FaceAnalyzer(parts.detector, parts.landmarker, parts.recognizer)
    first = analyzer.analyze(frames[0], with_embedding=True)
    print(
        f"clip: {len(frames)} frames 640x480 from {face.name}; faces in frame 0: {len(first)}"
        + (f", width {first[0].width:.0f} px" if first else "")
    )
    det = analyzer.detector
    one = [FrameContext(frames[0])]
    print(f"YuNet detect (max_side 400)   : {median_ms(lambda: det.detect(one), 20):6.2f} ms")
    if first:
        lmk, enc = analyzer.landmarker, analyzer.recognizer
        assert lmk is not None
        work = [FaceWork(0, 0, first[0])]
        fit = median_ms(lambda: lmk.fit(one, work), 50)
        print(f"68-pt landmark fit (1 face)   : {fit:6.2f} ms")
        if enc is not None:
            embed = median_ms(lambda: enc.embed(one, work), 5)
            print(f"128-d MobileFaceNet (1 face)  : {embed:6.2f} ms")
    lmk_part = parts.landmarker
    assert lmk_part is not None
    for every, smoothing in [(1, 1.0), (args.detect_every, 0.0), (args.detect_every, 1.0)]:
        means, medians, p95s, counts = [], [], [], []
        for _ in range(args.runs):
            tracker = FaceTracker(
                analyzer.detector, lmk_part, detect_every=every, smoothing=smoothing
            )
            per = []
            found = 0
            for i, frame in enumerate(frames):
                t = time.perf_counter()
                found += len(tracker.update([FrameContext(frame, i, i / 30)])[0])
                per.append((time.perf_counter() - t) * 1000)
            means.append(float(np.mean(per)))
            medians.append(float(np.median(per)))
            p95s.append(float(np.percentile(per, 95)))
            counts.append(found / len(frames))
        print(
            f"tracker detect_every={every} smoothing={smoothing}: per frame mean "
            f"{statistics.median(means):.2f} ms, median {statistics.median(medians):.2f} ms, "
            f"p95 {statistics.median(p95s):.2f} ms (median of {args.runs} runs; "
            f"faces/frame {statistics.median(counts):.2f})"
        )


if __name__ == "__main__":
    main()
