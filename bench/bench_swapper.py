"""Benchmark the inswapper part on the synthetic inswapper-architecture models: the
full-size one (~138.6M parameters, ~349 GFLOPs per face, like inswapper_128) and the
narrow one, at batch 1, 2, 4 and 8 faces (one real face per 640 px frame, all faces in one
``InSwapper.swap`` call: crop, normalise, one model call, decode). Prints parameters and
GFLOPs counted from each graph, then the median ms per batch and faces/s.

The full model (~554 MB) is written once to the cache folder and reused.

    python bench/bench_swapper.py [--out DIR] [--batches 1 2 4 8] [--runs 3]
                                  [--provider cpu] [--skip-full] [--pixel-boost 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import cv2
import numpy as np
import platformdirs
from timing import default_face

from livecam.benchmark import synthetic_models as sm
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.face.swap.neural import InSwapper
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.types import FaceWork, Frame, FrameContext


def portrait(path: Path, max_side: int = 640) -> Frame:
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        raise SystemExit(f"cannot read {path}")
    s = max_side / max(img.shape[:2])
    if s < 1:
        img = cv2.resize(img, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(img)


def model_file(folder: Path, width: int) -> Path:
    """The synthetic inswapper of ``width`` in ``folder``, written when missing."""
    path = folder / f"inswapper_like_w{width}_seed0.onnx"
    if path.is_file():
        print(f"reusing {path}")
    else:
        t = time.perf_counter()
        sm.inswapper_like(path, width=width)
        print(f"wrote {path} in {time.perf_counter() - t:.1f} s")
    return path


def bench(path: Path, args: argparse.Namespace, frame: Frame) -> None:
    stats = sm.model_stats(path)
    print(f"\n{path.name}: {stats} ({path.stat().st_size / 1e6:.0f} MB)")
    model = OnnxModel(path, RuntimeOptions(provider=args.provider), model_id=path.stem)
    print(f"  providers: requested {model.providers.requested}, used {model.providers.used}")
    swapper = InSwapper(model, pixel_boost=args.pixel_boost)
    face = YuNetDetector(bundled_yunet()).detect([FrameContext(frame)])[0][0]
    rng = np.random.default_rng(0)
    latent = swapper.latent_of(rng.standard_normal(512).astype(np.float32))
    print(f"  {'batch':>5} {'median ms':>10} {'ms/face':>8} {'faces/s':>8}")
    for n in args.batches:
        frames = [FrameContext(frame, seq=i) for i in range(n)]
        swapper.swap(frames, [FaceWork(i, i, face) for i in range(n)], [latent])  # warm-up
        times = []
        for _ in range(args.runs):
            works = [FaceWork(i, i, face) for i in range(n)]
            t = time.perf_counter()
            swapper.swap(frames, works, [latent])
            times.append((time.perf_counter() - t) * 1000)
        med = statistics.median(times)
        print(f"  {n:>5} {med:>10.1f} {med / n:>8.1f} {n * 1000 / med:>8.2f}", flush=True)
    swapper.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for the model files")
    parser.add_argument("--face", type=Path, default=None)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--provider", default="cpu")
    parser.add_argument("--pixel-boost", type=int, default=1)
    parser.add_argument("--narrow-width", type=int, default=128)
    parser.add_argument("--skip-full", action="store_true", help="only the narrow model")
    args = parser.parse_args()
    folder = args.out or Path(platformdirs.user_cache_dir("livecam")) / "synthetic"
    folder.mkdir(parents=True, exist_ok=True)
    frame = portrait(args.face or default_face())
    print(f"inswapper_128 full size by its graph: {sm.inswapper_stats()}")
    bench(model_file(folder, args.narrow_width), args, frame)
    if not args.skip_full:
        bench(model_file(folder, sm.FULL_WIDTH), args, frame)


if __name__ == "__main__":
    main()
