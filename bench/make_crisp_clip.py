"""Write a crisp camera clip for the live-face bench: every talking-head clip of the test data
is a soft webcam-like video, so this one is a sharp studio portrait (by default the test
data's 1200x1200 Biden portrait) filling a 1280x720 frame, moved by a slow rigid motion
(±3° roll, ±3 % zoom, ±12 px pan) and encoded as H.264 at CRF 16. It has no expression: its
mouth and eye correlations mean nothing.

Usage: python bench/make_crisp_clip.py OUT [--testdata PATH] [--portrait NAME] [--frames N]

OUT becomes a test-data folder (links to the test data's faces/ and models/, and
video/liveportrait_crisp.mp4), so that

    LIVECAM_TESTDATA=OUT python bench/bench_live_face.py --clips crisp --sources ... --every-source

runs the live-face bench on it.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import av
import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import find_testdata  # noqa: E402

WIDTH, HEIGHT, FPS = 1280, 720, 30


def frame_at(image: np.ndarray, index: int) -> np.ndarray:
    """Frame ``index`` of the clip: the portrait scaled to the frame's height, rolled, zoomed
    and panned by slow sines (periods 1.9-3.1 s), edges replicated."""
    h, w = image.shape[:2]
    t = index / FPS
    angle = 3.0 * math.sin(2 * math.pi * t / 2.5)
    scale = HEIGHT / h * (1.0 + 0.03 * math.sin(2 * math.pi * t / 3.1))
    m = cv2.getRotationMatrix2D((w / 2, h / 2), angle, scale)
    m[0, 2] += WIDTH / 2 - w / 2 + 12.0 * math.sin(2 * math.pi * t / 1.9)
    m[1, 2] += HEIGHT / 2 - h / 2 + 8.0 * math.cos(2 * math.pi * t / 2.3)
    moved = cv2.warpAffine(
        image, m, (WIDTH, HEIGHT), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE
    )
    return np.asarray(moved, np.uint8)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--testdata", type=Path, default=None)
    parser.add_argument("--portrait", default="biden_official_portrait.jpg")
    parser.add_argument("--frames", type=int, default=90)
    args = parser.parse_args(argv)
    testdata = args.testdata or find_testdata()
    if testdata is None:
        sys.exit("no test data: set LIVECAM_TESTDATA or pass --testdata PATH")
    image = cv2.imread(str(testdata / "faces" / args.portrait))
    if image is None:
        sys.exit(f"cannot read {testdata / 'faces' / args.portrait}: name a photo of faces/")
    (args.out / "video").mkdir(parents=True, exist_ok=True)
    for name in ("faces", "models"):
        link = args.out / name
        if not link.exists():
            link.symlink_to((testdata / name).resolve(), target_is_directory=True)
    path = args.out / "video" / "liveportrait_crisp.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.options = {"crf": "16"}
        for i in range(args.frames):
            frame = av.VideoFrame.from_ndarray(frame_at(image, i), format="bgr24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    print(f"wrote {path} ({args.frames} frames of {args.portrait})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
