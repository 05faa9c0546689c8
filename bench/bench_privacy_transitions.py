"""The audit's Blank/Freeze agreement check on a recording (issue 26): a real-time stream
of a looping talking-head clip (testdata) through the lite swap into an .mp4 recording;
Blank and Freeze in turn, each switched on for ``--pause`` seconds (varied 0.5-2x) and off
for ``--live`` seconds, ``--transitions`` times off; then every recorded frame is looked
at where the face is (``tests/camera_faces.py``): black, the swap, or the camera's own face.

Prints the transitions, the recorded frames of each kind, the camera faces (leaked
frames; the goal is 0) and the nearest a swapped face came to a camera face (the check's
margin: a camera face through the .mp4 codec lies within about 3).

    nice -n 19 .venv/bin/python bench/bench_privacy_transitions.py [--transitions 100]
        [--pause 1.0] [--live 0.6] [--clip liveportrait_d6.mp4] [--size 320x240]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from camera_faces import CAMERA_DISTANCE, CameraFaces, read_pass  # noqa: E402
from conftest import find_testdata  # noqa: E402

from livecam.app import App  # noqa: E402
from livecam.config.schema import Config, SourceConfig  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transitions", type=int, default=100)
    parser.add_argument("--pause", type=float, default=1.0, help="seconds on (mean)")
    parser.add_argument("--live", type=float, default=0.6, help="seconds off")
    parser.add_argument("--clip", default="liveportrait_d6.mp4")
    parser.add_argument("--size", default="320x240")
    args = parser.parse_args()
    testdata = find_testdata()
    if testdata is None:
        print("the test data (../shared/testdata) is needed")
        return 2
    w, h = (int(v) for v in args.size.split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        recording = Path(tmp) / "privacy.mp4"
        cfg = Config.from_dict(
            {
                "source": {
                    "spec": str(testdata / "video" / args.clip),
                    "loop": True,
                    "size": [w, h],
                },
                "output": {"sinks": ["null", str(recording)]},
                "pipeline": {"stages": ["swap"]},
                "swap": {"face": str(REPO / "assets" / "grace_hopper.jpg"), "preset": "lite"},
            }
        )
        faces = CameraFaces.of_clip(read_pass(cfg.source))
        app = App(cfg)
        app.start()
        t0 = time.monotonic()
        try:
            time.sleep(args.live)
            for i in range(args.transitions):
                controls = app.controls
                switch = controls.set_blank if i % 2 == 0 else controls.set_freeze
                switch(True).wait(30)
                time.sleep(args.pause * (0.5 + (i * 7 % 10) / 6.6))  # 0.5-1.9x, varied
                switch(False).wait(30)
                time.sleep(args.live)
        finally:
            app.stop()
        seconds = time.monotonic() - t0
        frames = read_pass(SourceConfig(spec=str(recording)))
    kinds = faces.kinds(frames)
    counts = Counter(kinds)
    swapped = [f for f, k in zip(frames, kinds, strict=True) if k == "swapped"]
    nearest = float(faces.distances(swapped).min()) if swapped else float("nan")
    print(
        f"{args.transitions} transitions (Blank and Freeze in turn) in {seconds:.0f} s, "
        f"{len(frames)} recorded frames: {counts['swapped']} swapped, {counts['black']} "
        f"black, {counts['camera']} camera faces (leaked; goal 0); nearest swapped face "
        f"{nearest:.1f} from a camera face (a camera face <= {CAMERA_DISTANCE:g})"
    )
    return 0 if counts["camera"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
