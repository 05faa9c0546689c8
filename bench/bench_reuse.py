"""Swap reuse (``swap.reuse.reuse``) on a low-motion clip: frames/s with and without, and how
far the output with it strays from the output without it (CPU figures here).

    python bench/bench_reuse.py [--clip motion|video] [--frames 90] [--runs 3]
                                [--similarity 32] [--max-reuse 3]

The standard preset with the user's own model files, built by bench_standard_pipeline.py
(every face swapped): SCRFD 2.5G (testdata), a 512-d recognizer made from the real
MobileFaceNet (``arcface_like``), the narrow synthetic inswapper (``inswapper_like(width=128)``:
inswapper's I/O, 3.8M parameters; never a quality figure), insightface's paste-back,
detection every 3rd frame. Live-like: one frame per call, in order, the tracker reset
before each run.

Clips: ``motion`` (the low-motion clip) is the synthetic face-motion source
(``--face-motion`` with Obama's portrait: the head turns within ±6°, scales ±5 %, moves a
few % of the frame; 640x480); ``video`` is testdata's openmpf_video_01.mp4 (640x480, a
hand-held camera on five people, small faces: a harder case).

Prints the median ms per frame of each mode over ``--runs``, the fps ratio, the hit rate,
and the PSNR of each frame with reuse against the same frame without (whole frame, and
inside the pasted face region: the pixels the swap changed): median and worst frame.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from bench_standard_pipeline import TESTDATA, build

from livecam.config.schema import SourceConfig
from livecam.config.swap import ReuseSettings
from livecam.face.identity.metrics import psnr  # noqa: E402
from livecam.face.swap_stage import FaceSwapStage
from livecam.face.track.repeat import SwapReuse
from livecam.sources.synthetic.pattern import SyntheticSource
from livecam.types import FramePacket

VIDEO = TESTDATA / "video" / "openmpf_video_01.mp4"
PORTRAIT = TESTDATA / "faces" / "obama_official_portrait_2012.jpg"


def clip(kind: str, count: int) -> list[np.ndarray]:
    """``count`` BGR frames of the chosen clip."""
    if kind == "video":
        cap = cv2.VideoCapture(str(VIDEO))
        frames: list[np.ndarray] = []
        while len(frames) < count:
            ok, frame = cap.read()
            if not ok:
                break
            frames.append(np.ascontiguousarray(frame))
        cap.release()
        return frames
    source = SyntheticSource(
        SourceConfig(spec="synthetic", size=(640, 480), face_motion=str(PORTRAIT))
    )
    source.open()
    try:
        return [source.render(i) for i in range(count)]
    finally:
        source.close()


@dataclass
class Run:
    ms: float  # per frame
    outputs: list[np.ndarray]
    swapped: int
    reused: int


def run(stage: FaceSwapStage, frames: list[np.ndarray], reuse: SwapReuse | None) -> Run:
    """One pass over ``frames``, one frame per call, from a fresh tracker and cache."""
    stage._tracker.reset()
    if reuse is not None:
        reuse.clear()
    stage.repeats.reuse = reuse
    outputs, swapped, reused = [], 0, 0
    start = time.perf_counter()
    for seq, image in enumerate(frames):
        packet = FramePacket(image.copy(), seq=seq, t_capture_ns=seq * 33_366_667)
        stage.process([packet])
        outputs.append(packet.frame)
        swapped += packet.faces_swapped or 0
        reused += packet.faces_reused
    ms = (time.perf_counter() - start) * 1000 / len(frames)
    return Run(ms, outputs, swapped, reused)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--clip", choices=("motion", "video"), default="motion")
    p.add_argument("--frames", type=int, default=90)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--similarity", type=float, default=ReuseSettings.reuse_similarity)
    p.add_argument("--max-reuse", type=int, default=ReuseSettings.reuse_max)
    args = p.parse_args()
    frames = clip(args.clip, args.frames)
    print(" ".join(sys.argv))
    with tempfile.TemporaryDirectory() as tmp:
        stage = build(Path(tmp))
        assert SwapReuse.supports(stage.parts.swapper), "the narrow inswapper is reusable"
        reuse = SwapReuse(args.similarity, args.max_reuse)
        h, w = frames[0].shape[:2]
        stage.warmup(w, h)
        offs, ons = [], []
        for _ in range(args.runs):  # interleaved, so both modes see the same machine load
            offs.append(run(stage, frames, None))
            ons.append(run(stage, frames, reuse))
        stage.close()
    off_ms = statistics.median(r.ms for r in offs)
    on_ms = statistics.median(r.ms for r in ons)
    off, on = offs[0], ons[0]
    print(
        f"{len(frames)} frames {w}x{h} ({args.clip}), similarity {args.similarity:g} dB, "
        f"at most {args.max_reuse} reuses in a row, {args.runs} runs"
    )
    print(f"reuse off: median {off_ms:.1f} ms per frame ({1000 / off_ms:.1f} fps)")
    print(f"reuse on:  median {on_ms:.1f} ms per frame ({1000 / on_ms:.1f} fps)")
    print(f"fps ratio (on / off): {off_ms / on_ms:.2f}x")
    print(
        f"faces swapped {on.swapped} (off: {off.swapped}), reused {on.reused}: "
        f"hit rate {on.reused / max(on.swapped, 1):.0%}"
    )
    whole, face = [], []
    for base, a, b in zip(frames, off.outputs, on.outputs, strict=True):
        whole.append(psnr(a, b))
        region = np.any(a != base, axis=2) | np.any(b != base, axis=2)
        if region.any():
            face.append(psnr(a[region], b[region]))
    print(
        f"PSNR on vs off, whole frame: median {statistics.median(whole):.1f} dB, "
        f"worst {min(whole):.1f} dB"
    )
    if face:
        print(
            f"PSNR on vs off, pasted face region: median {statistics.median(face):.1f} dB, "
            f"worst {min(face):.1f} dB"
        )


if __name__ == "__main__":
    main()
