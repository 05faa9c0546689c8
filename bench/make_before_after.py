"""Write docs/images/before_after_*.jpg: source | target | output of the offline preset's
face parts (classic swapper + ROI blender) for several pairs of <testdata>/faces, each
panel a crop around the face (README images).

Usage: python bench/make_before_after.py [--testdata PATH] [--out docs/images] [--size 320]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from livecam.config.schema import SwapConfig  # noqa: E402
from livecam.face.build import build_parts, photo_analyzer  # noqa: E402
from livecam.face.swap.classic import ClassicSwapper  # noqa: E402
from livecam.models.presets import PRESETS  # noqa: E402
from livecam.types import Face, FaceWork, FrameContext  # noqa: E402

# (name of the jpg, source file, target file)
PAIRS = [
    ("obama_to_biden", "obama_official_portrait_2012.jpg", "biden_official_portrait.jpg"),
    ("biden_to_obama_speech", "biden_official_portrait.jpg", "obama_speech_2009.jpg"),
    ("astronaut_to_grace_hopper", "astronaut_eileen_collins.png", "grace_hopper_navy_portrait.jpg"),
    ("grace_hopper_to_astronaut", "grace_hopper_navy_portrait.jpg", "astronaut_eileen_collins.png"),
    ("obama_to_astronaut", "obama_official_portrait_2012.jpg", "astronaut_eileen_collins.png"),
    ("astronaut_to_obama", "astronaut_eileen_collins.png", "obama_official_portrait_2012.jpg"),
]


def crop_face(img: np.ndarray, face: Face, size: int, zoom: float = 2.0) -> np.ndarray:
    """A square crop around the face (zoom x its box), resized to size x size."""
    cx, cy = face.center
    half = zoom * max(face.width, face.height) / 2
    m = np.array(
        [
            [size / (2 * half), 0, size / 2 - cx * size / (2 * half)],
            [0, size / (2 * half), size / 2 - cy * size / (2 * half)],
        ],
        np.float32,
    )
    return cv2.warpAffine(
        img,
        m,
        (size, size),
        flags=cv2.INTER_AREA,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=(40, 40, 40),
    )


def label(panel: np.ndarray, text: str) -> np.ndarray:
    out = panel.copy()
    cv2.rectangle(out, (0, 0), (out.shape[1], 22), (0, 0, 0), -1)
    cv2.putText(out, text, (6, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1, cv2.LINE_AA)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--testdata", type=Path, default=REPO.parent / "shared" / "testdata")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    ap.add_argument("--size", type=int, default=320, help="panel size in pixels")
    ap.add_argument("--format", default="jpg", choices=["jpg", "png"])
    args = ap.parse_args()

    parts = build_parts(PRESETS["lite"], SwapConfig())
    analyzer = photo_analyzer(parts)
    swapper = parts.swapper
    assert isinstance(swapper, ClassicSwapper)
    args.out.mkdir(parents=True, exist_ok=True)
    faces_dir = args.testdata / "faces"
    for name, src_name, tgt_name in PAIRS:
        src_raw = cv2.imread(str(faces_dir / src_name), cv2.IMREAD_COLOR)
        tgt_raw = cv2.imread(str(faces_dir / tgt_name), cv2.IMREAD_COLOR)
        if src_raw is None or tgt_raw is None:
            print(f"skip {name}: missing {src_name} or {tgt_name}")
            continue
        src = np.ascontiguousarray(src_raw, np.uint8)
        tgt = np.ascontiguousarray(tgt_raw, np.uint8)
        sf, tf = analyzer.analyze(src), analyzer.analyze(tgt)
        if not sf or not tf:
            print(f"skip {name}: no face found")
            continue
        assert sf[0].landmarks is not None and tf[0].landmarks is not None
        model = swapper.prepare_landmarks(src, sf[0].landmarks)
        out = parts.render([FrameContext(tgt)], [FaceWork(0, 0, tf[0])], [model])[0]
        panels = [
            label(crop_face(src, sf[0], args.size), "source"),
            label(crop_face(tgt, tf[0], args.size), "target"),
            label(crop_face(out, tf[0], args.size), "output (classic swap)"),
        ]
        row = np.hstack(panels)
        path = args.out / f"before_after_{name}.{args.format}"
        params = [cv2.IMWRITE_JPEG_QUALITY, 88] if args.format == "jpg" else []
        cv2.imwrite(str(path), row, params)
        print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
