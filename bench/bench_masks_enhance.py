"""Paste-back, maskers and the face enhancer at 640x480 on real faces (CPU).

    python bench/bench_masks_enhance.py [--repeat 30]

Prints the median ms per call of: AffineBlender (mask / insightface edge) with 1 and 4
faces, each masker on one face's 128 crop (the region masker with a tiny synthetic
parser: its pre- and post-processing, not BiSeNet's own cost), and FaceEnhancer with a
synthetic 512 identity model (1 and 4 faces, one batched call; the real GFPGAN costs
far more per face). Faces: the test portraits, YuNet keypoints, slim-160 68 landmarks.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from functools import partial
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from face_helpers import lite_analyzer  # noqa: E402
from face_parts_data import colour_parser, identity_enhancer, yunet_faces  # noqa: E402
from timing import median_ms  # noqa: E402

from livecam.face.crops import align  # noqa: E402
from livecam.face.enhance import FaceEnhancer  # noqa: E402
from livecam.face.masks import BoxMasker, EllipseMasker, MouthMasker, RegionMasker  # noqa: E402
from livecam.face.parts import Masker  # noqa: E402
from livecam.face.paste.blenders import AffineBlender  # noqa: E402
from livecam.runtime.onnx_model import OnnxModel, RuntimeOptions  # noqa: E402
from livecam.types import Face, FaceWork, Frame, FrameContext  # noqa: E402

PORTRAITS = (
    "obama_official_portrait_2012.jpg",
    "biden_official_portrait.jpg",
    "astronaut_eileen_collins.png",
    "grace_hopper_navy_portrait.jpg",
)


def testdata() -> Path:
    env = os.environ.get("LIVECAM_TESTDATA")
    roots = ([Path(env)] if env else []) + [p / "shared" / "testdata" for p in REPO.parents]
    for root in roots:
        if (root / "faces").is_dir():
            return root
    raise SystemExit("test data not found: set LIVECAM_TESTDATA")


def letterbox(image: Frame, w: int, h: int) -> Frame:
    s = min(w / image.shape[1], h / image.shape[0])
    small = cv2.resize(image, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
    out = np.zeros((h, w, 3), np.uint8)
    y, x = (h - small.shape[0]) // 2, (w - small.shape[1]) // 2
    out[y : y + small.shape[0], x : x + small.shape[1]] = small
    return out


def imread(path: Path) -> Frame:
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise SystemExit(f"cannot read {path}")
    return np.asarray(image, np.uint8)


def frames(root: Path) -> tuple[Frame, Frame]:
    """One face at 640x480, and four portraits in a 2x2 grid at 640x480."""
    images = [imread(root / "faces" / n) for n in PORTRAITS]
    one = letterbox(images[0], 640, 480)
    tiles = [letterbox(i, 320, 240) for i in images]
    four = np.ascontiguousarray(np.vstack([np.hstack(tiles[:2]), np.hstack(tiles[2:])]))
    return one, four


def records(image: Frame, faces: list[Face]) -> list[FaceWork]:
    out = []
    for face in faces:
        affine = align.align_affine(face.kps, "arcface_128", 128)
        crop = align.warp_crop(image, affine, 128)
        out.append(FaceWork(0, 0, face, affine=affine, crop=crop, output=255 - crop))
    return BoxMasker().mask([], out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    one, four = frames(testdata())
    faces1, faces4 = yunet_faces(one)[:1], yunet_faces(four)
    print(f"640x480, faces found: {len(faces1)} and {len(faces4)}; median of {args.repeat}")
    cpu = RuntimeOptions(provider="cpu")
    for edge in ("mask", "insightface"):
        blender = AffineBlender(edge=edge)
        for image, faces in ((one, faces1), (four, faces4)):
            works = records(image, faces)
            t = median_ms(partial(blender.blend, [FrameContext(image)], works), args.repeat)
            print(f"AffineBlender({edge!r}) {len(faces)} face(s): {t:.2f} ms")
    landmarked = lite_analyzer(640, with_encoder=False).analyze(one)[0]
    with tempfile.TemporaryDirectory() as tmp:
        maskers: list[tuple[str, Masker]] = [
            ("BoxMasker()", BoxMasker()),
            ("EllipseMasker()", EllipseMasker()),
            ("MouthMasker(100)", MouthMasker(100)),
            (
                "RegionMasker(synthetic 512 parser)",
                RegionMasker(OnnxModel(colour_parser(Path(tmp) / "p.onnx"), cpu)),
            ),
        ]
        work = records(one, [landmarked])[0]
        work.mask = None
        for name, masker in maskers:
            t = median_ms(partial(masker.mask, [FrameContext(one)], [work]), args.repeat)
            print(f"{name} 1 face, 128 crop: {t:.2f} ms")
        model = OnnxModel(identity_enhancer(Path(tmp) / "id512.onnx"), cpu)
        enhancer = FaceEnhancer(model)
        blender = AffineBlender()
        for image, faces in ((one, faces1), (four, faces4)):
            frame = [FrameContext(image)]
            works = [FaceWork(0, 0, f) for f in faces]
            t = median_ms(partial(enhancer.enhance, frame, works), args.repeat)
            done = enhancer.enhance(frame, works)
            t2 = median_ms(partial(blender.blend, frame, done), args.repeat)
            print(
                f"FaceEnhancer(identity 512) {len(faces)} face(s): enhance {t:.2f} ms, "
                f"paste {t2:.2f} ms"
            )


if __name__ == "__main__":
    main()
