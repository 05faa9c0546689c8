"""`livecam check`: run every installed preset (or one) on the bundled portraits and a
bundled moving clip and print, per preset, the provider really used, the face stage's
frame rate, how far the identity moved toward the source (swap strength, see
``livecam.face.identity.swap_check``; judged by the bundled MobileFaceNet whatever the
preset), and the expression and stability figures of the
clip (68-point measures of ``livecam.benchmark.live_face`` with the preset's own
landmarker). A plain-text report meant to be pasted into an issue.

The stills: each bundled portrait (``assets/``: grace_hopper.jpg, astronaut.png) put onto
the other, fitted into a 640x480 webcam frame. The moving clip: astronaut.png moved like a
head on a webcam by the synthetic source's face motion (``sources/synthetic/pattern.py``,
``head_motion``: turn, scale, sway), ``CLIP_FRAMES`` frames at 30 fps, with grace_hopper.jpg
as the source face. A preset passes when it builds, runs on the provider asked for by name
(``--provider cuda`` that falls back to the CPU fails; ``auto`` takes what there is), every
still and the clip reach ``PASS_STRENGTH`` and the clip's faces are swapped in at least
``PASS_COVERAGE`` of its frames; the expression and stability figures are printed, not
judged (the clip's expression comes from head motion only).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import math
import platform
import sys
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import numpy as np

from livecam import __version__
from livecam.config.schema import Provider, SourceConfig, SwapConfig
from livecam.errors import ConfigError, LivecamError, one_line
from livecam.face.build import JUDGE_NAME
from livecam.face.identity.metrics import nearest_face
from livecam.face.identity.swap_check import SwapCheck
from livecam.face.landmarks.measures import largest_face
from livecam.face.swap_stage import FaceSwapStage
from livecam.models.presets import AUTO, PRESETS, models_present, preset_names, resolve_preset
from livecam.types import Face, FaceWork, Frame, FrameContext, FramePacket, SwapReading

SIZE = (640, 480)
"""The webcam frame of the stills and the clip."""
CLIP_FRAMES = 48
FPS = 30.0
WARM_FRAMES = 2
"""Frames of the clip left out of the frame rate (first calls, the tracker starting)."""
IDENTITY_EVERY = 6
"""The clip's swap strength is measured on every this many frames."""
PASS_STRENGTH = 50.0
"""A swap strength of at least this: the output is nearer the source than the camera face."""
PASS_COVERAGE = 0.9
MODEL_ROLES = ("detector", "recognizer", "swapper", "enhancer")


def add_check_command(sub: Any) -> None:
    """Register `livecam check` on the CLI's subparsers."""
    check = sub.add_parser(
        "check",
        help="check every installed preset on the bundled portraits and a moving clip "
        "(provider, fps, identity, expression, stability): a report to paste into an issue",
        description="Swap the bundled portraits onto each other and onto a moving clip made "
        "from one of them, with every preset whose models are installed (or --preset), and "
        "print a plain-text report: versions, the provider really used, fps, swap strength "
        "(how far the identity moved toward the source), expression and stability figures. "
        "Exit status 0 when every checked preset passes, 1 when one does not.",
    )
    add_check_options(check)
    check.set_defaults(func=cmd_check)


def add_check_options(p: argparse.ArgumentParser) -> None:
    """The options of `livecam check`."""
    p.add_argument(
        "--preset",
        choices=preset_names(),
        help="check this preset only (default: every preset whose models are installed)",
    )
    p.add_argument(
        "--provider", choices=get_args(Provider), default="auto", help="compute provider"
    )
    p.add_argument(
        "--frames",
        type=int,
        default=CLIP_FRAMES,
        metavar="N",
        help=f"frames of the moving clip (default {CLIP_FRAMES})",
    )
    for role in MODEL_ROLES:
        p.add_argument(
            f"--{role}-model",
            metavar="PATH",
            help=f"your own {role} ONNX file for the checked preset (needs --preset)",
        )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    from livecam.remote.probe import add_remote_probe_options

    add_remote_probe_options(p)


@dataclass
class PresetReport:
    """What was measured on one preset; ``problems`` empty: it passed."""

    name: str
    provider: str = "-"
    fps: float = math.nan
    stills: list[float | None] = field(default_factory=list)
    clip_strength: float = math.nan
    coverage: float = math.nan
    mouth_corr: float = math.nan
    mouth_mad: float = math.nan
    eye_corr: float = math.nan
    eye_mad: float = math.nan
    swim: float = math.nan
    parts: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems


def cmd_check(args: argparse.Namespace) -> int:
    from livecam.sources.synthetic.portraits import SOURCE_FACE, TARGET, demo_portraits

    given = {
        f"{role}_model": str(getattr(args, f"{role}_model"))
        for role in MODEL_ROLES
        if getattr(args, f"{role}_model")
    }
    if given and args.preset is None:
        first = next(iter(given)).replace("_", "-")
        raise ConfigError(
            f"--{first} needs --preset: which preset's part it replaces",
            "add --preset standard (or the preset the file belongs to)",
        )
    for key, path in given.items():
        if not Path(path).is_file():
            raise ConfigError(f"--{key.replace('_', '-')} {path}: no such file")
    if args.remote:
        return _check_remote(args, given)
    if args.frames < WARM_FRAMES + 4:
        raise ConfigError(f"--frames {args.frames} is too few", f"use at least {WARM_FRAMES + 4}")
    base = SwapConfig.of(provider=args.provider, select="one", **given)
    names = chosen_presets(args.preset, base)
    print(header(args.provider))
    with demo_portraits() as (source, target):
        print(
            f"stills: {SOURCE_FACE} -> {TARGET} and {TARGET} -> {SOURCE_FACE} at "
            f"{SIZE[0]}x{SIZE[1]}; clip: {TARGET} with synthetic head motion, "
            f"{args.frames} frames, source {SOURCE_FACE}"
        )
        reports = []
        for name in names:
            print(f"checking {name} ...", file=sys.stderr, flush=True)
            reports.append(check_preset(name, base, source, target, args.frames))
    print()
    print(format_table(reports))
    failed = [r for r in reports if not r.passed]
    for report in failed:
        for problem in report.problems:
            print(f"{report.name}: {problem}")
    if failed:
        print(f"check FAILED: {', '.join(r.name for r in failed)}")
        return 1
    print(f"check passed: {', '.join(r.name for r in reports)}")
    return 0


def chosen_presets(preset: str | None, base: SwapConfig) -> list[str]:
    """The preset asked for (``auto`` resolved), else every row whose models are here."""
    from livecam.models.store import ModelStore

    store = ModelStore()
    if preset is not None:
        row = resolve_preset(preset, store, base)
        missing = [n for n in row.model_names(base, store.manifest) if store.locate(n) is None]
        if missing:  # nothing is downloaded by a check
            raise LivecamError(
                f"preset {row.name} is not installed: {', '.join(missing)} missing",
                f"`livecam models fetch {row.name}` downloads its models",
            )
        return [row.name if preset == AUTO else preset]
    names = [name for name, row in PRESETS.items() if models_present(row, store, base)]
    if not names:
        raise LivecamError(
            "no preset has its models installed",
            "`livecam models fetch PRESET` downloads a preset's models",
        )
    return names


def header(provider: str) -> str:
    """LiveCam's and its main libraries' versions, the platform and the providers."""
    versions = [f"livecam {__version__}", f"python {platform.python_version()}"]
    for package in ("onnxruntime", "onnxruntime-gpu", "opencv-python-headless", "numpy"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions.append(f"{package} {importlib.metadata.version(package)}")
    import onnxruntime

    available = ", ".join(onnxruntime.get_available_providers())
    return (
        f"livecam check | {' | '.join(versions)} | {platform.platform()}\n"
        f"provider asked: {provider}; onnxruntime offers: {available}"
    )


def check_preset(
    name: str, base: SwapConfig, source: Path, target: Path, frames: int
) -> PresetReport:
    """Build ``name``'s swap stage for each bundled portrait as the source and measure."""
    from livecam.userfiles.images import fit_frame, load_image_bgr

    report = PresetReport(name)
    pairs = [(source, target), (target, source)]
    for i, (face, onto) in enumerate(pairs):
        try:
            stage = build(name, base, face)
        except LivecamError as e:
            report.problems.append(f"does not build: {one_line(e.message)}")
            return report
        try:
            if i == 0:
                report.provider, fallback = provider_text(stage)
                if fallback is not None:
                    report.problems.append(fallback)
                report.parts = parts_text(stage)
            camera = fit_frame(load_image_bgr(onto), SIZE, "contain")
            strength = still_strength(stage, camera)
            report.stills.append(strength)
            if strength is None:
                report.problems.append(f"no face swapped on {onto.name} (source {face.name})")
            elif strength < PASS_STRENGTH:
                report.problems.append(
                    f"swap strength {strength:.0f}/100 on {onto.name} (source {face.name}): "
                    "the swap is not taking, the output keeps the camera's identity"
                )
            if i == 0:
                measure_clip(report, stage, onto, frames)
        except LivecamError as e:
            report.problems.append(f"failed: {one_line(e.message)}")
        finally:
            stage.close()
    return report


def build(name: str, base: SwapConfig, face: Path) -> FaceSwapStage:
    from livecam.app import default_cache_dir
    from livecam.face.source.photo import SourceFaceCache
    from livecam.face.swap_stage import build_swap_stage

    cfg = dataclasses.replace(base, preset=name, face=str(face))
    stage = build_swap_stage(cfg, SourceFaceCache(default_cache_dir()))
    stage.warmup(*SIZE)
    return stage


def provider_text(stage: FaceSwapStage) -> tuple[str, str | None]:
    """The provider really used (``cpu``, ``cuda``, ``cpu(FALLBACK)``) and, for a fallback
    from a provider asked for by name, the problem (the one asked for and why not)."""
    used, requested = ",".join(stage.providers.used), ",".join(stage.providers.requested)
    if used == requested or requested == "auto":
        return used, None
    why = f": {one_line(stage.providers.reason)}" if stage.providers.reason else ""
    return f"{used}(FALLBACK)", f"runs on {used}, not the requested {requested}{why}"


def parts_text(stage: FaceSwapStage) -> str:
    """The model of each part of the stage, by role."""
    parts = stage.parts
    roles = {
        "detector": parts.detector,
        "landmarker": parts.landmarker,
        "recognizer": parts.recognizer,
        "swapper": parts.swapper,
        "enhancer": parts.enhancer,
    }
    return ", ".join(f"{role} {part.model_id}" for role, part in roles.items() if part is not None)


def _check(stage: FaceSwapStage) -> SwapCheck:
    if stage.check is None:
        raise LivecamError(f"the {stage.preset} swap stage has no swap check")
    return stage.check


def still_strength(stage: FaceSwapStage, camera: Frame) -> float | None:
    """The swap strength of the largest face of ``camera`` after a few frames (the tracker
    settled); None when no face was swapped (or the strength is not defined)."""
    packet = None
    for i in range(3):
        packet = FramePacket(camera.copy(), seq=i, t_capture_ns=int(i * 1e9 / FPS))
        stage.process([packet])
    assert packet is not None
    face = largest_face(packet.faces)
    if not packet.faces_swapped or face is None:
        return None
    return _check(stage).measure(camera, packet.frame, face).strength


def measure_clip(report: PresetReport, stage: FaceSwapStage, portrait: Path, frames: int) -> None:
    """Run the moving clip of ``portrait`` through ``stage``: fps, coverage, strength and
    the 68-point expression and stability figures."""
    from livecam.face.landmarks.measures import dlib68_measures, pearson, swim
    from livecam.sources.synthetic.pattern import SyntheticSource

    clip = SyntheticSource(
        SourceConfig(spec="synthetic", face_motion=str(portrait), size=SIZE, fps=FPS)
    )
    clip.open()
    cams: list[Frame] = [clip.render(i) for i in range(frames)]
    clip.close()
    swapped, strengths, spent = 0, [], 0.0
    series: dict[str, list[float]] = {"cm": [], "om": [], "ce": [], "oe": []}
    offsets: list[np.ndarray] = []
    for i, camera in enumerate(cams):
        packet = FramePacket(camera, seq=i, t_capture_ns=int(i * 1e9 / FPS))
        start = time.perf_counter()
        stage.process([packet])
        if i >= WARM_FRAMES:
            spent += time.perf_counter() - start
        face = largest_face(packet.faces)
        if not packet.faces_swapped or face is None:
            continue
        swapped += 1
        if i % IDENTITY_EVERY == 0:
            reading: SwapReading = _check(stage).measure(camera, packet.frame, face)
            if reading.strength is not None:
                strengths.append(reading.strength)
        pair = point_pair(stage, camera, packet.frame, face)
        if pair is None:
            continue
        cam_pts, out_pts = pair
        if len(cam_pts) == 68:
            cam_m, out_m = dlib68_measures(cam_pts), dlib68_measures(out_pts)
            series["cm"].append(cam_m.mouth)
            series["om"].append(out_m.mouth)
            series["ce"].append(cam_m.eye)
            series["oe"].append(out_m.eye)
            eyes = cam_m.eye_distance
        else:  # 5 keypoints: the eyes are the first two
            eyes = float(np.hypot(*(cam_pts[0] - cam_pts[1])))
        offsets.append((out_pts - cam_pts).mean(axis=0) / max(eyes, 1e-6))
    report.fps = (frames - WARM_FRAMES) / spent if spent > 0 else math.nan
    report.coverage = swapped / frames
    report.clip_strength = float(np.median(strengths)) if strengths else math.nan
    if series["cm"]:
        report.mouth_corr = pearson(series["om"], series["cm"])
        report.eye_corr = pearson(series["oe"], series["ce"])
        report.mouth_mad = float(np.mean(np.abs(np.subtract(series["om"], series["cm"]))))
        report.eye_mad = float(np.mean(np.abs(np.subtract(series["oe"], series["ce"]))))
    report.swim = swim(offsets)
    if report.coverage < PASS_COVERAGE:
        report.problems.append(
            f"the moving clip's face was swapped in {report.coverage:.0%} of its frames "
            f"(at least {PASS_COVERAGE:.0%} expected)"
        )
    if not strengths or report.clip_strength < PASS_STRENGTH:
        report.problems.append(
            f"swap strength {report.clip_strength:.0f}/100 on the moving clip: "
            "the swap is not taking"
        )


def point_pair(
    stage: FaceSwapStage, camera: Frame, output: Frame, face: Face
) -> tuple[np.ndarray, np.ndarray] | None:
    """The same points found on the camera and the output frame at ``face``: 68 landmarks
    from the preset's landmarker when it has a 68-point one, else 5 keypoints (refined by
    its landmarker, or from its detector on each frame, the face nearest ``face``)."""
    landmarker = stage.parts.landmarker
    if landmarker is not None:
        fitted = [
            landmarker.fit([FrameContext(image)], [FaceWork(0, 0, face)])[0].face
            for image in (camera, output)
        ]
        cam_lm, out_lm = fitted[0].landmarks, fitted[1].landmarks
        if cam_lm is not None and out_lm is not None and len(cam_lm) == len(out_lm) == 68:
            return np.asarray(cam_lm, np.float64), np.asarray(out_lm, np.float64)
        return np.asarray(fitted[0].kps, np.float64), np.asarray(fitted[1].kps, np.float64)
    found = stage.parts.detector.detect([FrameContext(camera), FrameContext(output)])
    near = [nearest_face(faces, face) for faces in found]
    if near[0] is None or near[1] is None:
        return None
    return np.asarray(near[0].kps, np.float64), np.asarray(near[1].kps, np.float64)


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None or math.isnan(value) else format(value, spec)


COLUMNS = (
    "preset",
    "provider",
    "fps",
    "still id",
    "clip id",
    "coverage",
    "mouth r/mad",
    "eye r/mad",
    "swim",
    "result",
)


def format_table(reports: Sequence[PresetReport]) -> str:
    """The reports as a plain-text table (fixed-width columns), with a legend."""
    rows = [list(COLUMNS)]
    for r in reports:
        rows.append(
            [
                r.name,
                r.provider,
                _num(r.fps, ".1f"),
                " / ".join(_num(s, ".0f") for s in r.stills) or "n/a",
                _num(r.clip_strength, ".0f"),
                _num(r.coverage, ".2f"),
                _pair(r.mouth_corr, r.mouth_mad),
                _pair(r.eye_corr, r.eye_mad),
                _num(r.swim, ".4f"),
                "PASS" if r.passed else "FAIL",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    parts = [
        line
        for r in reports
        if r.parts
        for line in textwrap.wrap(
            f"{r.name}: {r.parts}", 100, subsequent_indent="  ", break_on_hyphens=False
        )
    ]
    legend = (
        "fps: the face stage alone, one face at 640x480, this machine. still id / clip id: "
        "swap strength 0-100 (0: the output is the camera face, 50: as near one as the "
        f"other, 100: the source; pass >= {PASS_STRENGTH:.0f}), per still and the clip's "
        f"median, judged by the bundled {JUDGE_NAME} whatever the preset. coverage: share "
        "of clip frames swapped. mouth / eye r/mad: correlation and "
        "mean absolute difference of the output's and the camera's opening (68 points of the "
        "preset's landmarker; n/a without a 68-point one). swim: std over the clip of the "
        "output's mean landmark offset from the camera's, in eye distances (68 points, else "
        "the 5 keypoints)."
    )
    return "\n".join([*lines, "", *parts, "", *textwrap.wrap(legend, 100)])


def _pair(corr: float, mad: float) -> str:
    if math.isnan(corr) and math.isnan(mad):
        return "n/a"
    return f"{_num(corr, '.2f')}/{_num(mad, '.3f')}"


def _check_remote(args: argparse.Namespace, given: dict[str, str]) -> int:
    """`livecam check --remote URL`: the server probed, and its swap compared with this
    machine's swapper of --preset (standard by default) on the same crop."""
    from livecam.face.build import build_swapper
    from livecam.face.swap.neural import NeuralSwapper
    from livecam.models.presets import resolve_preset
    from livecam.models.store import ModelStore
    from livecam.remote.probe import run_probe

    cfg = SwapConfig.of(
        preset=args.preset or "standard",
        provider=args.provider,
        swapper_model=given.get("swapper_model"),
    )
    store = ModelStore()
    swapper = build_swapper(resolve_preset(cfg.preset, store, cfg), cfg, store)
    try:
        if not isinstance(swapper, NeuralSwapper):
            raise ConfigError(
                f"preset {cfg.preset} has no neural swapper to compare the server with",
                "use --preset standard",
            )
        return run_probe(args, swapper)
    finally:
        swapper.close()
