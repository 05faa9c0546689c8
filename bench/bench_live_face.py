"""Does the swapped face live? LiveCam's real swap stage over the talking-head clips.

    python bench/bench_live_face.py
        [--preset lite] [--frames 120] [--clips d6,d13,s18,s29,s32] [--framings own,webcam]
        [--sources obama_official_portrait_2012.jpg,...] [--eyes VALUE] [--set field=value]
        [--every-source] [--camera-only] [--json PATH]

Each clip (``liveportrait_*.mp4`` of the test data: $LIVECAM_TESTDATA or ../shared/testdata)
runs at its own framing and placed into a 1280x720 webcam frame with the face at 12 % of
the width (``WebcamPlacement``: scale fixed from the first frame, head motion kept). The
source photos (held-out portraits of the test data) rotate over the clips: clip i swaps
source i. The first ``--frames`` frames of each clip go in order, one packet each, with the
clip's own media timestamps, through ``build_swap_stage`` (preset ``--preset``; a fresh
stage per run, so tracking starts cold as it does live).

Per run the figures of ``livecam.benchmark.live_face.ClipMeter``: coverage, identity
retrieval (nearest of source, camera face and the other sources) and margin cos(out, src)
- cos(out, cam) with MobileFaceNet (the testdata file, which the classic swap does not use
to decide anything; the lite preset's own recogniser is the same network), mouth and eye
opening correlation and mean absolute difference (MediaPipe face mesh), swim (eye-corner
distances), flicker (mean and p95 of the warping-error ratio), ``seam`` (the colour step
across the swap's boundary over the camera's own on the same bands), ``sharp`` (the
output's fine-detail energy in the inner face over the camera's) and ``cornerE`` (the
mesh mouth corners' distance from the camera's, in eye distances), ``strgth`` (the median
of the live swap check's swap strength, 0-100, with MobileFaceNet: 50 = the output as near
the source as the camera face; the goal is 50); ``camMsd``/``camEsd``: the
standard deviation of the camera face's mouth / eye opening over the clip (a correlation
over a nearly still mouth says little); ``ceilM``/``ceilE``: the correlations' ceiling, the
camera's mouth / eye opening against the same on near-copies of the camera frames (moved
half a pixel and re-encoded as JPEG 90 and 85: the mesh's own noise), the most a swap that
changed nothing could score. Then the mean over runs and the issue's goals; a correlation
goal is not judged (n/a, named with its ceiling and mouthD/eyeD) on a run whose ceiling is
below the goal itself: there even the camera against itself misses it (s18's speaker
moves her mouth within the mesh's noise: ceilM about 0.8), and such runs are left out of
that goal's mean (the mean over all runs is printed beside it). ``stage ms``: the swap
stage's median time per frame (its fps in brackets), measured alone (the figures' own work
is outside), under whatever load the machine has.

``--every-source``: every clip runs with every source (not one source a clip): the swap
strength of each portrait pair, e.g. ``--clips d6 --every-source --sources`` with all of
``PORTRAITS``.

``--camera-only``: no swap, each camera frame is its own output (coverage 0, correlation 1,
swim 0, flicker <= 1: the instrument's zero, and the clips' own expression spread).

Before/after: run it against another checkout with ``PYTHONPATH=/path/to/checkout`` (one
from before the lite models were bundled also wants
``LIVECAM_MODELS_DIR=../shared/testdata/models``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import find_testdata  # noqa: E402

from livecam.benchmark.live_face import (  # noqa: E402
    ClipFigures,
    ClipMeter,
    FaceMesh,
    WebcamPlacement,
)
from livecam.config.schema import SwapConfig  # noqa: E402
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet  # noqa: E402
from livecam.face.identity.onnx import (  # noqa: E402
    MOBILEFACENET_SAME_PERSON_DISTANCE,
    OnnxRecognizer,
)
from livecam.face.landmarks.measures import largest_face  # noqa: E402
from livecam.face.source.photo import SourceFaceCache  # noqa: E402
from livecam.face.swap_stage import build_swap_stage  # noqa: E402
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions  # noqa: E402
from livecam.types import (  # noqa: E402
    Face,
    FaceWork,
    Frame,
    FrameContext,
    FramePacket,
)

CLIPS = ("d6", "d13", "s18", "s29", "s32")
FRAMINGS = ("own", "webcam")
SOURCES = (
    "obama_official_portrait_2012.jpg",
    "biden_official_portrait.jpg",
    "grace_hopper_navy_portrait.jpg",
    "astronaut_eileen_collins.png",
)
PORTRAITS = (
    "astronaut_eileen_collins.png",
    "biden_official_portrait.jpg",
    "biden_standing_2010.jpg",
    "codait_bryan.png",
    "grace_hopper_navy_portrait.jpg",
    "obama_official_portrait_2012.jpg",
    "obama_small_320x240.jpg",
    "obama_speech_2009.jpg",
)
"""The test data's photos of one face (``--every-source --sources all``)."""
# (column, ClipFigures field, format, goal: the (low, high) range every run must be in, or None)
INF = math.inf
# a correlation goal and the ceiling it is judged against (its run is n/a below the goal),
# with the mean difference shown for such a run
CEILINGS = {
    "mouth_corr": ("mouth_ceiling", "mouthD", "mouth_mad"),
    "eye_corr": ("eye_ceiling", "eyeD", "eye_mad"),
}
COLUMNS: tuple[tuple[str, str, str, tuple[float, float] | None], ...] = (
    ("cover", "coverage", "{:.2f}", (0.98, INF)),
    ("retr", "retrieval", "{:.2f}", (0.9, INF)),
    ("margin", "margin", "{:+.2f}", None),
    ("strgth", "strength", "{:.0f}", (50.0, INF)),
    ("mouthC", "mouth_corr", "{:.2f}", (0.9, INF)),
    ("camMsd", "camera_mouth_sd", "{:.3f}", None),
    ("ceilM", "mouth_ceiling", "{:.2f}", None),
    ("eyeC", "eye_corr", "{:.2f}", (0.8, INF)),
    ("camEsd", "camera_eye_sd", "{:.3f}", None),
    ("ceilE", "eye_ceiling", "{:.2f}", None),
    ("mouthD", "mouth_mad", "{:.3f}", None),
    ("eyeD", "eye_mad", "{:.3f}", None),
    ("swim", "swim", "{:.3f}", (-INF, 0.03)),
    ("flkM", "flicker_mean", "{:.2f}", None),
    ("flkP95", "flicker_p95", "{:.2f}", (-INF, 2.0)),
    ("seam", "seam", "{:.2f}", (-INF, 1.5)),
    ("sharp", "sharpness", "{:.2f}", (0.8, 1.25)),
    ("cornerE", "mouth_corner", "{:.3f}", (-INF, 0.05)),
)


@dataclasses.dataclass(frozen=True)
class Run:
    clip: str
    framing: str
    source: str
    figures: ClipFigures
    stage_ms: float


def clip_frames(path: Path, count: int) -> Iterator[tuple[Frame, int]]:
    """The first ``count`` frames of a video (BGR) with their media time in ns."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        base = float(stream.time_base) if stream.time_base is not None else 1 / 30
        for i, frame in enumerate(container.decode(stream)):
            if i >= count:
                return
            pts = frame.pts if frame.pts is not None else i
            yield np.asarray(frame.to_ndarray(format="bgr24"), np.uint8), round(pts * base * 1e9)


def swap_config(args: argparse.Namespace, source: Path) -> SwapConfig:
    """The swap config of a run: the preset, the source photo and ``--set`` overrides."""
    try:  # a checkout whose swap config has sections finds each setting by name
        from livecam.config.swap import setting_sections

        names = set(setting_sections())
        make: Callable[..., SwapConfig] = SwapConfig.of
    except ImportError:  # an older checkout (make_before_after --before)
        names, make = {f.name for f in dataclasses.fields(SwapConfig)}, SwapConfig
    values: dict[str, Any] = {"face": str(source), "preset": args.preset}
    overrides = list(args.set)
    if args.eyes is not None:
        if "eyes" not in names:
            sys.exit("this checkout's SwapConfig has no 'eyes' field; use --set FIELD=VALUE")
        overrides.append(f"eyes={args.eyes}")
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or key not in names:
            sys.exit(f"--set {item!r}: want FIELD=VALUE with a SwapConfig field")
        try:
            value: Any = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw  # a bare word: a string
        values[key] = tuple(value) if isinstance(value, list) else value
    made: SwapConfig = make(**values)
    return made


def build_stage(cfg: SwapConfig, cache: SourceFaceCache) -> Any:
    """``build_swap_stage`` of this checkout."""
    return build_swap_stage(cfg, cache)


class Judge:
    """What measures every run: a YuNet detector (full frame), the mesh and MobileFaceNet."""

    def __init__(self, models: Path) -> None:
        self.detector = YuNetDetector(bundled_yunet())
        self.mesh = FaceMesh(models / "face_landmark.onnx")
        net = OnnxModel(models / "mobilefacenet.onnx", RuntimeOptions(provider="cpu", threads=1))
        self.recognizer = OnnxRecognizer(
            net, same_person_distance=MOBILEFACENET_SAME_PERSON_DISTANCE
        )

    def face(self, frame: Frame) -> Face | None:
        return largest_face(self.detector.detect([FrameContext(frame)])[0])

    def embedding(self, photo: Path) -> np.ndarray:
        image = np.asarray(cv2.imread(str(photo)), np.uint8)
        face = self.face(image)
        if face is None:
            sys.exit(f"no face found in {photo}")
        (work,) = self.recognizer.embed([FrameContext(image)], [FaceWork(0, 0, face)])
        assert work.face.embedding is not None
        return work.face.embedding


def person(photo: str) -> str:
    """Who a test photo shows, by its name's first word (obama_speech_2009.jpg: obama): the
    retrieval gallery leaves out the source person's other photos."""
    return photo.split("_")[0]


def run_one(
    args: argparse.Namespace,
    judge: Judge,
    cache: SourceFaceCache,
    clip: str,
    framing: str,
    source: Path,
    embeddings: dict[str, np.ndarray],
) -> Run:
    video = args.testdata / "video" / f"liveportrait_{clip}.mp4"
    stage = None if args.camera_only else build_stage(swap_config(args, source), cache)
    if stage is not None:
        stage.warmup(1280, 720)
    gallery = [e for name, e in embeddings.items() if person(name) != person(source.name)]
    meter = ClipMeter(
        judge.mesh,
        judge.recognizer,
        embeddings[source.name],
        gallery,
        identity_every=args.identity_every,
        ceiling=True,
    )
    placement: WebcamPlacement | None = None
    times: list[float] = []
    try:
        for seq, (frame, t_ns) in enumerate(clip_frames(video, args.frames)):
            if framing == "webcam":
                if placement is None:
                    first = judge.face(frame)
                    if first is None:
                        sys.exit(f"{clip}: no face on the first frame to place it by")
                    placement = WebcamPlacement.from_first(first.bbox)
                frame = placement.place(frame)
            packet = FramePacket(frame.copy(), seq=seq, t_capture_ns=t_ns, t_media_ns=t_ns)
            t0 = time.perf_counter()
            (out,) = [packet] if stage is None else stage.process([packet])
            times.append((time.perf_counter() - t0) * 1000)
            meter.add(frame, out.frame, judge.face(frame))
    finally:
        if stage is not None:
            stage.close()
    return Run(clip, framing, source.name, meter.figures(), statistics.median(times))


def row(label: str, source: str, figures: ClipFigures | dict[str, float], ms: float) -> str:
    get = figures.get if isinstance(figures, dict) else lambda k: getattr(figures, k)
    cells = [f"{label:<11}", f"{source[:14]:<14}"]
    cells += [fmt.format(get(key)).rjust(max(len(col), 6)) for col, key, fmt, _ in COLUMNS]
    fps = 1000 / ms if ms > 0 else math.nan
    cells.append(f"{ms:7.1f} ({fps:4.1f})")
    return " ".join(cells)


def header() -> str:
    cols = " ".join(col.rjust(max(len(col), 6)) for col, *_ in COLUMNS)
    return f"{'clip/frame':<11} {'source':<14} {cols} stage ms (fps)"


def mean_of(runs: list[Run]) -> dict[str, float]:
    out: dict[str, float] = {}
    for _, key, _, _ in COLUMNS:
        values = [getattr(r.figures, key) for r in runs]
        finite = [v for v in values if not math.isnan(v)]
        out[key] = statistics.fmean(finite) if finite else math.nan
    return out


def judged(runs: list[Run], key: str, lo: float) -> tuple[list[Run], list[str]]:
    """The runs a goal ``key`` (at least ``lo``) is judged on, and a note for each run it is
    not: a correlation whose ceiling (the camera against its near-copies) is below ``lo``."""
    if key not in CEILINGS:
        return runs, []
    ceiling, diff_col, diff_key = CEILINGS[key]
    kept, notes = [], []
    for r in runs:
        c = getattr(r.figures, ceiling)
        if not math.isnan(c) and c < lo:
            notes.append(
                f"{r.clip}/{r.framing} n/a ({getattr(r.figures, key):.2f}; ceiling {c:.2f}, "
                f"{diff_col} {getattr(r.figures, diff_key):.3f})"
            )
        else:
            kept.append(r)
    return kept, notes


def goals_line(runs: list[Run], means: dict[str, float]) -> str:
    parts = []
    for col, key, fmt, goal in COLUMNS:
        if goal is None:
            continue
        lo, hi = goal
        kept, notes = judged(runs, key, lo)
        values = [getattr(r.figures, key) for r in kept]
        if not values:
            parts.append(f"{col}: n/a on every run ({', '.join(notes)})")
            continue
        ok = all(lo <= v <= hi for v in values)
        if lo == -INF:
            want, worst = f"<= {hi:g}", max(values)
        elif hi == INF:
            want, worst = f">= {lo:g}", min(values)
        else:
            want = f"in {lo:g}-{hi:g}"
            worst = max(values, key=lambda v: max(lo / v if v > 0 else INF, v / hi))
        if notes:
            mean = fmt.format(statistics.fmean(values))
            parts.append(
                f"{col} {want}: mean {mean} over {len(kept)} runs (all {len(runs)}: "
                f"{fmt.format(means[key])}), worst {fmt.format(worst)} "
                f"{'ok' if ok else 'MISSED'}; {'; '.join(notes)}"
            )
            continue
        parts.append(
            f"{col} {want}: mean {fmt.format(means[key])}, worst "
            f"{fmt.format(worst)} {'ok' if ok else 'MISSED'}"
        )
    return "goals (every run): " + "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--preset", default="lite")
    parser.add_argument("--frames", type=int, default=120, help="frames per clip (default 120)")
    parser.add_argument("--clips", default=",".join(CLIPS))
    parser.add_argument("--framings", default=",".join(FRAMINGS))
    parser.add_argument(
        "--sources",
        default=",".join(SOURCES),
        help="portraits of faces/ (all: every one-face photo there)",
    )
    parser.add_argument(
        "--every-source",
        action="store_true",
        help="run every clip with every source (default: clip i swaps source i)",
    )
    parser.add_argument(
        "--eyes", default=None, help="swap.classic.eyes (when this checkout has it)"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="a SwapConfig field"
    )
    parser.add_argument("--identity-every", type=int, default=2, help="embed every Nth frame")
    parser.add_argument(
        "--camera-only",
        action="store_true",
        help="no swap: the camera against itself (the instrument's zero, the clips' spread)",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the runs here")
    args = parser.parse_args(argv)
    testdata = find_testdata()
    if testdata is None:
        sys.exit("../shared/testdata not found (set LIVECAM_TESTDATA)")
    args.testdata = testdata
    clips = [c for c in args.clips.split(",") if c]
    framings = [f for f in args.framings.split(",") if f]
    if any(f not in FRAMINGS for f in framings):
        sys.exit(f"--framings: {', '.join(FRAMINGS)}")
    names = PORTRAITS if args.sources == "all" else [s for s in args.sources.split(",") if s]
    sources = [testdata / "faces" / s for s in names]
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        sys.exit(f"--sources: no such photo: {', '.join(missing)}")
    judge = Judge(testdata / "models")
    embeddings = {s.name: judge.embedding(s) for s in sources}
    cache = SourceFaceCache(None)
    import livecam

    print(
        f"livecam from {Path(livecam.__file__).parent}; preset {args.preset}; "
        f"{args.frames} frames per clip; overrides {args.set or 'none'}"
        + (f"; eyes {args.eyes}" if args.eyes else "")
    )
    print(header())
    runs: list[Run] = []
    for i, clip in enumerate(clips):
        for source in sources if args.every_source else [sources[i % len(sources)]]:
            for framing in framings:
                run = run_one(args, judge, cache, clip, framing, source, embeddings)
                runs.append(run)
                label = f"{clip}/{framing}"
                print(row(label, source.stem, run.figures, run.stage_ms), flush=True)
    means = mean_of(runs)
    print(row("mean", "", means, statistics.fmean(r.stage_ms for r in runs)))
    for framing in framings:
        ms = [r.stage_ms for r in runs if r.framing == framing]
        print(
            f"swap stage alone, {framing} framing: median per-frame ms {statistics.median(ms):.1f}"
            f" ({1000 / statistics.median(ms):.1f} fps), under this machine's load"
        )
    print(goals_line(runs, means))
    if args.json is not None:
        data = [{**dataclasses.asdict(r), "figures": dataclasses.asdict(r.figures)} for r in runs]
        args.json.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
