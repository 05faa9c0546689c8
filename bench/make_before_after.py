"""Write docs/images/before_after_*.jpg: source | target | output of the offline preset's
face parts (classic swapper + ROI blender) for several pairs of <testdata>/faces, each
panel a crop around the face (README images).

Usage: python bench/make_before_after.py [--testdata PATH] [--out docs/images] [--size 320]

``--clips``: instead, the lite swap stage (tracking from the clip's first frame, as live)
on the talking-head cases of ``CLIP_CASES`` (the d6 clip with the astronaut, Grace Hopper
(her cap) and Obama, a portrait with glasses, a head turn, the d13 clip's performer in thin
metal glasses (kept by default), Grace Hopper's portrait and its glasses on d6 with
``--drop-photo-glasses``, a crisp photo a little sharper than the d6 clip): camera |
output, 2x crops around the face, one ``clip_*.jpg`` each. ``--cases NAME,...``: only
these of them. ``--before CHECKOUT``: the output of that checkout too (run in a subprocess
with its ``livecam``): camera | before | after, as ``before_after_clip_*.jpg``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
if "PYTHONPATH" not in os.environ:  # another checkout's livecam when it is given
    sys.path.insert(0, str(REPO))

from livecam.config.schema import SwapConfig  # noqa: E402
from livecam.errors import LivecamError  # noqa: E402
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


# (name, clip or still of faces/, frame index, framing "own" or "webcam", source photo)
CLIP_CASES = [
    ("d6_astronaut", "video/liveportrait_d6.mp4", 60, "own", "astronaut_eileen_collins.png"),
    ("d6_hopper", "video/liveportrait_d6.mp4", 40, "own", "grace_hopper_navy_portrait.jpg"),
    (
        "d6_obama_webcam",
        "video/liveportrait_d6.mp4",
        60,
        "webcam",
        "obama_official_portrait_2012.jpg",
    ),
    (
        "glasses",
        "faces/grace_hopper_navy_portrait.jpg",
        0,
        "webcam",
        "obama_official_portrait_2012.jpg",
    ),
    ("head_turn", "video/liveportrait_s32.mp4", 40, "own", "obama_official_portrait_2012.jpg"),
    ("d13_glasses", "video/liveportrait_d13.mp4", 30, "own", "obama_official_portrait_2012.jpg"),
    ("photo_glasses", "video/liveportrait_d6.mp4", 60, "own", "grace_hopper_navy_portrait.jpg"),
    ("d6_biden_standing", "video/liveportrait_d6.mp4", 30, "own", "biden_standing_2010.jpg"),
]
# settings a case's output is made with (by name, ``SwapConfig.of``; a checkout without
# them makes its panel with the defaults), and how its panel says so
CASE_SETTINGS: dict[str, tuple[dict[str, object], str]] = {
    "photo_glasses": ({"drop_photo_glasses": True}, "--drop-photo-glasses"),
}


def clip_frames(path: Path, last: int) -> list[np.ndarray]:
    """Frames 0..``last`` of a clip (or the still, ``last + 1`` times: a camera that holds)."""
    if path.suffix.lower() in (".jpg", ".png"):
        image = np.ascontiguousarray(cv2.imread(str(path), cv2.IMREAD_COLOR), np.uint8)
        return [image] * (last + 1)
    import av

    frames = []
    with av.open(str(path)) as container:
        for i, frame in enumerate(container.decode(video=0)):
            frames.append(np.asarray(frame.to_ndarray(format="bgr24"), np.uint8))
            if i >= last:
                break
    return frames


def render_clip_case(
    testdata: Path, case: tuple[str, str, int, str, str], size: int
) -> list[np.ndarray]:
    """(camera crop, output crop) of one case: the lite stage over its frames, square crops
    of ``size`` around the face."""
    from livecam.benchmark.live_face import WebcamPlacement
    from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
    from livecam.face.landmarks.measures import largest_face
    from livecam.face.source.photo import SourceFaceCache
    from livecam.face.swap_stage import build_swap_stage
    from livecam.types import FramePacket

    name, clip, index, framing, source = case
    frames = clip_frames(testdata / clip, index)
    detector = YuNetDetector(bundled_yunet())
    first = largest_face(detector.detect([FrameContext(frames[0])])[0])
    assert first is not None, clip
    placement = WebcamPlacement.from_first(first.bbox) if framing == "webcam" else None
    cfg = SwapConfig(face=str(testdata / "faces" / source), preset="lite")
    settings = CASE_SETTINGS.get(name, ({}, ""))[0]
    with contextlib.suppress(LivecamError):  # a checkout from before the setting: defaults
        cfg = cfg.changed(**settings)
    stage = build_swap_stage(cfg, SourceFaceCache(None))
    try:
        for seq, frame in enumerate(frames):
            camera = placement.place(frame) if placement is not None else frame
            # a still repeats: shift it a pixel every other frame, as a camera's noise would
            camera = np.ascontiguousarray(np.roll(camera, seq % 2, axis=1))
            packet = FramePacket(camera.copy(), seq=seq, t_capture_ns=seq * 33_333_333)
            (out,) = stage.process([packet])
    finally:
        stage.close()
    face = largest_face(detector.detect([FrameContext(camera)])[0])
    assert face is not None, clip
    # 1.5 face sizes across: a 12 % webcam face is drawn at about 2x
    return [crop_face(img, face, size, 1.5) for img in (camera, out.frame)]


def clip_mode(args: argparse.Namespace) -> int:
    cases = [c for c in CLIP_CASES if args.cases is None or c[0] in args.cases.split(",")]
    before: dict[str, np.ndarray] = {}
    if args.before is not None:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "PYTHONPATH": str(args.before.resolve())}
            cmd = [sys.executable, __file__, "--clips", "--panels", tmp]
            cmd += ["--testdata", str(args.testdata), "--size", str(args.size)]
            if args.cases is not None:
                cmd += ["--cases", args.cases]
            subprocess.run(cmd, env=env, check=True)
            for name, *_ in cases:
                before[name] = np.asarray(cv2.imread(str(Path(tmp) / f"{name}.png")), np.uint8)
    for case in cases:
        name = case[0]
        camera, output = render_clip_case(args.testdata, case, args.size)
        if args.panels is not None:  # the output panel alone (for another checkout's run)
            cv2.imwrite(str(args.panels / f"{name}.png"), output)
            continue
        panels = [label(camera, "camera")]
        if name in before:
            panels.append(label(before[name], "before"))
        what = CASE_SETTINGS.get(name, ({}, "lite swap"))[1]
        panels.append(label(output, f"after ({what})" if before else what))
        prefix = "before_after_clip" if before else "clip"
        path = args.out / f"{prefix}_{name}.{args.format}"
        params = [cv2.IMWRITE_JPEG_QUALITY, 90] if args.format == "jpg" else []
        cv2.imwrite(str(path), np.hstack(panels), params)
        print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--testdata", type=Path, default=REPO.parent / "shared" / "testdata")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    ap.add_argument("--size", type=int, default=320, help="panel size in pixels")
    ap.add_argument("--format", default="jpg", choices=["jpg", "png"])
    ap.add_argument("--clips", action="store_true", help="the talking-head cases")
    ap.add_argument("--before", type=Path, default=None, help="--clips: a checkout to compare")
    ap.add_argument("--cases", default=None, help="--clips: only these cases (comma-separated)")
    ap.add_argument("--panels", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.clips:
        args.out.mkdir(parents=True, exist_ok=True)
        return clip_mode(args)

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
