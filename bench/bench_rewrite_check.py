"""What the integrity check of the cached dynamic-batch rewrites adds to a model load: the
check of a cached rewrite (its record read, the file hashed) as at a new process start, per
model, median of N. Within a process the hash is remembered while the file is unchanged.

    .venv/bin/python bench/bench_rewrite_check.py [--repeats 21] [MODEL.onnx ...]

Without models: the lite preset's bundled slim-160 and MobileFaceNet. Also prints the
sha256 speed of this machine (MB/s over the largest file), to scale to larger models
(inswapper_128 is 554 MB, ArcFace w600k_r50 174 MB).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from timing import REPO, median_ms

import livecam.runtime.batch_rewrite as rewrites
from livecam.models.download import sha256_of
from livecam.models.manifest import FileHashes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    models = args.models or [
        REPO / "assets" / n for n in ("slim_160_latest.onnx", "mobilefacenet.onnx")
    ]
    with tempfile.TemporaryDirectory() as cache:
        for source in models:
            digest = sha256_of(source)
            cached = rewrites.make_dynamic_batch(source, cache, sha256=digest)  # built once
            if cached is None or cached == source:
                print(f"{source.name}: not rewritten (dynamic already, or refused)")
                continue

            def load(source: Path = source, digest: str = digest) -> None:
                rewrites._HASHES = FileHashes()  # as at a new process start
                rewrites.make_dynamic_batch(source, cache, sha256=digest)

            ms = median_ms(load, args.repeats)
            size = cached.stat().st_size / 1e6
            print(f"{source.name}: rewrite {size:.1f} MB, load check {ms:.2f} ms", end="")
            print(f" (median of {args.repeats})")
        largest = max(models, key=lambda p: p.stat().st_size)
        ms = median_ms(lambda: sha256_of(largest), args.repeats)
        speed = largest.stat().st_size / 1e3 / ms
        print(f"sha256: {speed:.0f} MB/s ({largest.name}, median of {args.repeats})")


if __name__ == "__main__":
    main()
