"""One `livecam bench` run: the live pipeline on a synthetic (or video file) source into a
stamp-reading null sink, optionally the naive loop with the same models first; returns
the figures as a JSON-ready dict."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import cv2

from livecam import __version__
from livecam.app import App, build_stages
from livecam.benchmark.measure import PeakSampler, StageTimes, StampSink, watermark_ms
from livecam.benchmark.naive import NaiveResult, naive_loop
from livecam.benchmark.synthetic import SyntheticSize, require_present, synthetic_models
from livecam.config.schema import Config, SwapConfig
from livecam.errors import ConfigError
from livecam.face.source.photo import SourceFaceCache
from livecam.face.swap_stage import FaceSwapStage
from livecam.models.presets import resolve_preset
from livecam.models.store import ModelStore
from livecam.sources.synthetic.multi_face import portrait_grid
from livecam.sources.synthetic.pattern import SyntheticSource
from livecam.sources.synthetic.portraits import demo_portraits
from livecam.telemetry.snapshot import Snapshot
from livecam.types import Frame

log = logging.getLogger(__name__)

Mode = Literal["live", "throughput"]
FP16_PAIRS = {"inswapper-128": "inswapper-128-fp16", "inswapper-128-fp16": "inswapper-128"}
NAIVE_FRAMES = 30  # the naive loop's frames at most (it is slow by design)
WATERMARK_FRAMES = 20  # frames the invisible mark's cost is timed on (5 passes each)


@dataclass(frozen=True)
class BenchOptions:
    """What to run (the `livecam bench` options)."""

    preset: str = "lite"
    size: tuple[int, int] = (640, 480)
    faces: int = 1
    frames: int = 150
    fps: float = 30.0
    mode: Mode = "live"
    batch: int = 4
    fp16: bool | None = None  # None: the preset's own swapper file
    cache: bool | None = None  # swap.reuse: reuse the swapped face (None: as configured)
    overlap: bool | None = None  # pipeline.overlap (None: as configured)
    opencv_threads: int | None = None  # pipeline.opencv_threads (None: as configured)
    memory: str | None = None  # swap.memory (None: as configured)
    provider: str = "auto"
    source: str | None = None  # a video file instead of the synthetic clip
    compare_naive: bool = False
    naive_frames: int = NAIVE_FRAMES
    synthetic: SyntheticSize | None = None
    synthetic_dir: Path | None = None
    models: tuple[tuple[str, str], ...] = ()  # (swap field, path): --*-model files
    overrides: tuple[tuple[str, str, Any], ...] = ()  # (section, field, value): bench scripts


def _swapper_choice(opts: BenchOptions, models: dict[str, str]) -> str | None:
    """``swap.neural.swapper`` for ``--fp16`` (None: the preset's); ConfigError when the preset's
    swapper has no fp16 twin."""
    if opts.fp16 is None or "swapper_model" in models:
        return None  # a file of the user's (or the synthetic one, built in fp16 or not)
    row = resolve_preset(opts.preset)
    if row.swapper not in FP16_PAIRS:
        raise ConfigError(
            f"--fp16: preset {row.name}'s swapper {row.swapper} has no fp16 and fp32 files",
            "leave --fp16 out, or use --preset standard",
        )
    return "inswapper-128-fp16" if opts.fp16 else "inswapper-128"


def bench_config(opts: BenchOptions, face: Path, motion: Path | None) -> Config:
    """The pipeline config of a bench run (``motion``: the synthetic clip's portrait)."""
    models = dict(opts.models)
    if opts.synthetic is not None:
        fp16 = bool(opts.fp16)
        built = synthetic_models(opts.synthetic, fp16, ModelStore(), opts.synthetic_dir)
        models = {**built, **models}
    throughput = opts.mode == "throughput"
    swap: dict[str, Any] = {
        "face": str(face),
        "preset": opts.preset,
        "select": "all",
        "provider": opts.provider,
        **models,
    }
    swapper = _swapper_choice(opts, models)
    if swapper is not None:
        swap["swapper"] = swapper
    if opts.cache is not None:
        swap["reuse"] = opts.cache
    if opts.memory is not None:
        swap["memory"] = opts.memory
    source: dict[str, Any] = {"fps": opts.fps, "unpaced": throughput, "size": list(opts.size)}
    if motion is not None:
        source.update(spec="synthetic", face_motion=str(motion), stamp=True)
    else:
        assert opts.source is not None
        source["spec"] = opts.source
    cfg = Config.from_dict(
        {
            "source": source,
            "buffer": {
                "lossless": throughput,
                "batch_limit": opts.batch,
                "capacity": max(8, opts.batch),
            },
            "output": {"sinks": ["null"]},
            "pipeline": {
                "stages": ["swap"],
                "overlap": opts.overlap,
                "opencv_threads": opts.opencv_threads,
            },
            "swap": SwapConfig.of(**swap),
            "run": {"frames": opts.frames},
        }
    )
    for section, name, value in opts.overrides:
        cfg = cfg.with_fields({f"{section}.{name}": value})
    return cfg


@contextlib.contextmanager
def _scene(opts: BenchOptions, tmp: Path) -> Iterator[tuple[Path, Path | None]]:
    """(source face photo, synthetic clip portrait or None for a video file)."""
    with demo_portraits() as (face, target):
        if opts.source is not None:
            yield face, None
        elif opts.faces == 1:
            yield face, target
        else:
            grid = portrait_grid([target, face], opts.faces, opts.size)
            path = tmp / f"faces{opts.faces}.png"
            cv2.imwrite(str(path), grid)
            yield face, path


def _check_models(cfg: Config, store: ModelStore) -> None:
    """The usual ModelError when the preset's manifest models are not on this machine."""
    row = resolve_preset(cfg.swap.preset, store, cfg.swap)
    require_present(store, row.model_names(cfg.swap))


def _naive_frames(cfg: Config, count: int) -> list[Frame]:
    source = SyntheticSource(dataclasses.replace(cfg.source, stamp=False))
    source.open()
    try:
        return [source.render(i) for i in range(count)]
    finally:
        source.close()


def run_bench(opts: BenchOptions) -> dict[str, Any]:
    """Run the bench and return its figures (``_figures``; ``command.format_table``
    prints them)."""
    if opts.compare_naive and opts.source is not None:
        raise ConfigError(
            "--compare naive runs on the synthetic clip", "leave --source out to compare"
        )
    with tempfile.TemporaryDirectory(prefix="livecam-bench-") as folder:
        tmp = Path(folder)
        with _scene(opts, tmp) as (face, motion):
            cfg = bench_config(opts, face, motion)
            store = ModelStore()
            _check_models(cfg, store)
            faces = SourceFaceCache(tmp / "faces")
            stages = build_stages(cfg, faces, store)
            stage = stages[0]
            assert isinstance(stage, FaceSwapStage)
            naive: NaiveResult | None = None
            if opts.compare_naive:
                width, height = opts.size
                stage.warmup(width, height)
                naive = _run_naive(stage, cfg, opts.naive_frames, face)
            return _run_live(opts, cfg, stage, faces, naive)


def _run_naive(stage: FaceSwapStage, cfg: Config, count: int, face: Path) -> NaiveResult:
    """The naive loop over ``count`` frames of the clip (freed before the live run, so its
    frames do not count in the live run's peak memory)."""
    return naive_loop(stage.parts, _naive_frames(cfg, count), face)


def _cache(cfg: Config, stage: FaceSwapStage) -> str:
    """Whether swapped faces are reused, and why not: turned off, or a swapper it does not
    work with."""
    if stage.repeats.reuse is not None:
        return "on"
    return "off" if not cfg.swap.reuse.reuse else "off (this swapper cannot reuse)"


def _run_live(
    opts: BenchOptions,
    cfg: Config,
    stage: FaceSwapStage,
    faces: SourceFaceCache,
    naive: NaiveResult | None,
) -> dict[str, Any]:
    sink = StampSink()
    app = App(cfg, stages=[stage], sinks=[sink], faces=faces)
    times = StageTimes()
    app.telemetry.subscribe(on_frame=times)
    sampler = PeakSampler(gpu=cfg.swap.runtime.gpu)
    sampler.start()
    try:
        app.start()
        app.wait()
    finally:
        app.stop()
        sampler.stop()
    figures = _figures(opts, cfg, app, stage, sink, times, sampler, naive)
    figures["watermark_ms"] = watermark_ms(_naive_frames(cfg, WATERMARK_FRAMES))
    return figures


def _figures(
    opts: BenchOptions,
    cfg: Config,
    app: App,
    stage: FaceSwapStage,
    sink: StampSink,
    times: StageTimes,
    sampler: PeakSampler,
    naive: NaiveResult | None,
) -> dict[str, Any]:
    snap = app.snapshot()
    stamped = sink.percentiles()
    if stamped is not None:
        latency = {"p50": stamped[0], "p99": stamped[1], "from": "pixel stamps"}
    else:
        lat = snap.latency_ms
        latency = {
            "p50": lat.p50 if lat else None,
            "p99": lat.p99 if lat else None,
            "from": "telemetry (no pixel stamp decoded)",
        }
    per_face = snap.faces_swapped / snap.frames_out if snap.frames_out else 0.0
    swap_provider = snap.providers.get("swap", {})
    figures: dict[str, Any] = {
        "livecam": __version__,
        "preset": cfg.swap.preset,
        "mode": opts.mode,
        "source": opts.source or f"synthetic face motion, {opts.faces} face(s)",
        "size": list(opts.size),
        "faces": opts.faces,
        "frames": opts.frames,
        "frames_captured": snap.frames_in,
        "fps_source": opts.fps if opts.mode == "live" else None,
        "batch_limit": opts.batch if opts.mode == "throughput" else 1,
        "swapper": cfg.swap.neural.swapper_model or cfg.swap.neural.swapper or "preset's",
        "fp16": opts.fp16,
        "cache": _cache(cfg, stage),
        "overlap": app.overlap,
        "opencv_threads": app.opencv_threads,
        "memory": cfg.swap.runtime.memory,
        "fps_out": round(snap.fps_out, 2),
        "frames_out": snap.frames_out,
        "dropped": snap.dropped,
        "latency_ms": latency,
        "stamps_decoded": len(sink.latencies_ms),
        "stamps_missed": sink.missed,
        "stages_ms": {n: {"p50": p.p50, "p99": p.p99} for n, p in snap.stages_ms.items()},
        "processing_ms_mean": _round(times.mean_total_ms()),
        "faces_per_frame": round(per_face, 3),
        "faces_per_s": round(per_face * snap.fps_out, 2),
        "faces_reused": snap.faces_reused,
        "reuse_hit_rate": round(snap.reuse_hit_rate, 4),
        "peak_rss_mb": round(sampler.peak_rss_mb, 1),
        "peak_vram_mb": _round(sampler.peak_vram_mb) if sampler.peak_vram_mb is not None else "n/a",
        "vram_scope": sampler.vram_scope,
        "provider": swap_provider.get("used", "n/a"),
        "providers": snap.providers,
        "naive": _naive_figures(opts, snap, times, naive),
    }
    return figures


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _naive_figures(
    opts: BenchOptions, snap: Snapshot, times: StageTimes, naive: NaiveResult | None
) -> dict[str, Any] | None:
    """The naive loop's figures and the pipeline's speed over it: output frames/s in
    throughput mode; in live mode (output capped at the source rate) 1000 / the mean
    processing ms per frame."""
    if naive is None:
        return None
    mean = times.mean_total_ms()
    if opts.mode == "throughput" or not mean:
        pipeline_fps, basis = snap.fps_out, "pipeline fps_out / naive fps"
    else:
        pipeline_fps = 1000 / mean
        basis = "1000 / pipeline mean processing ms per frame, over naive fps"
    return {
        "frames": naive.frames,
        "ms_per_frame": round(naive.ms_per_frame, 2),
        "fps": round(naive.fps, 2),
        "faces_per_s": round(naive.faces_per_s, 2),
        "faces_swapped": naive.faces_swapped,
        "ratio": round(pipeline_fps / naive.fps, 2) if naive.fps > 0 else None,
        "ratio_basis": basis,
    }
