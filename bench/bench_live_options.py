"""The live pipeline (`livecam bench`'s run) with one config field set to each of several
values, alternating, several runs each: median frames/s out, glass-to-glass latency
p50/p99 and swap-stage ms per value, and each value's fps against the first's.

    LIVECAM_MODELS_DIR=../shared/testdata/models \\
    python bench/bench_live_options.py --vary swap.spin_wait=false,true \\
        [--preset standard --synthetic narrow] [--size 640x480] [--faces 1] [--frames 90]
        [--fps 30] [--mode live|throughput] [--runs 3] [--cache off|on]

Values are read as TOML scalars (``true``, ``4``, ``0.5``, anything else as text).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tomllib
from typing import Any, cast

from livecam.benchmark.command import frame_size
from livecam.benchmark.run import BenchOptions, run_bench
from livecam.benchmark.synthetic import SyntheticSize
from livecam.config.schema import Config
from livecam.errors import ConfigError, LivecamError, format_error
from livecam.runtime.providers import quiet_onnxruntime_logs


def parse_vary(text: str) -> tuple[str, str, list[Any]]:
    """``section.field=v1,v2`` -> (section, field, values), each value checked against the
    config (LivecamError naming the field)."""
    key, _, values = text.partition("=")
    section, _, name = key.partition(".")
    if not (section and name and values):
        raise ConfigError(f"--vary {text!r} is invalid", "write SECTION.FIELD=VALUE1,VALUE2")
    parsed = [_scalar(v) for v in values.split(",")]
    for value in parsed:
        try:
            Config().with_fields({key: value})
        except (AttributeError, TypeError):
            raise ConfigError(
                f"--vary: there is no config field {key!r}",
                "name a field of `livecam run --save-config`'s file, e.g. swap.spin_wait",
            ) from None
    return section, name, parsed


def _scalar(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vary", required=True, help="SECTION.FIELD=V1,V2[,...]")
    parser.add_argument("--preset", default="standard")
    parser.add_argument(
        "--synthetic",
        choices=("narrow", "full", "none"),
        help="standard preset: the synthetic swapper (default narrow; none for other presets)",
    )
    parser.add_argument("--size", type=frame_size, default=(640, 480), help="480p, 720p or WxH")
    parser.add_argument("--faces", type=int, choices=(1, 2, 4), default=1)
    parser.add_argument("--frames", type=int, default=90)
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--mode", choices=("live", "throughput"), default="live")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", choices=("on", "off"), default="off", help="swap.reuse.reuse")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    quiet_onnxruntime_logs()
    try:
        results, values, field = _measure(args)
    except LivecamError as e:
        print(format_error(e), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped (Ctrl-C)", file=sys.stderr)
        return 130
    _report(args, field, values, results)
    return 0


def _measure(args: argparse.Namespace) -> tuple[dict[int, list[dict[str, Any]]], list[Any], str]:
    """Every run, after every option was checked (nothing runs on a bad one)."""
    if args.runs < 1 or args.frames < 1:
        raise ConfigError("--runs and --frames must be at least 1", "use 1 or more")
    section, name, values = parse_vary(args.vary)
    chosen = args.synthetic or ("narrow" if args.preset == "standard" else "none")
    synthetic = cast("SyntheticSize | None", None if chosen == "none" else chosen)
    options = [
        BenchOptions(
            preset=args.preset,
            size=args.size,
            faces=args.faces,
            frames=args.frames,
            fps=args.fps,
            mode=args.mode,
            synthetic=synthetic,
            cache=args.cache == "on",
            overrides=((section, name, value),),
        )
        for value in values
    ]
    results: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(values))}
    for run in range(args.runs):
        for i, (value, opts) in enumerate(zip(values, options, strict=True)):
            results[i].append(run_bench(opts))
            print(f"run {run + 1}/{args.runs} {section}.{name}={value}: done", flush=True)
    return results, values, f"{section}.{name}"


def _report(
    args: argparse.Namespace, field: str, values: list[Any], results: dict[int, list[Any]]
) -> None:
    width, height = args.size
    print(
        f"\n{args.preset}, {width}x{height}, {args.faces} face(s), {args.mode}, "
        f"{args.frames} frames at {args.fps:g} fps, cache {args.cache}, {args.runs} runs"
    )
    print(f"{field:<24}{'fps out':>9}{'lat p50':>9}{'lat p99':>9}{'track p50':>11}{'swap p50':>10}")
    base_fps = statistics.median(r["fps_out"] for r in results[0])
    for i, value in enumerate(values):
        runs = results[i]
        fps = statistics.median(r["fps_out"] for r in runs)
        p50 = statistics.median(r["latency_ms"]["p50"] or 0.0 for r in runs)
        p99 = statistics.median(r["latency_ms"]["p99"] or 0.0 for r in runs)
        track, swap = (
            statistics.median(r["stages_ms"].get(n, {}).get("p50") or 0.0 for r in runs)
            for n in ("track", "swap")
        )
        ratio = fps / base_fps if base_fps else 0.0
        print(
            f"{value!s:<24}{fps:>9.1f}{p50:>9.1f}{p99:>9.1f}{track:>11.1f}{swap:>10.1f}"
            f"   x{ratio:.2f}"
        )


if __name__ == "__main__":
    sys.exit(main())
