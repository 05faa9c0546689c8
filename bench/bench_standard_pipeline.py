"""The standard preset's pipeline against a naive loop, in one run (CPU figures here).

    python bench/bench_standard_pipeline.py [--frames 12] [--faces 4] [--runs 3]

Both run the same models on the same frames: SCRFD 2.5G (testdata), a 512-d recognizer
made from the real MobileFaceNet (``arcface_like``), the narrow synthetic inswapper
(``inswapper_like(width=128)``: inswapper's I/O, 3.8M parameters; never a quality figure),
insightface's paste-back. The frames are 1280x720 with ``--faces`` real portraits
composed side by side (faces ~12 % of the width).

* pipeline: LiveCam's swap stage, lossless batches of 4 frames: detection every 3rd frame
  with tracking between, the source latent computed once, every face of the batch in one
  swapper call, one paste per frame;
* naive: one face of one frame at a time (as the peers' loops): detect every frame, the
  source photo analysed and its latent computed again for every face, one swapper call
  per face, one paste per face; no caching, no IO binding. Also run with the source
  latent cached, to separate what batching and tracking bring.

Prints median ms per frame and frames/s of each, and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from scenes import PORTRAITS, background  # noqa: E402

from livecam.benchmark.naive import naive_loop  # noqa: E402
from livecam.benchmark.synthetic_models import arcface_like, inswapper_like  # noqa: E402
from livecam.config.schema import SwapConfig  # noqa: E402
from livecam.face.source.photo import SourceFaceCache  # noqa: E402
from livecam.face.swap_stage import FaceSwapStage, build_swap_stage  # noqa: E402
from livecam.models.store import ModelStore  # noqa: E402
from livecam.types import FrameContext, FramePacket  # noqa: E402
from livecam.userfiles.images import load_image_bgr  # noqa: E402

TESTDATA = REPO.parent / "shared" / "testdata"
SOURCE = REPO / "assets" / "grace_hopper.jpg"


def frames_with_faces(count: int, faces: int) -> list[np.ndarray]:
    """1280x720 frames with ``faces`` portraits side by side, shifted 2 px a frame."""
    backdrop = background(1280, 720)
    tiles = []
    for name in PORTRAITS[:faces]:
        image = load_image_bgr(TESTDATA / "faces" / name)
        scale = 300 / image.shape[0]
        tiles.append(cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA))
    out = []
    for i in range(count):
        frame = backdrop.copy()
        x = 20 + 2 * i
        for tile in tiles:
            h, w = tile.shape[:2]
            w = min(w, 1280 - x)
            frame[200 : 200 + h, x : x + w] = tile[:, :w]
            x += w + 10
        out.append(frame)
    return out


def build(folder: Path) -> FaceSwapStage:
    recognizer, swapper = folder / "arcface_like.onnx", folder / "narrow_inswapper.onnx"
    arcface_like(recognizer, TESTDATA / "models" / "mobilefacenet.onnx")
    inswapper_like(swapper, width=128)
    cfg = SwapConfig.of(
        preset="standard",
        provider="cpu",
        face=str(SOURCE),
        select="all",
        detector_model=str(TESTDATA / "models" / "scrfd_2.5g_kps.onnx"),
        recognizer_model=str(recognizer),
        swapper_model=str(swapper),
    )
    store = ModelStore(data_dir=folder / "data")
    return build_swap_stage(cfg, SourceFaceCache(folder / "faces"), store)


def pipeline_ms(stage: FaceSwapStage, frames: list[np.ndarray]) -> float:
    """ms per frame through the swap stage in lossless batches of 4."""
    stage._tracker.reset()
    start = time.perf_counter()
    for i in range(0, len(frames), 4):
        batch = [
            FramePacket(f.copy(), seq=i + j, t_capture_ns=(i + j) * 33_000_000)
            for j, f in enumerate(frames[i : i + 4])
        ]
        stage.process(batch)
    return (time.perf_counter() - start) * 1000 / len(frames)


def naive_ms(
    stage: FaceSwapStage, frames: list[np.ndarray], cached_source: bool = False
) -> tuple[float, int]:
    """ms per frame of the naive loop (``livecam.benchmark.naive``, the one `livecam bench
    --compare naive` runs) with the same parts, and the faces it swapped."""
    result = naive_loop(stage.parts, frames, SOURCE, cached_source=cached_source)
    return result.ms_per_frame, result.faces_swapped


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--frames", type=int, default=12)
    p.add_argument("--faces", type=int, default=4)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    frames = frames_with_faces(args.frames, args.faces)
    with tempfile.TemporaryDirectory() as tmp:
        stage = build(Path(tmp))
        stage.warmup(1280, 720)
        found = len(stage.parts.detector.detect([FrameContext(frames[0])])[0])
        print(f"{args.frames} frames 1280x720, {found} faces found per frame")
        pipe = [pipeline_ms(stage, frames) for _ in range(args.runs)]
        naive = [naive_ms(stage, frames) for _ in range(args.runs)]
        cached = [naive_ms(stage, frames, cached_source=True) for _ in range(args.runs)]
        stage.close()
    p_ms = statistics.median(pipe)
    n_ms = statistics.median(n for n, _ in naive)
    print(f"pipeline: median {p_ms:.1f} ms per frame ({1000 / p_ms:.1f} frames/s)")
    print(
        f"naive loop: median {n_ms:.1f} ms per frame ({1000 / n_ms:.1f} frames/s), "
        f"{naive[0][1] / args.frames:.1f} faces swapped per frame"
    )
    c_ms = statistics.median(c for c, _ in cached)
    print(f"naive loop with the source latent cached: median {c_ms:.1f} ms per frame")
    print(f"ratio: the pipeline is {n_ms / p_ms:.2f}x the naive loop's speed")
    print(f"ratio: the pipeline is {c_ms / p_ms:.2f}x the naive loop with a cached source")


if __name__ == "__main__":
    main()
