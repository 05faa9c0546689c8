"""`livecam bench`: its options, the table it prints and the JSON it writes."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any, get_args

from livecam.benchmark.run import NAIVE_FRAMES, BenchOptions, Mode, run_bench
from livecam.benchmark.synthetic import SyntheticSize
from livecam.config.option_map import as_option_error
from livecam.config.schema import MemoryStrategy, Provider, SourceConfig, field_choices
from livecam.errors import ConfigError
from livecam.userfiles import check_output_path, write_atomically

SIZES = {"480p": (640, 480), "720p": (1280, 720), "1080p": (1920, 1080)}
MODEL_ROLES = ("detector", "recognizer", "swapper", "enhancer")


def frame_size(text: str) -> tuple[int, int]:
    """480p, 720p, 1080p or WxH."""
    key = text.strip().lower()
    if key in SIZES:
        return SIZES[key]
    match = re.fullmatch(r"(\d+)x(\d+)", key)
    if match is None:
        raise argparse.ArgumentTypeError(f"size must be 480p, 720p, 1080p or WxH, got {text!r}")
    return int(match[1]), int(match[2])


def on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")
    return text == "on"


def add_bench_command(sub: Any) -> None:
    """Register `livecam bench` on the CLI's subparsers."""
    bench = sub.add_parser(
        "bench",
        help="measure the live pipeline: fps, latency, faces/s, memory (or vs a naive loop)",
        description="Run the live pipeline on a synthetic clip (or a video file) into a null "
        "sink and print fps, glass-to-glass latency, stage times, faces/s, peak memory and "
        "the provider used.",
    )
    add_bench_options(bench, list(field_choices("swap.preset")))
    bench.set_defaults(func=cmd_bench)


def add_bench_options(p: argparse.ArgumentParser, presets: list[str]) -> None:
    """The options of `livecam bench`."""
    p.add_argument("--preset", choices=presets, help="model set (default lite)")
    p.add_argument("--size", type=frame_size, default=(640, 480), metavar="480p|720p|1080p|WxH")
    p.add_argument(
        "--faces", type=int, choices=(1, 2, 4), help="faces in the synthetic clip (default 1)"
    )
    p.add_argument("--frames", type=int, default=150, metavar="N", help="frames captured")
    p.add_argument("--fps", type=float, help="live mode: the source's rate (default 30)")
    p.add_argument(
        "--mode",
        choices=get_args(Mode),
        default="live",
        help="live: paced source, the newest frame wins (latency is a live figure); "
        "throughput: unpaced and lossless, --batch frames per call (the ceiling)",
    )
    p.add_argument(
        "--batch", type=int, metavar="N", help="throughput: frames per call at most (default 4)"
    )
    p.add_argument("--fp16", type=on_off, metavar="on|off", help="the fp16 or fp32 swapper file")
    p.add_argument(
        "--cache",
        type=on_off,
        metavar="on|off",
        help="reuse the swapped face between similar frames (swap.reuse)",
    )
    p.add_argument(
        "--overlap",
        type=on_off,
        metavar="on|off",
        help="track the next frame while this one is swapped (pipeline.overlap; default: "
        "on when a model runs on a GPU)",
    )
    p.add_argument(
        "--opencv-threads",
        type=int,
        metavar="N",
        help="threads OpenCV's own operations may use (pipeline.opencv_threads; default: 1 "
        "when every model runs on the CPU)",
    )
    p.add_argument(
        "--memory",
        choices=get_args(MemoryStrategy),
        help="low: exact-size CUDA arena capped per session, one face per swapper call; "
        "balanced (default): ONNX Runtime's arenas, 4 faces per call; high: 8 faces per call",
    )
    p.add_argument("--provider", choices=get_args(Provider), default="auto")
    p.add_argument("--source", metavar="VIDEO", help="a video file instead of the synthetic clip")
    p.add_argument(
        "--compare",
        choices=("naive",),
        help="also run the same models in a naive loop (one face at a time, no caching)",
    )
    p.add_argument(
        "--naive-frames",
        type=int,
        metavar="N",
        help=f"--compare naive: frames of the naive loop (default {NAIVE_FRAMES})",
    )
    p.add_argument(
        "--synthetic",
        choices=get_args(SyntheticSize),
        help="standard preset with models built here: SCRFD 2.5G, arcface_like and a "
        "narrow or full-size synthetic inswapper (speed only; built once, cached)",
    )
    p.add_argument("--synthetic-dir", type=Path, metavar="DIR", help="where they are built")
    for role in MODEL_ROLES:
        p.add_argument(f"--{role}-model", metavar="PATH", help=f"your own {role} ONNX file")
    p.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")


def options_from_args(args: argparse.Namespace) -> BenchOptions:
    """The bench options of a parsed command line (ConfigError on a bad combination or an
    option that would have no effect)."""
    preset = args.preset or ("standard" if args.synthetic else "lite")
    if args.synthetic and preset != "standard":
        raise ConfigError(
            f"--synthetic builds the standard preset's models, not {preset}'s",
            "leave --preset out or use --preset standard",
        )
    unused = (
        ("--naive-frames", args.naive_frames, args.compare != "naive", "--compare naive"),
        ("--faces", args.faces, args.source is not None, "the synthetic clip (no --source)"),
        ("--fps", args.fps, args.mode == "throughput", "--mode live"),
        ("--batch", args.batch, args.mode == "live", "--mode throughput"),
    )
    for name, value, ignored, needs in unused:
        if value is not None and ignored:
            raise ConfigError(f"{name} applies only with {needs}", f"leave out {name}")
    frames, batch = args.frames, 4 if args.batch is None else args.batch
    naive_frames = NAIVE_FRAMES if args.naive_frames is None else args.naive_frames
    for name, value in (("--frames", frames), ("--batch", batch), ("--naive-frames", naive_frames)):
        if value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value}", f"use {name} 1 or more")
    fps = 30.0 if args.fps is None else args.fps
    _check_source(args.size, fps)
    models = tuple(
        (f"{role}_model", str(getattr(args, f"{role}_model")))
        for role in MODEL_ROLES
        if getattr(args, f"{role}_model")
    )
    return BenchOptions(
        preset=preset,
        size=args.size,
        faces=args.faces or 1,
        frames=frames,
        fps=fps,
        mode=args.mode,
        batch=batch,
        fp16=args.fp16,
        cache=args.cache,
        overlap=args.overlap,
        opencv_threads=args.opencv_threads,
        memory=args.memory,
        provider=args.provider,
        source=args.source,
        compare_naive=args.compare == "naive",
        naive_frames=naive_frames,
        synthetic=args.synthetic,
        synthetic_dir=args.synthetic_dir,
        models=models,
    )


def _check_source(size: tuple[int, int], fps: float) -> None:
    """The synthetic source's own checks of ``--size`` and ``--fps``, naming the option."""
    try:
        SourceConfig(spec="synthetic", size=size, fps=fps)
    except ConfigError as e:
        raise as_option_error(e, {"source.size": size, "source.fps": fps}) from None


def _ms(value: Any) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def format_table(r: dict[str, Any]) -> str:
    """The figures as an aligned two-column table."""
    lat = r["latency_ms"]
    w, h = r["size"]
    vram = r["peak_vram_mb"]
    rows = [
        ("preset / provider", f"{r['preset']} / {r['provider']}"),
        ("clip", f"{r['source']}, {w}x{h}, {r['frames_captured']} frames, {r['mode']} mode"),
        ("swapper / fp16 / cache", f"{r['swapper']} / {r['fp16'] or 'n/a'} / {r['cache']}"),
        ("reused faces", f"{r['faces_reused']} ({r['reuse_hit_rate']:.0%} of those swapped)"),
        (
            "overlap / memory / OpenCV threads",
            f"{'on' if r['overlap'] else 'off'} / {r['memory']} / {r['opencv_threads']}",
        ),
        ("fps out", f"{r['fps_out']:.1f} ({r['frames_out']} frames, {r['dropped']} dropped)"),
        (
            "latency p50 / p99",
            f"{_ms(lat['p50'])} / {_ms(lat['p99'])} ms (from {lat['from']}, "
            f"{r['stamps_decoded']} decoded)",
        ),
        *(
            (f"stage {n} p50 / p99", f"{_ms(p['p50'])} / {_ms(p['p99'])} ms")
            for n, p in r["stages_ms"].items()
        ),
        *(
            (
                "stage watermark p50 / p99",
                f"{mark['p50']:.2f} / {mark['p99']:.2f} ms (output thread's embed, timed "
                f"after the run on {mark['frames']} frames of {w}x{h})",
            )
            for mark in [r.get("watermark_ms")]
            if mark
        ),
        ("processing mean", f"{_ms(r['processing_ms_mean'])} ms per frame"),
        ("faces/s", f"{r['faces_per_s']:.1f} ({r['faces_per_frame']:.2f} per frame)"),
        ("peak RSS", f"{r['peak_rss_mb']:.0f} MB"),
        ("peak VRAM", vram if isinstance(vram, str) else f"{vram:.0f} MB ({r['vram_scope']})"),
    ]
    naive = r.get("naive")
    if naive:
        rows.append(
            (
                "naive loop",
                f"{naive['ms_per_frame']:.1f} ms per frame, {naive['fps']:.1f} fps, "
                f"{naive['faces_per_s']:.1f} faces/s ({naive['frames']} frames)",
            )
        )
        rows.append(("pipeline / naive", f"{naive['ratio']}x ({naive['ratio_basis']})"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def cmd_bench(args: argparse.Namespace) -> int:
    """Run `livecam bench`; 0 when frames came out."""
    opts = options_from_args(args)
    if args.json:
        check_output_path(args.json, "--json")
    figures = run_bench(opts)
    print(format_table(figures))
    if args.json:
        data = (json.dumps(figures, indent=2) + "\n").encode()
        written = write_atomically(args.json, data, overwrite=args.overwrite)
        print(f"wrote {written}")
    return 0 if figures["frames_out"] > 0 else 1
