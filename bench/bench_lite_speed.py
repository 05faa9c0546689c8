"""The lite swap's CPU cost per frame, and whether two checkouts give the same output.

    python bench/bench_lite_speed.py [--against /path/to/checkout] [--rounds 3]
        [--per-face [--own-defaults] [--opencv-threads N] [--wall]]
        [--scenes synth1,synth4,d6web,s32own] [--frames 60] [--size 1280x720]

Each scene's frames go one packet at a time through a fresh ``build_swap_stage`` of the
lite preset (OpenCV on one thread): ``synth1``/``synth4`` the synthetic face motion clip of
``livecam bench`` at 1280x720 (1 or 4 faces, the bench's own source photo), ``d6web``
``liveportrait_d6.mp4`` placed at 12 % of a 1280x720 frame and ``s32own``
``liveportrait_s32.mp4`` at its own 1280x720 (both with the Obama portrait of the test
data); ``--size`` gives the synthetic scenes another frame size (1920x1080: what a 1080p
camera costs per frame outside the face). Per frame, the CPU time (``time.process_time``:
the machine is shared, wall time is noise) of the stage's ``prepare`` (detect, track,
landmarks: "track") and ``process`` (swap and paste: "swap"), and a SHA-256 of every
output frame.

With ``--against``, this checkout and that one run alternately ``--rounds`` times each (a
child process per run, ``PYTHONPATH`` set to the checkout), and the medians of the runs'
medians are printed with their ratio and whether the outputs were the same bit for bit.

``--per-face`` (with ``--against``): the classic swapper alone, both checkouts' in one
process. Each scene's frames go once through this checkout's stage, recording what its
swapper is given; then the two checkouts' ``ClassicSwapper.swap`` run those calls
alternately, ``--rounds`` times over, on the same prepared source. Printed: the median CPU
ms per face of each, their ratio, and whether every output and mask was the same bit for
bit. Both swappers get this checkout's settings, unless ``--own-defaults``: each its own
checkout's default settings and options (what a user of each gets; a changed default, a
part turned on by default, counts). ``--opencv-threads N`` gives OpenCV N threads (1 by
default) and ``--wall`` times wall clock instead of CPU (what N threads gain or lose).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
SCENES = ("synth1", "synth4", "d6web", "s32own")
SIZE = (1280, 720)


def testdata() -> Path:
    env = os.environ.get("LIVECAM_TESTDATA")
    roots = ([Path(env)] if env else []) + [p / "shared" / "testdata" for p in REPO.parents]
    for root in roots:
        if (root / "video").is_dir():
            return root
    raise SystemExit("no test data: set LIVECAM_TESTDATA")


def clip(name: str, count: int) -> Iterator[np.ndarray]:
    cap = cv2.VideoCapture(str(testdata() / "video" / name))
    try:
        for _ in range(count):
            ok, frame = cap.read()
            if not ok:
                return
            yield np.ascontiguousarray(frame, np.uint8)
    finally:
        cap.release()


def scene(
    name: str, count: int, tmp: Path, size: tuple[int, int] = SIZE
) -> tuple[list[np.ndarray], Path]:
    """The frames of a scene and its source photo (``size``: the synthetic scenes')."""
    from livecam.config.schema import SourceConfig
    from livecam.sources.synthetic.multi_face import portrait_grid
    from livecam.sources.synthetic.pattern import SyntheticSource
    from livecam.sources.synthetic.portraits import demo_portraits

    obama = testdata() / "faces" / "obama_official_portrait_2012.jpg"
    if name.startswith("synth"):
        faces = int(name[5:])
        with demo_portraits() as (face, target):
            motion = target
            if faces > 1:
                motion = tmp / f"faces{faces}.png"
                cv2.imwrite(str(motion), portrait_grid([target, face], faces, size))
            photo = tmp / f"source{face.suffix}"
            photo.write_bytes(face.read_bytes())
            cfg = SourceConfig(spec="synthetic", face_motion=str(motion), size=size, fps=60.0)
            source = SyntheticSource(cfg)
            source.open()
            try:
                return [source.render(i) for i in range(count)], photo
            finally:
                source.close()
    if name == "d6web":
        from livecam.benchmark.live_face import WebcamPlacement
        from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
        from livecam.face.landmarks.measures import largest_face
        from livecam.types import FrameContext

        raw = list(clip("liveportrait_d6.mp4", count))
        first = largest_face(YuNetDetector(bundled_yunet()).detect([FrameContext(raw[0])])[0])
        assert first is not None
        placement = WebcamPlacement.from_first(first.bbox)
        return [placement.place(f) for f in raw], obama
    if name == "s32own":
        return list(clip("liveportrait_s32.mp4", count)), obama
    raise SystemExit(f"unknown scene {name!r}: one of {', '.join(SCENES)}")


def run_scene(name: str, count: int, size: tuple[int, int] = SIZE) -> dict[str, Any]:
    from livecam.config.schema import SwapConfig
    from livecam.face.source.photo import SourceFaceCache
    from livecam.face.swap_stage import build_swap_stage
    from livecam.types import FramePacket

    with tempfile.TemporaryDirectory() as tmp:
        frames, photo = scene(name, count, Path(tmp), size)
        stage = build_swap_stage(
            SwapConfig.of(face=str(photo), preset="lite", select="all"), SourceFaceCache(None)
        )
    stage.warmup(*frames[0].shape[1::-1])
    track, swap, faults, faces = [], [], [], 0
    digest = hashlib.sha256()
    try:
        for seq, frame in enumerate(frames):
            packet = FramePacket(frame.copy(), seq=seq, t_capture_ns=seq * 16_666_667)
            t0 = time.process_time()
            stage.prepare([packet])
            t1 = time.process_time()
            f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            (out,) = stage.process([packet])
            t2 = time.process_time()
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f1)
            track.append((t1 - t0) * 1000)
            swap.append((t2 - t1) * 1000)
            faces += len(packet.faces)
            digest.update(np.ascontiguousarray(out.frame).tobytes())
    finally:
        stage.close()
    return {
        "track_ms": statistics.median(track),
        "swap_ms": statistics.median(swap),
        "faults": statistics.median(faults),
        "faces": faces / len(frames),
        "sha": digest.hexdigest()[:16],
    }


def _classic_of(checkout: Path) -> tuple[Any, Any]:
    """``ClassicSwapper`` of another checkout, imported beside this one's modules, and a
    swapper of it with that checkout's own defaults (settings and options)."""
    import importlib

    saved = {m: sys.modules.pop(m) for m in list(sys.modules) if m.split(".")[0] == "livecam"}
    sys.path.insert(0, str(checkout))
    try:
        module = importlib.import_module("livecam.face.swap.classic")
        cls = module.ClassicSwapper
        own = cls(
            importlib.import_module("livecam.config.swap").ClassicSettings(),
            module.ClassicOptions(),
        )
    finally:
        sys.path.remove(str(checkout))
        for m in [m for m in sys.modules if m.split(".")[0] == "livecam"]:
            del sys.modules[m]
        sys.modules.update(saved)
    return cls, own


def _recording(swap: Any, calls: list[tuple[Any, Any, Any]]) -> Any:
    """``swap`` that also records each call's frames, faces and sources."""

    def call(frames: Any, faces: Any, sources: Any) -> Any:
        calls.append((frames, list(faces), sources))
        return swap(frames, faces, sources)

    return call


def per_face(
    against: Path,
    scenes: list[str],
    count: int,
    rounds: int,
    size: tuple[int, int] = SIZE,
    own_defaults: bool = False,
    threads: int = 1,
    wall: bool = False,
) -> None:
    import livecam.face.swap.classic  # this checkout's, imported first
    from livecam.config.schema import SwapConfig
    from livecam.face.source.photo import SourceFaceCache
    from livecam.face.swap_stage import build_swap_stage
    from livecam.types import FaceWork, FramePacket

    cv2.setNumThreads(threads)
    clock = time.perf_counter if wall else time.process_time
    old_cls, old_own = _classic_of(against)
    new_cls = livecam.face.swap.classic.ClassicSwapper
    settings = "each with its own defaults" if own_defaults else "this checkout's settings"
    kind = "wall" if wall else "CPU"
    print(
        f"classic swapper per face, {kind} ms (median), OpenCV on {threads} thread(s): "
        f"{against} against {REPO} ({settings})"
    )
    for name in scenes:
        with tempfile.TemporaryDirectory() as tmp:
            frames, photo = scene(name, count, Path(tmp), size)
            stage = build_swap_stage(
                SwapConfig.of(face=str(photo), preset="lite", select="all"), SourceFaceCache(None)
            )
        swapper: Any = stage.parts.swapper
        calls: list[tuple[Any, Any, Any]] = []
        swapper.swap = _recording(swapper.swap, calls)
        for seq, frame in enumerate(frames):
            stage.process([FramePacket(frame.copy(), seq=seq, t_capture_ns=seq * 16_666_667)])
        stage.close()
        pair = [cls(swapper.config, swapper.options) for cls in (old_cls, new_cls)]
        if own_defaults:  # what a user of each checkout gets (a changed default counts)
            pair = [
                type(old_own)(old_own.config, old_own.options),
                new_cls(type(swapper.config)(), type(swapper.options)()),
            ]
        times: list[list[float]] = [[], []]
        same = True
        for _ in range(rounds):
            for ctx, works, sources in calls:
                outs = []
                for i, sw in enumerate(pair):
                    fresh = [
                        FaceWork(w.frame_index, w.seq, w.face, source_index=w.source_index)
                        for w in works
                    ]
                    t0 = clock()
                    done = sw.swap(ctx, fresh, sources)
                    times[i].append((clock() - t0) * 1000 / max(1, len(works)))
                    outs.append([(d.output, d.mask) for d in done])
                same &= all(
                    (a is None and b is None)
                    or (a is not None and b is not None and np.array_equal(a, b))
                    for x, y in zip(*outs, strict=True)
                    for a, b in zip(x, y, strict=True)
                )
        old_ms, new_ms = (statistics.median(t) for t in times)
        print(
            f"{name:8} old {old_ms:6.2f} new {new_ms:6.2f} ratio {new_ms / old_ms:.3f} "
            f"output {'bit for bit the same' if same else 'DIFFERS'}",
            flush=True,
        )


def child(scenes: list[str], count: int, size: tuple[int, int]) -> None:
    cv2.setNumThreads(1)
    out = {name: run_scene(name, count, size) for name in scenes}
    print(json.dumps(out))


def run_child(
    checkout: Path, scenes: list[str], count: int, size: tuple[int, int]
) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--frames", str(count)]
    cmd += ["--scenes", ",".join(scenes), "--size", f"{size[0]}x{size[1]}"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{checkout}: {done.stderr.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--against", type=Path, help="another checkout, run alternately")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scenes", default=",".join(SCENES))
    p.add_argument("--frames", type=int, default=60)
    p.add_argument("--size", default="1280x720", help="the synthetic scenes' frame, WxH")
    p.add_argument("--per-face", action="store_true", help="the classic swapper alone")
    p.add_argument(
        "--opencv-threads",
        type=int,
        default=1,
        metavar="N",
        help="with --per-face: OpenCV's threads (default 1)",
    )
    p.add_argument("--wall", action="store_true", help="with --per-face: wall time, not CPU")
    p.add_argument(
        "--own-defaults",
        action="store_true",
        help="with --per-face: each checkout's swapper with its own default settings",
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    scenes = [s for s in args.scenes.split(",") if s]
    try:
        w, h = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        sys.exit(f"--size {args.size!r}: give width x height, e.g. 1920x1080")
    size = (w, h)
    if args.per_face:
        if args.against is None:
            sys.exit("--per-face compares two checkouts: give --against")
        if args.opencv_threads < 1:
            sys.exit(f"--opencv-threads {args.opencv_threads}: give 1 or more")
        per_face(
            args.against.resolve(),
            scenes,
            args.frames,
            args.rounds,
            size,
            args.own_defaults,
            args.opencv_threads,
            args.wall,
        )
        return 0
    if args.child:
        child(scenes, args.frames, size)
        return 0
    checkouts = [REPO] if args.against is None else [args.against.resolve(), REPO]
    runs: dict[Path, list[dict[str, Any]]] = {c: [] for c in checkouts}
    for r in range(args.rounds):
        for c in checkouts:
            runs[c].append(run_child(c, scenes, args.frames, size))
            line = " ".join(
                f"{s} {runs[c][-1][s]['track_ms']:.2f}/{runs[c][-1][s]['swap_ms']:.2f}"
                for s in scenes
            )
            print(f"round {r + 1} {c}: track/swap ms {line}", flush=True)
    print(f"\nmedians over {args.rounds} runs of {args.frames} frames (CPU ms per frame)")
    print(f"{'scene':8} {'faces':>5} " + " ".join(f"{str(c)[-14:]:>24}" for c in checkouts))
    for s in scenes:
        cells, swaps = [], []
        for c in checkouts:
            tr = statistics.median(r[s]["track_ms"] for r in runs[c])
            sw = statistics.median(r[s]["swap_ms"] for r in runs[c])
            swaps.append(sw)
            cells.append(f"track {tr:6.2f} swap {sw:6.2f}")
        faces = runs[checkouts[0]][0][s]["faces"]
        line = f"{s:8} {faces:5.2f} " + " ".join(f"{x:>24}" for x in cells)
        if len(checkouts) == 2:
            same = {r[s]["sha"] for c in checkouts for r in runs[c]}
            line += f"  swap ratio {swaps[1] / swaps[0]:.3f}  output "
            line += "bit for bit the same" if len(same) == 1 else f"DIFFERS {sorted(same)}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
