"""Recall of the swap stage at webcam framing: is a face of a given size found and swapped?

    python bench/bench_recall.py [--sizes 640x480,1280x720,1920x1080] [--widths 8,10,...]
                                 [--detect-size PX] [--preset NAME] [--clip-frames 90]

Frames are composed from the single-face portraits of the test data (``tests/scenes.py``:
$LIVECAM_TESTDATA or ../shared/testdata) on a textured backdrop, the face at 8 ... 40 %
of the frame width (ear to ear), in four placements (centre; left tilted +8 deg; right
-8 deg; low +4 deg). Each frame goes alone through the real swap stage built with the
default options (source photo assets/grace_hopper.jpg), so the detector must find the
face on its own, as on the first frame after the face appears.

A face counts as found and swapped when the stage reports a face on it and changed more
than half of its inner-face pixels. Per resolution and width: recall, the median 68-point
landmark error of the found faces (/ inter-ocular distance) and the stage's median time on
such a frame. Per resolution, speed while tracking: a 90-frame clip of one face at 12 %
moving and tilting, processed in order as a live stream would be (the detector every
third frame): the detector's own median time, and the stage's median, mean and p90 per
frame, and how many clip frames were swapped.

Run it against another checkout (e.g. ``git worktree add /tmp/before HEAD~N``) with
``PYTHONPATH=/tmp/before python bench/bench_recall.py`` for a before/after comparison.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import find_testdata  # noqa: E402
from face_helpers import lite_analyzer  # noqa: E402
from scenes import (  # noqa: E402
    Portrait,
    Scene,
    background,
    compose,
    landmark_error,
    load_portraits,
    match,
    swapped_share,
)

from livecam.config.schema import SwapConfig  # noqa: E402
from livecam.face.source.photo import SourceFaceCache  # noqa: E402
from livecam.face.swap_stage import FaceSwapStage, build_swap_stage  # noqa: E402
from livecam.types import FrameContext, FramePacket  # noqa: E402

SOURCE = REPO / "assets" / "grace_hopper.jpg"
PLACEMENTS = (((0.5, 0.45), 0.0), ((0.3, 0.4), 8.0), ((0.7, 0.55), -8.0), ((0.45, 0.6), 4.0))


def size_arg(text: str) -> tuple[int, int]:
    w, h = text.lower().split("x")
    return int(w), int(h)


def is_swapped(scene: Scene, packet: FramePacket) -> bool:
    """The stage reported a face on the scene's face and changed most of its pixels."""
    return match(scene, packet.faces) is not None and swapped_share(scene, packet.frame) > 0.5


def run_one(stage: FaceSwapStage, scene: Scene) -> tuple[bool, float | None, float]:
    """(found and swapped, landmark error of the found face, stage ms) on one fresh frame
    (seq 0 restarts the tracker, so the detector runs)."""
    packet = FramePacket(scene.frame, seq=0, t_capture_ns=0)
    t0 = time.perf_counter()
    stage.process([packet])
    ms = (time.perf_counter() - t0) * 1000
    face = match(scene, packet.faces)
    ok = is_swapped(scene, packet)
    err = landmark_error(scene, face.landmarks) if face and face.landmarks is not None else None
    return ok, err, ms


def clip(portrait: Portrait, size: tuple[int, int], frames: int) -> list[Scene]:
    """One face at 12 % moving sideways and tilting (a head on a webcam)."""
    backdrop = background(*size, seed=7)
    out = []
    for i in range(frames):
        p = 2 * math.pi * i / 60
        centre = (0.5 + 0.08 * math.sin(p), 0.45 + 0.03 * math.sin(2 * p))
        out.append(compose(portrait, backdrop, 0.12, centre, 5 * math.sin(1.5 * p)))
    return out


def speed(stage: FaceSwapStage, scenes: list[Scene]) -> str:
    """Detector and per-frame stage times while tracking a clip in order, at 30 fps."""
    det = stage.parts.detector
    one = [FrameContext(scenes[0].frame)]
    det_ms = []
    for _ in range(15):
        t0 = time.perf_counter()
        det.detect(one)
        det_ms.append((time.perf_counter() - t0) * 1000)
    stage.warmup(*scenes[0].frame.shape[1::-1])  # forget the tracks of earlier frames
    times, swapped = [], 0
    for i, scene in enumerate(scenes):
        packet = FramePacket(scene.frame, seq=i + 1, t_capture_ns=round((i + 1) * 1e9 / 30))
        t0 = time.perf_counter()
        stage.process([packet])
        times.append((time.perf_counter() - t0) * 1000)
        swapped += is_swapped(scene, packet)
    return (
        f"detector {statistics.median(det_ms):5.1f} ms | stage per frame median "
        f"{statistics.median(times):5.1f} ms, mean {statistics.mean(times):5.1f}, p90 "
        f"{np.percentile(times, 90):5.1f} | swapped {swapped}/{len(scenes)} clip frames"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="640x480,1280x720,1920x1080")
    ap.add_argument("--widths", default="8,10,12,15,20,30,40", help="face width, %% of frame")
    ap.add_argument("--detect-size", type=int, default=None, help="default: the config's")
    ap.add_argument("--preset", default=None, help="default: the config's")
    ap.add_argument("--clip-frames", type=int, default=90)
    args = ap.parse_args()
    testdata = find_testdata()
    if testdata is None:
        print("no test data: set LIVECAM_TESTDATA or put it in ../shared/testdata", file=sys.stderr)
        return 2
    portraits = load_portraits(testdata / "faces", lite_analyzer(with_encoder=False))
    overrides = {"detect_size": args.detect_size, "preset": args.preset}
    cfg = SwapConfig.of(face=str(SOURCE), **{k: v for k, v in overrides.items() if v is not None})
    stage = build_swap_stage(cfg, SourceFaceCache(None))
    widths = [float(w) for w in args.widths.split(",")]
    print(
        f"livecam from {Path(sys.modules['livecam'].__file__ or '').parent}; preset "
        f"{stage.preset}, detector {stage.parts.detector.model_id}, detect_every "
        f"{cfg.detect.detect_every}; {len(portraits)} portraits x {len(PLACEMENTS)} placements"
    )
    header = ("frame", 9), ("width", 5), ("face px", 7), ("recall", 7), ("lmk err", 7), ("ms", 6)
    print("\n" + " ".join(f"{name:>{n}}" for name, n in header))
    summary = []
    for size in (size_arg(s) for s in args.sizes.split(",")):
        stage.warmup(*size)
        backdrops = [background(*size, seed=k) for k in range(len(PLACEMENTS))]
        for width in widths:
            results = [
                run_one(stage, compose(p, backdrops[k], width / 100, centre, angle))
                for p in portraits
                for k, (centre, angle) in enumerate(PLACEMENTS)
            ]
            hits = sum(ok for ok, _, _ in results)
            errs = [e for _, e, _ in results if e is not None]
            err = f"{statistics.median(errs):7.3f}" if errs else f"{'-':>7}"
            ms = statistics.median(t for _, _, t in results)
            print(
                f"{size[0]:>4}x{size[1]:<4} {width:4.0f}% {size[0] * width / 100:7.0f} "
                f"{hits:>3}/{len(results):<3} {err} {ms:6.1f}"
            )
        figures = speed(stage, clip(portraits[0], size, args.clip_frames))
        summary.append(f"{size[0]}x{size[1]}: {figures}")
    print(f"\nspeed while tracking one face at 12 % ({portraits[0].name}), in order at 30 fps:")
    print("\n".join(summary))
    stage.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
