"""Benchmark the swapper's NumPy path against its torch path (``pipeline.device_path``) on
the narrow synthetic inswapper: median ms of one ``InSwapper.swap`` call for 1 and 4
faces (one real face per 640 px frame, all in one call: crop, normalise, model, decode,
records as NumPy), with the largest output difference between the paths.

On CPU the torch path is plain torch; on a GPU machine ``--provider cuda`` runs the model on
CUDA and the torch path keeps crops, model input and output on the device (one upload per
frame, one download per batch; needs a CUDA build of torch).

    python bench/bench_device_path.py [--provider cpu|cuda] [--faces 1 4] [--runs 7]
                                      [--pixel-boost 1] [--width 128] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import platformdirs
from bench_swapper import default_face, model_file, portrait

from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.face.swap.neural import InSwapper
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions
from livecam.types import Face, FaceWork, Frame, FrameContext


def timed(
    swapper: InSwapper, frames: list[FrameContext], face: Face, latent: np.ndarray, runs: int
) -> tuple[float, list[FaceWork]]:
    """Median ms of ``runs`` swap calls (after one warm-up) and the last call's records."""
    works: list[FaceWork] = []
    swapper.swap(frames, [FaceWork(i, i, face) for i in range(len(frames))], [latent])
    times = []
    for _ in range(runs):
        works = [FaceWork(i, i, face) for i in range(len(frames))]
        t = time.perf_counter()
        swapper.swap(frames, works, [latent])
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), works


def bench(path: Path, args: argparse.Namespace, frame: Frame) -> None:
    model = OnnxModel(path, RuntimeOptions(provider=args.provider), model_id=path.stem)
    print(
        f"{path.name}: providers requested {model.providers.requested}, used "
        f"{model.providers.used}, tensors on {model.device}, pixel boost {args.pixel_boost}"
    )
    paths = {
        c: InSwapper(model, pixel_boost=args.pixel_boost, compute=c) for c in ("numpy", "torch")
    }
    face = YuNetDetector(bundled_yunet()).detect([FrameContext(frame)])[0][0]
    latent = paths["numpy"].latent_of(np.random.default_rng(0).standard_normal(512))
    print(f"  {'faces':>5} {'numpy ms':>9} {'torch ms':>9} {'ratio':>6} {'max diff':>8}")
    for n in args.faces:
        frames = [FrameContext(frame, seq=i) for i in range(n)]
        ref_ms, ref = timed(paths["numpy"], frames, face, latent, args.runs)
        dev_ms, dev = timed(paths["torch"], frames, face, latent, args.runs)
        diff = max(
            int(np.abs(a.output.astype(int) - b.output.astype(int)).max())
            for a, b in zip(ref, dev, strict=True)
            if a.output is not None and b.output is not None
        )
        print(
            f"  {n:>5} {ref_ms:>9.1f} {dev_ms:>9.1f} {ref_ms / dev_ms:>6.2f} {diff:>8}", flush=True
        )
    model.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="cpu")
    parser.add_argument("--faces", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--pixel-boost", type=int, default=1)
    parser.add_argument("--width", type=int, default=128, help="the synthetic model's width")
    parser.add_argument("--face", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="folder for the model file")
    args = parser.parse_args()
    folder = args.out or Path(platformdirs.user_cache_dir("livecam")) / "synthetic"
    folder.mkdir(parents=True, exist_ok=True)
    bench(model_file(folder, args.width), args, portrait(args.face or default_face()))


if __name__ == "__main__":
    main()
