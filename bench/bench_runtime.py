"""Benchmark OnnxModel run paths on MobileFaceNet (fixed batch 1): plain ``run``, IO-binding
``run_bound``, ``run_batch`` (a loop of single calls for the fixed batch) and the verified
dynamic-batch rewrite (one call), at batch 1/4/8; plus the torch device ops at 1080p.
Prints medians (ms per batch) of several timed repeats after a warm-up.

    python bench/bench_runtime.py [--model PATH] [--provider cpu] [--repeats 30] [--threads 0]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from timing import median_ms

from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions

REPO = Path(__file__).resolve().parents[1]


def run_each(run: Callable[[Any], object], feeds: Sequence[Any]) -> list[object]:
    """``run`` on each of ``feeds`` in turn (one call per input)."""
    return [run(f) for f in feeds]


def default_model() -> Path:
    env = os.environ.get("LIVECAM_TESTDATA")
    roots = ([Path(env)] if env else []) + [p / "shared" / "testdata" for p in REPO.parents]
    for root in roots:
        path = root / "models" / "mobilefacenet.onnx"
        if path.is_file():
            return path
    raise SystemExit("mobilefacenet.onnx not found: pass --model PATH")


def bench_models(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as cache:
        options = RuntimeOptions(
            provider=args.provider, threads=args.threads, cache_dir=Path(cache)
        )
        fixed = OnnxModel(args.model, options)
        dynamic = OnnxModel(args.model, options, dynamic_batch=True)
        print(
            f"{args.model.name}: provider requested {fixed.providers.requested[0]}, used "
            f"{fixed.providers.used[0]}; dynamic-batch rewrite used: {dynamic.batch_rewritten}"
        )
        name = fixed.input_names[0]
        rng = np.random.default_rng(0)
        print(f"{'batch':>5} {'run loop':>9} {'bound loop':>11} {'run_batch':>10} {'dynamic':>8}")
        for n in (1, 4, 8):
            x = rng.uniform(-1, 1, (n, 3, 112, 112)).astype(np.float32)
            singles = [{name: x[i : i + 1]} for i in range(n)]
            feeds = {name: x}
            plain = median_ms(partial(run_each, fixed.run, singles), args.repeats)
            bound = median_ms(partial(run_each, fixed.run_bound, singles), args.repeats)
            looped = median_ms(partial(fixed.run_batch, feeds, [name]), args.repeats)
            one = median_ms(partial(dynamic.run_batch, feeds, [name]), args.repeats)
            print(f"{n:>5} {plain:>9.2f} {bound:>11.2f} {looped:>10.2f} {one:>8.2f}")


def bench_device_ops(repeats: int) -> None:
    from livecam.runtime import torch_ops as device

    if not device.torch_available():
        print("torch not installed: device ops skipped")
        return

    frame = np.random.default_rng(1).integers(0, 256, (1080, 1920, 3), np.uint8)
    tensor = device.frames_to_tensor([frame])
    affine = np.array([[0.5, 0.05, -300.0], [-0.05, 0.5, -100.0]], np.float32)
    for n in (1, 4, 8):
        affines = np.repeat(affine[None], n, axis=0)
        warp = median_ms(partial(device.warp_crops, tensor, affines, 128), repeats)
        crops = device.warp_crops(tensor, affines, 128)
        norm = median_ms(partial(device.normalise, crops, 127.5, 127.5), repeats)
        print(f"torch CPU, 1080p, {n} faces: warp_crops {warp:.2f} ms, normalise {norm:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--provider", default="cpu")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    args.model = args.model or default_model()
    bench_models(args)
    bench_device_ops(args.repeats)


if __name__ == "__main__":
    main()
