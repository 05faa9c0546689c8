"""Live changes under load: how long the output goes without a frame while the source
face, the preset and the quality settings are switched on a running stream.

    python bench/bench_switch_gap.py [--switches 6] [--size 640x480] [--fps 30]

Offline preset on the synthetic face-motion clip (assets/astronaut.png), sent to the real
pyvirtualcam Camera through a recording backend. Every few seconds one change is applied
(face A -> face B, preset offline <-> auto, detect_size 400 <-> 480). Printed, per kind of
change: the longest gap between two sends to the virtual camera (target: at most two frame
intervals) and the longest gap between two *new* frames (how long the picture stood
still), with the time from the command to the change being visible.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from recording_backend import register_recording_backend  # noqa: E402

from livecam.app import App  # noqa: E402
from livecam.config.schema import Config  # noqa: E402

ASSETS = REPO / "assets"


def gaps_ms(times_ns: list[int]) -> float:
    return float(np.diff(np.asarray(times_ns, np.int64)).max() / 1e6) if len(times_ns) > 1 else 0.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--switches", type=int, default=6, help="changes of each kind")
    p.add_argument("--size", default="640x480")
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--settle", type=float, default=1.5, help="seconds between changes")
    args = p.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    store = register_recording_backend()
    cfg = Config.from_dict(
        {
            "source": {
                "spec": "synthetic",
                "face_motion": str(ASSETS / "astronaut.png"),
                "size": [width, height],
                "fps": args.fps,
            },
            "output": {"sinks": ["virtualcam"], "virtualcam_backend": store.name},
            "pipeline": {"stages": ["swap"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg")},
        }
    )
    app = App(cfg)
    app.start()
    faces = [ASSETS / "astronaut.png", ASSETS / "grace_hopper.jpg"]
    kinds = {
        "face": lambda i: app.controls.set_face(faces[i % 2]),
        "preset": lambda i: app.controls.set_preset("auto" if i % 2 == 0 else "offline"),
        "quality": lambda i: app.controls.update_swap(detect_size=480 if i % 2 == 0 else 400),
    }
    results: dict[str, list[tuple[float, float, float]]] = {k: [] for k in kinds}
    time.sleep(args.settle)
    try:
        for i in range(args.switches):
            for kind, command in kinds.items():
                start = len(store.frames)
                t0 = time.perf_counter_ns()
                command(i).wait(60)
                applied_ms = (time.perf_counter_ns() - t0) / 1e6
                time.sleep(args.settle)
                window = store.frames[max(start - 1, 0) :]
                sends = [f.t_ns for f in window]
                new = [
                    f.t_ns
                    for j, f in enumerate(window)
                    if j == 0 or not np.array_equal(f.frame, window[j - 1].frame)
                ]
                results[kind].append((gaps_ms(sends), gaps_ms(new), applied_ms))
    finally:
        app.stop()
    period = 1000.0 / args.fps
    print(
        f"{args.switches} switches of each kind, {width}x{height} at {args.fps:g} fps "
        f"(frame interval {period:.1f} ms), offline preset, 2 cores"
    )
    for kind, rows in results.items():
        send_gap = max(r[0] for r in rows)
        new_gap = max(r[1] for r in rows)
        applied = statistics.median(r[2] for r in rows)
        print(
            f"  {kind:8s}: max gap between sends {send_gap:6.1f} ms "
            f"({send_gap / period:.2f} intervals), max gap between new frames {new_gap:6.1f} ms, "
            f"command to applied median {applied:6.0f} ms"
        )
    snap = app.snapshot()
    print(
        f"  whole run: {snap.frames_out} frames out, {snap.dropped} dropped, "
        f"fps out {snap.fps_out:.1f}"
    )


if __name__ == "__main__":
    main()
