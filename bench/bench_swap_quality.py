"""Swap-quality benchmark of a classic preset's face parts (classic swapper + ROI blender).

For every ordered pair of images of DISTINCT people in <testdata>/faces, swap the source
face onto the target face and measure, with the judge preset's photo analyzer (its
recognizer embeds; the classic swap uses no recognizer to decide anything, so the judge is
held out from the swap):

* ID retrieval rate: share of pairs whose output is closer (cosine) to the source than
  to the target;
* mean cos(out, source) - cos(out, target);
* identity gain: mean ||e(target) - e(source)|| / ||e(out) - e(source)|| (unit embeddings):
  how many times closer to the source the output is than the unswapped target (> 1: it
  moved toward the source);
* mean 68-landmark error between output and target / inter-ocular distance;
* the swap time (median), plus the time on a 640x480 frame with one ~200 px face; both
  time the stage's own path (``FaceParts.render``: swapper, then blender).

Identity = the file-name prefix before the first "_" (obama_*, biden_*, ...). Images in
which the analyzer finds no face or several faces (the two-people photo, the group photo)
are skipped and listed. Targets: retrieval >= 95 %, landmark error <= 0.08.

Usage: python bench/bench_swap_quality.py [--testdata PATH] [--preset P] [--judge P]
       [--color lab|rct|none] [--blend feather|seamless] [--no-keep-mouth] [--quiet]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from livecam.config.schema import SwapConfig  # noqa: E402
from livecam.face.build import build_parts, photo_analyzer  # noqa: E402
from livecam.face.crops.align import kps_from_68  # noqa: E402
from livecam.face.identity.metrics import (  # noqa: E402
    FaceNotFoundError,
    IdentityMetrics,
    cosine,
    identity_metrics,
)
from livecam.face.parts import FaceParts  # noqa: E402
from livecam.face.source.analysis import FaceAnalyzer  # noqa: E402
from livecam.face.swap.classic import ClassicOptions, ClassicSwapper, SourceModel  # noqa: E402
from livecam.models.presets import ALIASES, PRESETS  # noqa: E402
from livecam.types import Face, FaceWork, Frame, FrameContext  # noqa: E402

IMAGE_EXT = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


@dataclass
class Portrait:
    name: str
    identity: str
    image: np.ndarray
    face: Face


def load_bgr(path: Path) -> np.ndarray:
    """Any image file as uint8 BGR (alpha dropped, grey expanded)."""
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        raise SystemExit(f"cannot read {path}")
    return np.ascontiguousarray(img)


def load_portraits(folder: Path, analyzer: FaceAnalyzer) -> tuple[list[Portrait], list[str]]:
    portraits: list[Portrait] = []
    skipped: list[str] = []
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() not in IMAGE_EXT:
            continue
        img = load_bgr(path)
        faces = analyzer.analyze(img, with_embedding=True)
        if len(faces) != 1:
            skipped.append(f"{path.name} ({len(faces)} faces)")
            continue
        portraits.append(Portrait(path.name, path.name.split("_")[0], img, faces[0]))
    return portraits, skipped


def frame_640x480(p: Portrait, face_px: float = 200.0) -> tuple[np.ndarray, np.ndarray]:
    """A 640x480 frame cut from a portrait scaled so its face box is ~face_px wide."""
    s = face_px / p.face.width
    img = cv2.resize(p.image, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
    cx, cy = (np.asarray(p.face.center) * s).astype(int)
    pad = cv2.copyMakeBorder(img, 480, 480, 640, 640, cv2.BORDER_REFLECT)
    x0, y0 = cx + 640 - 320, cy + 480 - 240
    frame = np.ascontiguousarray(pad[y0 : y0 + 480, x0 : x0 + 640])
    assert p.face.landmarks is not None
    lm = (p.face.landmarks * s + np.array([640 - x0, 480 - y0])).astype(np.float32)
    return frame, lm


def render(parts: FaceParts, image: Frame, face: Face, model: SourceModel) -> Frame:
    """One image through the stage's face parts (swapper, then blender)."""
    return parts.render([FrameContext(image)], [FaceWork(0, 0, face)], [model])[0]


def identity_gain(source: Face, target: Face, m: IdentityMetrics) -> float:
    """||e(target) - e(source)|| / ||e(out) - e(source)|| for unit embeddings, from the
    cosines (||a - b||^2 = 2 - 2 cos)."""
    assert source.embedding is not None and target.embedding is not None
    before = math.sqrt(max(2.0 - 2.0 * cosine(target.embedding, source.embedding), 0.0))
    after = math.sqrt(max(2.0 - 2.0 * m.cos_source, 1e-12))
    return before / after


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--testdata", type=Path, default=REPO.parent / "shared" / "testdata")
    ap.add_argument("--preset", default="lite", help="the classic preset whose parts swap")
    ap.add_argument("--judge", default="lite", help="the preset whose analyzer measures")
    ap.add_argument("--color", default="lab", choices=["lab", "rct", "none"])
    ap.add_argument("--blend", default="feather", choices=["feather", "seamless"])
    ap.add_argument("--no-keep-mouth", action="store_true")
    ap.add_argument("--feather", type=float, default=ClassicOptions.feather)
    ap.add_argument("--shape-weight", type=float, default=ClassicOptions.shape_weight)
    ap.add_argument("--quiet", action="store_true", help="no per-pair table")
    args = ap.parse_args()

    folder = args.testdata / "faces"
    if not folder.is_dir():
        print(f"no faces folder at {folder}; pass --testdata PATH", file=sys.stderr)
        return 2
    cfg = SwapConfig.of(color=args.color, blend=args.blend, keep_mouth=not args.no_keep_mouth)
    opts = ClassicOptions(feather=args.feather, shape_weight=args.shape_weight)
    swapper = ClassicSwapper(cfg.classic, opts)
    built = build_parts(PRESETS[ALIASES.get(args.preset, args.preset)], cfg)
    parts = dataclasses.replace(built, swapper=swapper)
    analyzer = photo_analyzer(parts)  # the preset's source-photo analyzer
    judge = photo_analyzer(build_parts(PRESETS[ALIASES.get(args.judge, args.judge)], cfg))
    portraits, skipped = load_portraits(folder, analyzer)
    judged = {p.name: judge.analyze(p.image, with_embedding=True)[0] for p in portraits}
    sources: dict[str, SourceModel] = {}
    for p in portraits:
        assert p.face.landmarks is not None
        sources[p.name] = swapper.prepare_landmarks(p.image, p.face.landmarks)

    print(f"portraits: {len(portraits)} ({len({p.identity for p in portraits})} identities)")
    if skipped:
        print("skipped:", ", ".join(skipped))
    rows = []
    times: list[float] = []
    gains: list[float] = []
    failures: list[str] = []
    for s in portraits:
        for t in portraits:
            if s.identity == t.identity:
                continue
            assert t.face.landmarks is not None
            t0 = time.perf_counter()
            out = render(parts, t.image, t.face, sources[s.name])
            times.append((time.perf_counter() - t0) * 1000)
            try:
                js, jt = judged[s.name], judged[t.name]
                m = identity_metrics(s.image, t.image, out, judge, js, jt)
            except FaceNotFoundError:
                failures.append(f"{s.name} -> {t.name}")
                continue
            rows.append((s.name, t.name, m, times[-1]))
            gains.append(identity_gain(js, jt, m))

    if not args.quiet:
        print(
            f"\n{'source':34} {'target':34} {'cos_s':>6} {'cos_t':>6} {'margin':>7} "
            f"{'lmk':>6} ok {'ms':>6}"
        )
        for sn, tn, m, ms in rows:
            print(
                f"{sn:34} {tn:34} {m.cos_source:6.3f} {m.cos_target:6.3f} {m.margin:+7.3f} "
                f"{m.landmark_error:6.3f} {'Y' if m.retrieved else 'n':>2} {ms:6.1f}"
            )

    n = len(rows) + len(failures)
    retrieved = sum(m.retrieved for _, _, m, _ in rows)
    print(f"\npairs: {n} (output face not found: {len(failures)})")
    for f in failures:
        print("  no face in output:", f)
    print(f"ID retrieval rate: {retrieved / n:.1%} ({retrieved}/{n})  target >= 95%")
    if rows:
        margin = statistics.mean(m.margin for _, _, m, _ in rows)
        lmk = statistics.mean(m.landmark_error for _, _, m, _ in rows)
        print(f"mean cos(out,src) - cos(out,tgt): {margin:+.3f}")
        print(f"identity gain ||t-s|| / ||out-s||: mean {statistics.mean(gains):.3f}")
        print(
            f"mean cos(out,src): {statistics.mean(m.cos_source for _, _, m, _ in rows):.3f}  "
            f"mean cos(out,tgt): {statistics.mean(m.cos_target for _, _, m, _ in rows):.3f}"
        )
        print(f"mean normalised landmark error: {lmk:.4f}  target <= 0.08")
    print(f"swap time median over pairs (native image sizes): {statistics.median(times):.1f} ms")

    # Speed on the live case: 640x480 frame, one ~200 px face.
    by_size = sorted(portraits, key=lambda p: -p.face.width)
    src, tgt = by_size[0], by_size[1]
    frame, lm = frame_640x480(tgt)
    face = Face(np.zeros(4, np.float32), 1.0, kps_from_68(lm), lm)
    model = sources[src.name]
    live = []
    for _ in range(30):
        t0 = time.perf_counter()
        render(parts, frame, face, model)
        live.append((time.perf_counter() - t0) * 1000)
    print(
        f"swap time 640x480, one 200 px face ({src.name} -> {tgt.name}), median of 30: "
        f"{statistics.median(live):.2f} ms (p90 {np.percentile(live, 90):.2f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
