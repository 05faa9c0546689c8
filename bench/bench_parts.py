"""Per-part speed at 640x480: median ms per call of each part on one frame with one real
face (the official Obama portrait cropped to 4:3 and scaled to 640x480).

    python bench/bench_parts.py [--provider cpu|auto|cuda] [--repeats 30] [--only NAME]

Each row of ``ROWS`` names a part and builds, from the test-data models folder and the
runtime options, the callable timed on the frame. Add a part by adding a row.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import find_testdata  # noqa: E402

from livecam.face.detect.scrfd import ScrfdDetector  # noqa: E402
from livecam.face.detect.yunet import YuNetDetector  # noqa: E402
from livecam.face.identity.onnx import OnnxRecognizer  # noqa: E402
from livecam.face.landmarks.onnx import SLIM_BOX, SLIM_KPS_BOX, Pfld68Landmarker  # noqa: E402
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions  # noqa: E402
from livecam.types import FaceWork, Frame, FrameContext  # noqa: E402
from livecam.userfiles.images import load_image_bgr  # noqa: E402

Call = Callable[[Frame], object]
Row = Callable[[Path, RuntimeOptions], Call]


def detector(part: Callable[[Path, RuntimeOptions], object]) -> Row:
    """A row timing ``part(models, options).detect`` on the frame."""

    def build(models: Path, options: RuntimeOptions) -> Call:
        det = part(models, options)
        return lambda frame: det.detect([FrameContext(frame)])  # type: ignore[attr-defined]

    return build


def face_part(part: Callable[[Path, RuntimeOptions], object], faces: int = 1) -> Row:
    """A row timing ``part(models, options)``'s ``fit`` (landmarkers) or ``embed``
    (recognizers) on ``faces`` copies of the frame's face (found once by YuNet, boxed as
    the part wants): all of them in one call."""

    def build(models: Path, options: RuntimeOptions) -> Call:
        obj = part(models, options)
        yunet = YuNetDetector(models / "face_detection_yunet_2023mar.onnx")
        run = getattr(obj, "fit", None) or obj.embed  # type: ignore[attr-defined]
        seeds: dict[int, list[FaceWork]] = {}

        def call(frame: Frame) -> object:
            ctx = FrameContext(frame)
            if id(frame) not in seeds:
                face = max(yunet.detect([ctx])[0], key=lambda f: f.score)
                box_for_kps = getattr(obj, "box_for_kps", None)
                if box_for_kps is not None:
                    face = dataclasses.replace(face, bbox=box_for_kps(face.kps))
                seeds[id(frame)] = [FaceWork(0, 0, face) for _ in range(faces)]
            return run([ctx], [FaceWork(0, 0, w.face) for w in seeds[id(frame)]])

        return call

    return build


ROWS: dict[str, Row] = {
    "scrfd-2.5g (640x640 letterbox)": detector(
        lambda m, o: ScrfdDetector(OnnxModel(m / "scrfd_2.5g_kps.onnx", o))
    ),
    "scrfd-500m (640x640 letterbox)": detector(
        lambda m, o: ScrfdDetector(OnnxModel(m / "scrfd_500m_kps.onnx", o))
    ),
    "yunet-cv2 (frame as is)": detector(
        lambda m, o: YuNetDetector(m / "face_detection_yunet_2023mar.onnx")
    ),
    "yunet-cv2 (max side 400)": detector(
        lambda m, o: YuNetDetector(m / "face_detection_yunet_2023mar.onnx", max_sides=(400,))
    ),
    **{
        f"{name} ({n} face{'s' * (n > 1)})": face_part(part, n)
        for name, part in (
            ("pfld-68", lambda m, o: Pfld68Landmarker(OnnxModel(m / "landmarks_68_pfld.onnx", o))),
            (
                "slim-160 68-point",
                lambda m, o: Pfld68Landmarker(
                    OnnxModel(m / "slim_160_latest.onnx", o),
                    input_size=160,
                    box_rule=SLIM_BOX,
                    kps_box_rule=SLIM_KPS_BOX,
                ),
            ),
            ("mobilefacenet", lambda m, o: OnnxRecognizer(OnnxModel(m / "mobilefacenet.onnx", o))),
        )
        for n in (1, 4)
    },
}


def face_frame(testdata: Path) -> Frame:
    """640x480 with one face about 170 px wide."""
    image = load_image_bgr(testdata / "faces" / "obama_official_portrait_2012.jpg")
    h, w = image.shape[:2]
    crop = image[: w * 3 // 4]
    return np.ascontiguousarray(cv2.resize(crop, (640, 480), interpolation=cv2.INTER_AREA))


def median_ms(call: Call, frame: Frame, repeats: int) -> float:
    call(frame)  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call(frame)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--provider", default="cpu")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--only", default="", help="rows whose name contains this")
    args = parser.parse_args()
    testdata = find_testdata()
    if testdata is None:
        raise SystemExit("../shared/testdata not found (set LIVECAM_TESTDATA)")
    frame = face_frame(testdata)
    options = RuntimeOptions(provider=args.provider)
    print(f"640x480, one face, provider {args.provider}, median of {args.repeats}")
    print(f"{'part':<40} {'ms':>8}")
    for name, row in ROWS.items():
        if args.only in name:
            ms = median_ms(row(testdata / "models", options), frame, args.repeats)
            print(f"{name:<40} {ms:8.2f}")


if __name__ == "__main__":
    main()
