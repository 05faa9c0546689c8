"""RSS of a long live session with a change every 30 s (issue 26: RSS crept 6-7 MB a
minute in the panel, +62 MB in 9 minutes).

A real-time stream of a looping talking-head clip (testdata) through the lite swap into
the null sink and a recording, as the panel runs it; every ``--every`` seconds one live
change, in turn: another source face, Blank on/off, Freeze on/off, a quality setting, the
selection. Prints the process's RSS at each change, then the RSS after the warm-up (the
first ``--warmup`` minutes), at the end, the ratio end / after warm-up (goal: within
1.02) and the least-squares slope in MB per minute over the measured part.

    nice -n 19 .venv/bin/python bench/bench_session_rss.py [--minutes 20] [--every 30]
        [--size 1280x720] [--clip liveportrait_s18.mp4] [--warmup 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import find_testdata  # noqa: E402

from livecam.app import App  # noqa: E402
from livecam.config.schema import Config  # noqa: E402
from livecam.control.controls import Change, Controls  # noqa: E402


def rss_mb() -> float:
    """This process's resident set size in MB (Linux ``/proc``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


def face_change(face: Path) -> Callable[[Controls], Change]:
    return lambda c: c.set_face(face)


def changes(faces: list[Path]) -> list[Callable[[Controls], Change]]:
    """The live changes made in turn, one every ``--every`` seconds."""
    out: list[Callable[[Controls], Change]] = []
    for face in faces:
        out += [
            face_change(face),
            lambda c: c.set_blank(True),
            lambda c: c.set_blank(False),
            lambda c: c.set_freeze(True),
            lambda c: c.set_freeze(False),
            lambda c: c.update_swap(blend="seamless"),
            lambda c: c.update_swap(blend="feather"),
            lambda c: c.set_selection("all"),
            lambda c: c.set_selection("one"),
        ]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between changes")
    parser.add_argument("--warmup", type=float, default=2.0, help="minutes left out of the goal")
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--clip", default="liveportrait_s18.mp4")
    args = parser.parse_args()
    testdata = find_testdata()
    if testdata is None:
        print("the test data (../shared/testdata) is needed")
        return 2
    w, h = (int(v) for v in args.size.split("x"))
    faces = [
        REPO / "assets" / "astronaut.png",
        testdata / "faces" / "obama_official_portrait_2012.jpg",
        REPO / "assets" / "grace_hopper.jpg",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Config.from_dict(
            {
                "source": {
                    "spec": str(testdata / "video" / args.clip),
                    "loop": True,
                    "size": [w, h],
                },
                "output": {"sinks": ["null", str(Path(tmp) / "session.mkv")]},
                "pipeline": {"stages": ["swap"]},
                "swap": {"face": str(faces[-1]), "preset": "lite"},
            }
        )
        app = App(cfg)
        app.start()
        start = time.monotonic()
        todo = changes(faces)
        samples: list[tuple[float, float]] = []
        try:
            step = 0
            while (now := time.monotonic() - start) < args.minutes * 60:
                app.controls  # noqa: B018 (raises when the stream ended)
                change = todo[step % len(todo)](app.controls)
                change.wait(60)
                samples.append((now / 60, rss_mb()))
                print(
                    f"{now / 60:6.2f} min  rss {samples[-1][1]:7.1f} MB  {change.command}",
                    flush=True,
                )
                step += 1
                time.sleep(max(0.0, start + step * args.every - time.monotonic()))
        finally:
            app.stop()
            out = app.snapshot()
    kept = [(t, r) for t, r in samples if t >= args.warmup]
    if len(kept) < 2:
        print("too short to tell")
        return 1
    t, r = np.array(kept).T
    slope = float(np.polyfit(t, r, 1)[0])
    cycle = len(todo)  # the same change a cycle later: the models and faces are all loaded
    later = [samples[i + cycle][1] - samples[i][1] for i in range(len(samples) - cycle)]
    if later:
        minutes = cycle * args.every / 60
        print(
            f"the same change {minutes:g} min later (a whole cycle of {cycle} changes): "
            f"RSS {float(np.median(later)):+.1f} MB median over {len(later)} changes "
            f"({float(np.median(later)) / minutes:+.2f} MB/min)"
        )
    print(
        f"frames out {out.frames_out}, changes {len(samples)}; rss after {args.warmup:g} min "
        f"{r[0]:.1f} MB, at the end {r[-1]:.1f} MB, ratio {r[-1] / r[0]:.3f} (goal <= 1.02), "
        f"median {float(np.median(r)):.1f} MB, slope {slope:+.2f} MB/min; pid {os.getpid()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
