"""Scores of the ONNX detectors on real faces and on face-free frames, to choose each
one's ``start_score`` (a detection from that score on starts a track or is a photo's face).

    python bench/bench_detector_scores.py [--threshold 0.3]

Real faces: the single-face test portraits (``tests/scenes.py``) composed at 8, 12, 20, 30
and 40 % of the frame width in four placements (two tilted +-8 deg), at 640x480 and
1920x1080. Face-free frames: textured backdrops (8 seeds per size) and the body (below
the face) of biden_standing_2010.jpg. Prints per detector: faces missed, the lowest,
1st- and 5th-percentile and median real-face score, and the highest face-free score.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import find_testdata  # noqa: E402
from face_helpers import lite_analyzer  # noqa: E402
from scenes import background, compose, load_portraits, match  # noqa: E402

from livecam.face.detect.patches import PatchDetector  # noqa: E402
from livecam.face.detect.scrfd import ScrfdDetector  # noqa: E402
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions  # noqa: E402
from livecam.types import FrameContext  # noqa: E402
from livecam.userfiles.images import load_image_bgr  # noqa: E402

SIZES = ((640, 480), (1920, 1080))
WIDTHS = (0.08, 0.12, 0.2, 0.3, 0.4)
PLACEMENTS = (((0.5, 0.45), 0.0), ((0.3, 0.4), 8.0), ((0.7, 0.55), -8.0), ((0.45, 0.6), 4.0))

Build = Callable[[Path, RuntimeOptions, float], PatchDetector]
DETECTORS: dict[str, Build] = {
    "scrfd-2.5g letterbox": lambda m, o, t: ScrfdDetector(
        OnnxModel(m / "scrfd_2.5g_kps.onnx", o), score_threshold=t
    ),
    "scrfd-500m letterbox": lambda m, o, t: ScrfdDetector(
        OnnxModel(m / "scrfd_500m_kps.onnx", o), score_threshold=t
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threshold", type=float, default=0.3)
    args = parser.parse_args()
    testdata = find_testdata()
    if testdata is None:
        raise SystemExit("../shared/testdata not found (set LIVECAM_TESTDATA)")
    analyzer = lite_analyzer(with_encoder=False)
    portraits = load_portraits(testdata / "faces", analyzer)
    body = load_image_bgr(testdata / "faces" / "biden_standing_2010.jpg")[700:1500]
    empty = [background(w, h, seed) for w, h in SIZES for seed in range(8)] + [body]
    options = RuntimeOptions(provider="cpu")
    cols = ("missed", "min", "p1", "p5", "median")
    print(f"{'detector':<26} " + " ".join(f"{c:>6}" for c in cols) + f" {'false max':>9}")
    for name, build in DETECTORS.items():
        det = build(testdata / "models", options, args.threshold)
        real: list[float] = []
        missed = 0
        false = [f.score for e in empty for f in det.detect([FrameContext(e)])[0]]
        for w, h in SIZES:
            backdrop = background(w, h)
            for frac in WIDTHS:
                for portrait in portraits:
                    for centre, angle in PLACEMENTS:
                        scene = compose(portrait, backdrop, frac, centre, angle)
                        faces = det.detect([FrameContext(scene.frame)])[0]
                        found = match(scene, faces)
                        missed += found is None
                        real += [] if found is None else [found.score]
                        false += [f.score for f in faces if f is not found]
        r = np.array(real)
        p1, p5, med = np.percentile(r, [1, 5, 50])
        top = max(false, default=0.0)
        print(f"{name:<26} {missed:>6} {r.min():6.3f} {p1:6.3f} {p5:6.3f} {med:6.3f} {top:9.3f}")


if __name__ == "__main__":
    main()
