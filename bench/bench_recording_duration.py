"""Recording duration: does a real-time stream of N seconds record as N seconds?

    python bench/bench_recording_duration.py [--seconds 10] [--fps 30] [--size 320x240]

A synthetic source at ``--fps`` (paced by the clock, lossless buffer) runs ``--seconds``
worth of frames into an H.264 recording through the app. Prints the file's duration (read
back with PyAV), the capture span (first to one period after the last frame, from the
telemetry's capture times), the wall time of the run, and the duration's error against the
nominal length and against the capture span. (The test suite checks that each frame sits
at its capture time; how close that comes to the clock depends on the machine, so it is
measured here: before the move to bench/ the tests asked for 10 s within 3 %.)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import av

from livecam.app import App
from livecam.config.schema import Config
from livecam.telemetry.hub import Telemetry
from livecam.telemetry.snapshot import FrameReport


def file_duration_s(path: Path) -> float:
    with av.open(str(path)) as container:
        if container.duration is None:
            raise SystemExit(f"{path}: no duration in the container")
        return float(container.duration) / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--size", default="320x240")
    args = p.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    frames = round(args.seconds * args.fps)
    capture_ns: list[int] = []

    def on_frame(report: FrameReport) -> None:
        capture_ns.append(report.t_capture_ns)

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.mp4"
        cfg = Config.from_dict(
            {
                "source": {"spec": "synthetic", "size": [w, h], "fps": args.fps},
                "buffer": {"lossless": True},
                "output": {"sinks": [str(out)]},
                "run": {"frames": frames},
            }
        )
        telemetry = Telemetry()
        telemetry.subscribe(on_frame=on_frame)
        app = App(cfg, telemetry=telemetry)
        t0 = time.perf_counter()
        app.start()
        if not app.wait(args.seconds * 6 + 30):
            raise SystemExit("the stream did not end")
        wall = time.perf_counter() - t0
        left = app.stop()
        if left:
            raise SystemExit(f"threads left running: {left}")
        duration = file_duration_s(out)
    span = (capture_ns[-1] - capture_ns[0]) / 1e9 + 1 / args.fps
    print(
        f"{frames} frames at {args.fps:g} fps ({w}x{h}): file {duration:.3f} s, "
        f"capture span {span:.3f} s, run {wall:.2f} s wall; "
        f"error {100 * (duration / args.seconds - 1):+.2f} % against {args.seconds:g} s, "
        f"{100 * (duration / span - 1):+.2f} % against the capture span"
    )


if __name__ == "__main__":
    main()
