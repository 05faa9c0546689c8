"""Does a source photo's glasses end up on the streamer? The dark thin lines where glasses
sit (``livecam.benchmark.live_face.glasses_lines``), output over camera, on each frame of a
talking-head clip swapped by the lite stage as live (tracking from the first frame), with
``swap.classic.drop_photo_glasses`` off and on.

    python bench/bench_photo_glasses.py [--clip s18] [--frames 60]
        [--source grace_hopper_navy_portrait.jpg]

A clip without glasses swapped with a photo without them reads about 1 (the camera's own
brows, lashes and creases); a photo's frames pasted on raise it (Grace Hopper's on s18:
about 2.3). Prints the mean, median and 95th percentile over the frames for each setting.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import av
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import find_testdata  # noqa: E402

from livecam.benchmark.live_face import glasses_lines  # noqa: E402
from livecam.config.schema import SwapConfig  # noqa: E402
from livecam.face.build import build_parts, photo_analyzer  # noqa: E402
from livecam.face.landmarks.measures import largest_face  # noqa: E402
from livecam.face.source.photo import SourceFaceCache  # noqa: E402
from livecam.face.swap_stage import build_swap_stage  # noqa: E402
from livecam.models.presets import PRESETS  # noqa: E402
from livecam.types import FramePacket  # noqa: E402


def ratios(testdata: Path, clip: str, source: str, frames: int, drop: bool) -> list[float]:
    """Per frame: the output's ``glasses_lines`` over the camera's."""
    cfg = SwapConfig(face=str(testdata / "faces" / source), preset="lite")
    cfg = cfg.changed(drop_photo_glasses=drop)
    analyzer = photo_analyzer(build_parts(PRESETS["lite"], SwapConfig()))
    stage = build_swap_stage(cfg, SourceFaceCache(None))
    out: list[float] = []
    try:
        with av.open(str(testdata / "video" / f"liveportrait_{clip}.mp4")) as container:
            for seq, frame in enumerate(container.decode(video=0)):
                if seq >= frames:
                    break
                camera = np.ascontiguousarray(frame.to_ndarray(format="bgr24"), np.uint8)
                packet = FramePacket(camera.copy(), seq=seq, t_capture_ns=seq * 33_333_333)
                (swapped,) = stage.process([packet])
                face = largest_face(analyzer.analyze(camera))
                if face is None or face.landmarks is None:
                    continue
                cam = glasses_lines(camera, face.landmarks)
                if cam > 0:
                    out.append(glasses_lines(swapped.frame, face.landmarks) / cam)
    finally:
        stage.close()
    return out


def main() -> int:
    testdata = find_testdata()
    if testdata is None:
        print("no test data: set LIVECAM_TESTDATA to the shared testdata folder")
        return 2
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clip", default="s18", help="liveportrait_CLIP.mp4 of the test data")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--source", default="grace_hopper_navy_portrait.jpg", help="of faces/")
    args = ap.parse_args()
    print(f"clip {args.clip}, source {args.source}, {args.frames} frames")
    print("drop_photo_glasses  frames  lines out/camera: mean  median  p95")
    for drop in (False, True):
        r = ratios(testdata, args.clip, args.source, args.frames, drop)
        p95 = float(np.percentile(r, 95)) if r else math.nan
        mean = statistics.fmean(r) if r else math.nan
        median = statistics.median(r) if r else math.nan
        print(f"{drop!s:18s}  {len(r):6d}  {mean:20.2f}  {median:6.2f}  {p95:4.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
