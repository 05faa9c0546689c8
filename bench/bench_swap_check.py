"""What the live swap check costs (``livecam.face.identity.swap_check``): the lite preset's
swap stage on the synthetic moving astronaut (640x480, Grace Hopper's face, one frame per
call at 30 fps of frame time), with the check on and off in alternating runs, and the
check's own two calls timed alone.

    python bench/bench_swap_check.py [--frames 90] [--runs 3] [--models DIR]

Prints the median ms per frame of the stage with and without the check (the check runs on
its own thread about once a second of frame time, so the difference is the thread's share
of the CPU, not a wait), the median ms of one ``measure`` (two crops embedded by the
preset's MobileFaceNet, on the check's thread) and of one ``offer`` that is not due (what
the inference thread pays on most frames). Lite models: ``--models`` (default
``$LIVECAM_MODELS_DIR``, else the bundled ones).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from timing import REPO, median_ms

from livecam.config.schema import SourceConfig, SwapConfig
from livecam.face.source.photo import SourceFaceCache
from livecam.face.swap_stage import FaceSwapStage, build_swap_stage
from livecam.models.store import ModelStore
from livecam.sources.synthetic.pattern import SyntheticSource
from livecam.types import FaceWork, Frame, FrameContext, FramePacket

ASSETS = REPO / "assets"


def stage_ms(stage: FaceSwapStage, frames: list[Frame]) -> float:
    """The median ms of ``stage.process`` per frame over the clip (the tracker reset)."""
    stage.warmup(640, 480)
    times = []
    for i, frame in enumerate(frames):
        packet = FramePacket(frame, seq=i, t_capture_ns=int(i * 1e9 / 30))
        t0 = time.perf_counter()
        stage.process([packet])
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times[3:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=90)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--models", type=Path, help="folder with the lite preset's ONNX files")
    args = p.parse_args()
    cfg = SwapConfig.of(preset="lite", provider="cpu", face=str(ASSETS / "grace_hopper.jpg"))
    with tempfile.TemporaryDirectory() as tmp:
        store = ModelStore(models_dir=args.models, data_dir=Path(tmp) / "data")
        stage = build_swap_stage(cfg, SourceFaceCache(Path(tmp) / "faces"), store=store)
        source = SyntheticSource(
            SourceConfig(
                spec="synthetic", face_motion=str(ASSETS / "astronaut.png"), size=(640, 480)
            )
        )
        source.open()
        frames = [source.render(i) for i in range(args.frames)]
        check = stage.check
        assert check is not None
        on, off = [], []
        try:
            for _ in range(args.runs):
                stage.check = check
                on.append(stage_ms(stage, frames))
                assert check.wait_idle(30)
                stage.check = None
                off.append(stage_ms(stage, frames))
            stage.check = check
            packet = FramePacket(frames[0].copy(), seq=10**6, t_capture_ns=0)
            stage.process([packet])
            face = max(packet.faces, key=lambda f: f.area)
            measure = median_ms(lambda: check.measure(frames[0], packet.frame, face), 30, 3)
            check.wait_idle(30)
            ctx, done = [FrameContext(frames[0], 0, -1.0)], [FaceWork(0, 0, face)]
            check.offer([FrameContext(frames[0], 0, 0.0)], [packet.frame], done)  # due: sampled
            check.wait_idle(30)
            offer = median_ms(lambda: check.offer(ctx, [packet.frame], done), 2000, 10)
        finally:
            stage.close()
    print(f"lite swap stage, 640x480, {args.frames} frames x {args.runs} runs (medians, ms/frame)")
    print(f"  check on : {statistics.median(on):7.2f}   runs {', '.join(f'{v:.2f}' for v in on)}")
    print(f"  check off: {statistics.median(off):7.2f}   runs {', '.join(f'{v:.2f}' for v in off)}")
    print(f"  measure (check thread, once a second): {measure:.2f} ms")
    print(f"  offer not due (inference thread, most frames): {offer * 1000:.2f} us")


if __name__ == "__main__":
    main()
